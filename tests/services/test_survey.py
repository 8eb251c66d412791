"""The expert survey: personal links, one vote per expert per question, vote shares, alpha, concurrency."""

from __future__ import annotations

import threading

import pytest

from db.engine import get_session
from services.dhp import survey as sv
from tests.support.survey import cast, new_survey


def test_a_survey_asks_one_question_per_quality_issue(engine):
    sid, _ = new_survey(engine)
    with get_session(engine) as s:
        got = sv.get_survey(sid, session=s)
    assert [q["key"] for q in got.questions] == [
        "char_deletion",
        "typo",
        "fictional_entities",
        "grammar",
        "reorder",
        "rewrite_insert",
    ]
    assert [m["name"] for m in got.metrics] == ["Coherence", "Consistency", "Fluency", "Relevance"]
    assert all(q["issue"] for q in got.questions) and got.status == "open"


def test_personal_links_are_unguessable_and_revocable(engine):
    sid, (a, b) = new_survey(engine, experts=2)
    with get_session(engine) as s:
        ta, tb = sv.expert_token(a, session=s), sv.expert_token(b, session=s)
        assert ta != tb and len(ta) >= 32
        assert sv.by_token(ta, session=s).expert.name == "expert 0"
        assert sv.by_token("guess", session=s).expert is None
        with pytest.raises(sv.SurveyError, match="invited already"):
            sv.invite(sid, "expert 0", session=s)
    with get_session(engine) as s:
        sv.revoke(a, session=s)
    with get_session(engine) as s:
        assert sv.by_token(ta, session=s).expert is None  # the old link opens nothing
    with pytest.raises(sv.SurveyError, match="revoked"):
        cast(engine, a, "typo", "Fluency")
    with get_session(engine) as s:
        new = sv.restore(a, session=s)
    with get_session(engine) as s:
        assert new != ta and sv.by_token(new, session=s).expert.id == a


def test_one_vote_per_expert_per_question_changeable_until_closed(engine):
    sid, (a,) = new_survey(engine, experts=1)
    cast(engine, a, "typo", "Coherence")
    cast(engine, a, "typo", "Fluency")  # a change of mind replaces the vote
    with get_session(engine) as s:
        votes = sv.votes_frame(sid, session=s)
        assert len(votes) == 1 and votes.iloc[0]["metric"] == "Fluency"
        sv.close(sid, session=s)
    with pytest.raises(sv.SurveyError, match="closed"):
        cast(engine, a, "typo", "Relevance")
    with get_session(engine) as s:
        assert sv.my_votes(a, session=s) == {"typo": "Fluency"}  # the refused change left nothing behind


def test_bad_questions_and_metrics_are_refused_and_leave_nothing(engine):
    sid, (a,) = new_survey(engine, experts=1)
    with pytest.raises(sv.SurveyError, match="no question"):
        cast(engine, a, "nope", "Fluency")
    with pytest.raises(sv.SurveyError, match="not one of"):
        cast(engine, a, "typo", "Accuracy")
    with get_session(engine) as s:
        assert sv.votes_frame(sid, session=s).empty


def test_weights_are_vote_shares(engine):
    # The paper's example: votes 4, 1, 5 for coherence, consistency, fluency give 0.4, 0.1, 0.5.
    sid, ids = new_survey(engine, task="story", experts=10)
    for i, e in enumerate(ids):
        cast(engine, e, "grammar", "Coherence" if i < 4 else "Consistency" if i < 5 else "Fluency")
    with get_session(engine) as s:
        w = sv.weights(sid, session=s)
    assert w.counts["grammar"] == {"Coherence": 4, "Consistency": 1, "Fluency": 5}
    assert w.weights["grammar"] == pytest.approx({"Coherence": 0.4, "Consistency": 0.1, "Fluency": 0.5})
    assert "typo" not in w.weights and w.n_experts_voted == 10


def test_agreement_is_krippendorff_alpha_nominal(engine):
    from services.stats import alpha_from_long

    sid, (a, b, c) = new_survey(engine, experts=3)
    answers = {
        a: {"char_deletion": "Fluency", "typo": "Fluency", "reorder": "Coherence", "grammar": "Fluency"},
        b: {"char_deletion": "Fluency", "typo": "Fluency", "reorder": "Coherence", "grammar": "Coherence"},
        c: {
            "char_deletion": "Fluency",
            "typo": "Relevance",
            "reorder": "Coherence",
            "fictional_entities": "Consistency",
        },
    }
    for e, qs in answers.items():
        for q, m in qs.items():
            cast(engine, e, q, m)
    with get_session(engine) as s:
        got = sv.agreement(sid, session=s, n_boot=0)
        closed = sv.closed_weights("summarization", session=s)
    import pandas as pd

    rows = pd.DataFrame(
        [(q, e, m) for e, qs in answers.items() for q, m in qs.items()], columns=["unit", "rater", "value"]
    )
    assert got.alpha == pytest.approx(alpha_from_long(rows, "nominal", n_boot=0).alpha)
    assert got.level == "nominal" and got.n_raters == 3 and closed is None  # still open: nothing feeds D_EW
    with get_session(engine) as s:
        sv.close(sid, session=s)
    with get_session(engine) as s:
        found, w = sv.closed_weights("summarization", session=s)
    assert found.id == sid and w.weights["typo"] == pytest.approx(
        {
            "Coherence": 0,
            "Consistency": 0,
            "Fluency": 2 / 3,
            "Relevance": 1 / 3,
        }
    )


def test_experts_voting_at_the_same_moment_lose_nothing(file_engine):
    """Threads on a SQLite file: every expert's every vote is stored, and changes land on the same row."""
    sid, ids = new_survey(file_engine, experts=8)
    with get_session(file_engine) as s:
        questions = [q["key"] for q in sv.get_survey(sid, session=s).questions]
    start = threading.Barrier(len(ids))
    errors: list[BaseException] = []

    def expert(e: int) -> None:
        try:
            start.wait()
            for q in questions:
                cast(file_engine, e, q, "Coherence")
            for q in questions:  # and each changes their mind once, at the same time as the others
                cast(file_engine, e, q, "Fluency" if e % 2 else "Relevance")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=expert, args=(e,)) for e in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with get_session(file_engine) as s:
        votes = sv.votes_frame(sid, session=s)
        w = sv.weights(sid, session=s)
    assert len(votes) == len(ids) * len(questions)
    assert all(w.counts[q] == {"Coherence": 0, "Consistency": 0, "Fluency": 4, "Relevance": 4} for q in questions)
