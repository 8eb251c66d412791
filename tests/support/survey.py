"""A survey with experts, and a vote cast."""

from __future__ import annotations

from db.engine import get_session
from services.dhp import survey as sv
from services.dhp.catalogue import TASKS


def new_survey(engine, task: str = "summarization", experts: int = 0) -> tuple[int, list[int]]:
    with get_session(engine) as s:
        sid = sv.create_survey(TASKS[task], title="", session=s)
        ids = [sv.invite(sid, f"expert {i}", session=s).id for i in range(experts)]
    return sid, ids


def cast(engine, expert: int, question: str, metric: str) -> None:
    with get_session(engine) as s:
        sv.vote(expert, question, metric, session=s)
