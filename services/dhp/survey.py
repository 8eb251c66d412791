"""The expert-weight survey of DHP (Figure 5): which metric does each quality issue impact most?

A survey belongs to a task and holds a snapshot of its definition, its metrics and one question per quality
issue (one per perturbation kind; minor and major share the issue). Experts are invited by a personal link
with an unguessable token, which the organiser can revoke: a revoked expert's votes stay on record but stop
counting in the weights and the agreement (restoring the link counts them again). Each expert has one vote
per question, stored as an upsert on (expert, question), so a changed answer replaces the old one and two
experts voting at the same moment both keep theirs. The weights of a question are the vote shares (votes 4,
1, 5 give 0.4, 0.1, 0.5); agreement among experts is Krippendorff's alpha (nominal). A closed survey takes
no more votes and its weights feed D_EW.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from db import surveys as db
from db.engine import get_session
from db.models import Survey, SurveyExpertPublic, SurveyPublic, utcnow
from services.dhp.catalogue import KINDS, TaskSpec
from services.errors import SurveyError
from services.stats import AlphaResult, alpha_from_long

log = logging.getLogger(__name__)

MAX_NAME = 100


def create_survey(task: TaskSpec, *, title: str, session: Session) -> int:
    """A survey of the task's quality issues over its metrics (a snapshot: later task edits do not change it)."""
    if len(task.metrics) < 1:
        raise SurveyError("The task has no metrics to vote for.")
    row = Survey(
        title=title.strip() or f"{task.name}: which metric does each quality issue impact most?",
        task=task.key,
        task_definition=task.definition,
        metrics=[{"name": m.name, "definition": m.definition} for m in task.metrics],
        questions=[{"key": k, "name": KINDS[k].name, "issue": KINDS[k].issue} for k in task.kinds()],
    )
    return db.add_survey(session=session, row=row)


def get_survey(survey_id: int, *, session: Session) -> SurveyPublic | None:
    return db.get_survey(session=session, survey_id=survey_id)


def list_surveys(*, session: Session, task: str | None = None) -> list[SurveyPublic]:
    return db.list_surveys(session=session, task=task)


def invite(survey_id: int, name: str, *, session: Session) -> SurveyExpertPublic:
    """Invite an expert by name; their personal token is read with `expert_token`."""
    name = " ".join((name or "").split())
    if not name:
        raise SurveyError("Give the expert a name.")
    if len(name) > MAX_NAME:
        raise SurveyError(f"The name is longer than {MAX_NAME} characters.")
    sv = db.get_survey(session=session, survey_id=survey_id)
    if sv is None:
        raise SurveyError(f"Survey {survey_id} does not exist.")
    if sv.status != "open":
        raise SurveyError("The survey is closed; reopen it to invite more experts.")
    if db.expert_named(session=session, survey_id=survey_id, name=name):
        raise SurveyError(f"'{name}' is invited already.")
    try:
        return db.add_expert(session=session, survey_id=survey_id, name=name)
    except IntegrityError:
        raise SurveyError(f"'{name}' is invited already.") from None


def experts(survey_id: int, *, session: Session) -> list[SurveyExpertPublic]:
    return db.experts(session=session, survey_id=survey_id)


def expert_token(expert_id: int, *, session: Session) -> str | None:
    return db.expert_token(session=session, expert_id=expert_id)


def revoke(expert_id: int, *, session: Session) -> str | None:
    """Revoke an expert's link: it stops working at once and a new token replaces it (their votes stay)."""
    return db.new_expert_token(session=session, expert_id=expert_id, revoked_at=utcnow())


def restore(expert_id: int, *, session: Session) -> str | None:
    """Give a revoked expert a working link again (a fresh token)."""
    return db.new_expert_token(session=session, expert_id=expert_id, revoked_at=None)


@dataclass(frozen=True)
class ExpertAccess:
    """What a personal link opens: the expert and their survey, or why it opens nothing."""

    expert: SurveyExpertPublic | None
    survey: SurveyPublic | None
    problem: str | None = None


def by_token(token: str, *, session: Session) -> ExpertAccess:
    """The expert a token identifies (revoked links identify no one)."""
    token = (token or "").strip()
    ex = db.expert_by_token(session=session, token=token) if token else None
    if ex is None:
        return ExpertAccess(None, None, "This survey link is not valid: it may have been revoked. Ask the organiser.")
    sv = db.get_survey(session=session, survey_id=ex.survey_id)
    if ex.revoked_at is not None:
        return ExpertAccess(None, None, "This survey link has been revoked. Ask the organiser for a new one.")
    return ExpertAccess(ex, sv)


