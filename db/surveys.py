"""Expert-survey queries (DHP Figure 5): surveys, invited experts and their votes (keyword-only, `*, session`,
typed results)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlmodel import Session

from db.engine import dialect_insert
from db.models import Survey, SurveyExpert, SurveyExpertPublic, SurveyPublic, SurveyVote, new_token

VOTE_KEYS = ("expert", "question", "metric", "updated_at", "revoked")


def add_survey(*, session: Session, row: Survey) -> int:
    session.add(row)
    session.flush()
    return int(row.id)  # type: ignore[arg-type]


def get_survey(*, session: Session, survey_id: int, fresh: bool = False) -> SurveyPublic | None:
    """A survey; `fresh` reads it again from the database even if the session holds it."""
    row = session.get(Survey, survey_id, populate_existing=fresh)
    return SurveyPublic.model_validate(row) if row else None


def list_surveys(*, session: Session, task: str | None = None) -> list[SurveyPublic]:
    """Surveys, newest first; only the task's with `task`."""
    q = select(Survey).order_by(Survey.id.desc())  # type: ignore[union-attr]
    if task:
        q = q.where(Survey.task == task)
    return [SurveyPublic.model_validate(r) for r in session.execute(q).scalars().all()]


def set_status(*, session: Session, survey_id: int, status: str, closed_at: datetime | None) -> None:
    session.execute(
        update(Survey).where(Survey.id == survey_id).values(status=status, closed_at=closed_at)  # type: ignore[arg-type]
    )


def expert_named(*, session: Session, survey_id: int, name: str) -> bool:
    """Whether the survey has invited someone by this name."""
    q = select(SurveyExpert.id).where(SurveyExpert.survey_id == survey_id, SurveyExpert.name == name)
    return session.execute(q).first() is not None


def add_expert(*, session: Session, survey_id: int, name: str) -> SurveyExpertPublic:
    """Invite an expert (IntegrityError when the name is taken meanwhile)."""
    row = SurveyExpert(survey_id=survey_id, name=name)
    session.add(row)
    session.flush()
    return SurveyExpertPublic.model_validate(row)


def get_expert(*, session: Session, expert_id: int, fresh: bool = False) -> SurveyExpertPublic | None:
    """An expert; `fresh` reads them again from the database even if the session holds them."""
    row = session.get(SurveyExpert, expert_id, populate_existing=fresh)
    return SurveyExpertPublic.model_validate(row) if row else None


def experts(*, session: Session, survey_id: int) -> list[SurveyExpertPublic]:
    """The survey's experts in the order they were invited."""
    q = select(SurveyExpert).where(SurveyExpert.survey_id == survey_id).order_by(SurveyExpert.id)  # type: ignore[arg-type]
    return [SurveyExpertPublic.model_validate(r) for r in session.execute(q).scalars()]


def expert_token(*, session: Session, expert_id: int) -> str | None:
    return session.execute(select(SurveyExpert.token).where(SurveyExpert.id == expert_id)).scalar()


def expert_by_token(*, session: Session, token: str) -> SurveyExpertPublic | None:
    """The expert holding this token (revoked or not)."""
    row = session.execute(select(SurveyExpert).where(SurveyExpert.token == token)).scalars().first()
    return SurveyExpertPublic.model_validate(row) if row else None


def survey_of_expert(*, session: Session, expert_id: int) -> int | None:
    return session.execute(select(SurveyExpert.survey_id).where(SurveyExpert.id == expert_id)).scalar()


def new_expert_token(*, session: Session, expert_id: int, revoked_at: datetime | None) -> str | None:
    """Give an expert a fresh token (the old link never identifies anyone again) and set when they were
    revoked (None: not revoked). Returns the token; None when there is no such expert."""
    row = session.get(SurveyExpert, expert_id)
    if row is None:
        return None
    row.revoked_at = revoked_at
    row.token = new_token()
    session.add(row)
    return row.token


def upsert_vote(*, session: Session, expert_id: int, question: str, metric: str, now: datetime) -> None:
    """Store or replace an expert's answer to one question (IntegrityError when there is no such expert).

    The survey id comes from a subquery inside the upsert: a read before it would start a read transaction on
    SQLite, which cannot then become a write if another voter committed meanwhile."""
    survey_of = select(SurveyExpert.survey_id).where(SurveyExpert.id == expert_id).scalar_subquery()
    ins = dialect_insert(session.connection())(SurveyVote.__table__).values(
        survey_id=survey_of, expert_id=expert_id, question=question, metric=metric, created_at=now, updated_at=now
    )
    session.execute(
        ins.on_conflict_do_update(
            index_elements=["expert_id", "question"],
            set_={"metric": ins.excluded.metric, "updated_at": ins.excluded.updated_at},
        )
    )


def expert_votes(*, session: Session, expert_id: int) -> dict[str, str]:
    """question -> metric of one expert."""
    rows = session.execute(select(SurveyVote.question, SurveyVote.metric).where(SurveyVote.expert_id == expert_id))
    return {question: metric for question, metric in rows.all()}


def vote_rows(
    *, session: Session, survey_id: int, counted_only: bool = False
) -> list[tuple[str, str, str, datetime, bool]]:
    """(expert, question, metric, updated_at, revoked) of every vote; `counted_only` leaves out revoked experts'."""
    q = (
        select(
            SurveyExpert.name,
            SurveyVote.question,
            SurveyVote.metric,
            SurveyVote.updated_at,
            SurveyExpert.revoked_at.is_not(None),  # type: ignore[union-attr]
        )
        .join(SurveyExpert, SurveyExpert.id == SurveyVote.expert_id)  # type: ignore[arg-type]
        .where(SurveyVote.survey_id == survey_id)
        .order_by(SurveyExpert.name, SurveyVote.question)
    )
    if counted_only:
        q = q.where(SurveyExpert.revoked_at.is_(None))  # type: ignore[union-attr]
    return [tuple(r) for r in session.execute(q).all()]  # type: ignore[misc]
