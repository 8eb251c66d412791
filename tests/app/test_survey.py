"""The expert's Survey page: reached by a personal link, one answer per question, changeable until closed."""

from __future__ import annotations

import services.database
from db.engine import get_session
from services.dhp import survey as sv
from services.dhp.catalogue import TASKS

SURVEY = "pages/11_Survey.py"


def seeded(task: str = "story") -> tuple[int, int, str]:
    with get_session(services.database.get_engine()) as s:
        sid = sv.create_survey(TASKS[task], title="Story weights", session=s)
        ada = sv.invite(sid, "Ada", session=s).id
        token = sv.expert_token(ada, session=s)
    return sid, ada, token


def votes(ada: int) -> dict[str, str]:
    with get_session(services.database.get_engine()) as s:
        return sv.my_votes(ada, session=s)


def test_without_a_token_the_page_explains_itself(open_page):
    at = open_page(SURVEY)
    assert not at.exception and any("personal link" in i.value for i in at.info)
    at = open_page(SURVEY, query={"token": "guessed"})
    assert not at.exception and any("not valid" in e.value for e in at.error)
    assert not at.radio


def test_an_expert_answers_changes_an_answer_and_sees_definitions(open_page):
    _, ada, token = seeded()
    at = open_page(SURVEY, query={"token": token})
    assert not at.exception
    md = "\n".join(m.value for m in at.markdown)
    assert "You are **Ada**" in md and "**Coherence**:" in md and "Random Ending Sentence" in md
    assert len(at.radio) == len(TASKS["story"].kinds()) == 6
    at.radio(key="sv_q_typo").set_value("Fluency").run()
    assert not at.exception and votes(ada) == {"typo": "Fluency"}
    at.radio(key="sv_q_typo").set_value("Coherence").run()
    at.radio(key="sv_q_wrong_ending").set_value("Consistency").run()
    assert votes(ada) == {"typo": "Coherence", "wrong_ending": "Consistency"}
    # Reopening the link shows the stored answers.
    again = open_page(SURVEY, query={"token": token})
    assert again.radio(key="sv_q_typo").value == "Coherence" and again.radio(key="sv_q_grammar").value is None


def test_a_closed_survey_shows_answers_read_only(open_page):
    sid, ada, token = seeded()
    with get_session(services.database.get_engine()) as s:
        sv.vote(ada, "typo", "Fluency", session=s)
        sv.close(sid, session=s)
    at = open_page(SURVEY, query={"token": token})
    assert not at.exception
    assert any("closed" in w.value for w in at.warning)
    assert all(r.disabled for r in at.radio) and at.radio(key="sv_q_typo").value == "Fluency"


def test_a_revoked_link_opens_nothing(open_page):
    _, ada, token = seeded()
    with get_session(services.database.get_engine()) as s:
        sv.revoke(ada, session=s)
    at = open_page(SURVEY, query={"token": token})
    assert not at.exception and at.error and not at.radio


def test_the_owner_without_a_token_is_pointed_to_the_expert_survey_view(open_page):
    at = open_page(SURVEY)
    assert not at.exception
    (link,) = [x for x in at.main.get("page_link") if "DHP" in x.proto.label]
    assert link.proto.label == "DHP → Expert survey" and "DHP" in link.proto.page, link.proto
    assert "Expert" in link.proto.query_string, link.proto