def vote(expert_id: int, question: str, metric: str, *, session: Session) -> None:
    """Store (or change) the expert's answer to one question; SurveyError when the survey is closed or the
    link revoked, or the question or metric is not the survey's.

    The upsert comes first in the transaction, so on SQLite it takes the write lock before any read: a
    concurrent voter waits (busy_timeout) instead of failing on a stale snapshot, and closing the survey
    cannot slip between the checks and the write. A failed check raises, and the caller's session rolls back.
    """
    try:
        db.upsert_vote(session=session, expert_id=expert_id, question=question, metric=metric, now=utcnow())
    except IntegrityError:  # no such expert: the subquery gave NULL
        raise SurveyError("Unknown expert.") from None
    sid = db.survey_of_expert(session=session, expert_id=expert_id)
    ex = db.get_expert(session=session, expert_id=expert_id, fresh=True)
    sv = db.get_survey(session=session, survey_id=sid, fresh=True) if sid is not None else None
    if ex is None or sv is None:
        raise SurveyError("Unknown expert.")
    if ex.revoked_at is not None:
        raise SurveyError("This survey link has been revoked.")
    if sv.status != "open":
        raise SurveyError("The survey is closed: answers can no longer change.")
    if question not in {q["key"] for q in sv.questions}:
        raise SurveyError(f"The survey has no question {question!r}.")
    if metric not in {m["name"] for m in sv.metrics}:
        raise SurveyError(f"{metric!r} is not one of the survey's metrics.")


def my_votes(expert_id: int, *, session: Session) -> dict[str, str]:
    """question -> metric of one expert."""
    return db.expert_votes(session=session, expert_id=expert_id)


def votes_frame(survey_id: int, *, session: Session, counted_only: bool = False) -> pd.DataFrame:
    """Every vote: expert, question, metric, updated_at, revoked; `counted_only` leaves out revoked experts'."""
    rows = db.vote_rows(session=session, survey_id=survey_id, counted_only=counted_only)
    return pd.DataFrame(rows, columns=list(db.VOTE_KEYS))


def answers_matrix(survey_id: int, *, session: Session) -> pd.DataFrame:
    """Who answered what: one row per expert, one column per question (empty when not answered)."""
    sv = db.get_survey(session=session, survey_id=survey_id)
    if sv is None:
        return pd.DataFrame()
    names = [e.name for e in experts(survey_id, session=session)]
    cols = [q["key"] for q in sv.questions]
    df = pd.DataFrame("", index=names, columns=cols)
    for r in votes_frame(survey_id, session=session).itertuples():
        df.loc[r.expert, r.question] = r.metric
    df.insert(0, "answered", [f"{(df.loc[n, cols] != '').sum()}/{len(cols)}" for n in names])
    df.index.name = "expert"
    return df


@dataclass(frozen=True)
class SurveyWeights:
    """Vote counts and shares per question (the expert weights of each perturbation kind)."""

    counts: dict[str, dict[str, int]]
    weights: dict[str, dict[str, float]]  # questions with no vote are left out
    n_experts_voted: int


def weights(survey_id: int, *, session: Session) -> SurveyWeights:
    """Vote shares: votes 4, 1, 5 for three metrics give 0.4, 0.1, 0.5 (revoked experts' votes do not count)."""
    sv = db.get_survey(session=session, survey_id=survey_id)
    if sv is None:
        raise SurveyError(f"Survey {survey_id} does not exist.")
    metrics = [m["name"] for m in sv.metrics]
    counts = {q["key"]: dict.fromkeys(metrics, 0) for q in sv.questions}
    df = votes_frame(survey_id, session=session, counted_only=True)
    for r in df.itertuples():
        if r.question in counts and r.metric in counts[r.question]:
            counts[r.question][r.metric] += 1
    shares = {q: {m: n / sum(c.values()) for m, n in c.items()} for q, c in counts.items() if sum(c.values()) > 0}
    return SurveyWeights(counts, shares, int(df["expert"].nunique()) if not df.empty else 0)


def weights_frame(w: SurveyWeights, survey: SurveyPublic) -> pd.DataFrame:
    """Long rows question, issue, metric, votes, weight (for the Figure 6 chart)."""
    names = {q["key"]: q["name"] for q in survey.questions}
    rows = [
        {"question": q, "issue": names.get(q, q), "metric": m, "votes": n, "weight": w.weights.get(q, {}).get(m)}
        for q, c in w.counts.items()
        for m, n in c.items()
    ]
    return pd.DataFrame(rows, columns=["question", "issue", "metric", "votes", "weight"])


def agreement(survey_id: int, *, session: Session, n_boot: int = 1000, seed: int = 0) -> AlphaResult:
    """Krippendorff's alpha (nominal) among the counted experts: questions are the units, the metric the value."""
    df = votes_frame(survey_id, session=session, counted_only=True)[["expert", "question", "metric"]]
    if df.empty:
        return AlphaResult(None, "nominal", 0, 0, 0, note="No votes yet.")
    return alpha_from_long(
        df.rename(columns={"question": "unit", "expert": "rater", "metric": "value"}),
        "nominal",
        n_boot=n_boot,
        seed=seed,
    )


def close(survey_id: int, *, session: Session) -> None:
    """Close a survey: answers are final and its weights can feed D_EW."""
    db.set_status(session=session, survey_id=survey_id, status="closed", closed_at=utcnow())


def reopen(survey_id: int, *, session: Session) -> None:
    db.set_status(session=session, survey_id=survey_id, status="open", closed_at=None)


def closed_weights(task: str, *, session: Session) -> tuple[SurveyPublic, SurveyWeights] | None:
    """The newest closed survey of a task with its weights (what D_EW uses), or None."""
    for sv in list_surveys(session=session, task=task):
        if sv.status == "closed":
            return sv, weights(sv.id, session=session)
    return None


# -- for pages, which hold no session ---------------------------------------------------------------------
def surveys(engine: Engine, task: str | None = None) -> list[SurveyPublic]:
    """The surveys (of one task), newest first."""
    with get_session(engine) as s:
        return list_surveys(session=s, task=task)


def new_survey(engine: Engine, task: TaskSpec, title: str) -> int:
    """`create_survey` in its own transaction."""
    with get_session(engine) as s:
        return create_survey(task, title=title, session=s)


def survey_weights(engine: Engine, survey_id: int) -> SurveyWeights:
    with get_session(engine) as s:
        return weights(survey_id, session=s)


@dataclass(frozen=True)
class SurveyState:
    """What the organiser sees of a survey: its experts with their links, the answers, weights and agreement."""

    survey: SurveyPublic
    experts: list[SurveyExpertPublic]
    tokens: dict[int, str | None]
    answers: pd.DataFrame
    weights: SurveyWeights
    agreement: AlphaResult


def survey_state(engine: Engine, survey_id: int, *, n_boot: int = 1000, seed: int = 0) -> SurveyState | None:
    """A survey as its organiser follows it (None when it does not exist)."""
    with get_session(engine) as s:
        sv = get_survey(survey_id, session=s)
        if sv is None:
            return None
        people = experts(survey_id, session=s)
        return SurveyState(
            survey=sv,
            experts=people,
            tokens={e.id: expert_token(e.id, session=s) for e in people},
            answers=answers_matrix(survey_id, session=s),
            weights=weights(survey_id, session=s),
            agreement=agreement(survey_id, session=s, n_boot=n_boot, seed=seed),
        )


def invite_expert(engine: Engine, survey_id: int, name: str) -> SurveyExpertPublic:
    """`invite` in its own transaction (SurveyError when it is refused)."""
    with get_session(engine) as s:
        return invite(survey_id, name, session=s)


def set_link(engine: Engine, expert_id: int, *, revoked: bool) -> str | None:
    """Revoke an expert's link, or give them a working one again; the new token."""
    with get_session(engine) as s:
        return (revoke if revoked else restore)(expert_id, session=s)


def set_open(engine: Engine, survey_id: int, *, is_open: bool) -> None:
    """Reopen a survey, or close it."""
    with get_session(engine) as s:
        (reopen if is_open else close)(survey_id, session=s)


def open_link(engine: Engine, token: str) -> ExpertAccess:
    """`by_token`: what a personal link opens."""
    with get_session(engine) as s:
        return by_token(token, session=s)


def cast_vote(engine: Engine, expert_id: int, question: str, metric: str) -> None:
    """`vote` in its own transaction (SurveyError when it is refused; nothing is stored then)."""
    with get_session(engine) as s:
        vote(expert_id, question, metric, session=s)


def votes_of(engine: Engine, expert_id: int) -> dict[str, str]:
    """question -> metric of one expert."""
    with get_session(engine) as s:
        return my_votes(expert_id, session=s)
