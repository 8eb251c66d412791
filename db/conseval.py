"""ConsEval queries: studies, their items and answers, human raters and their scores (keyword-only `*, session`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlmodel import Session

from db.engine import dialect_insert
from db.models import (
    ConsevalHumanRating,
    ConsevalItem,
    ConsevalRater,
    ConsevalRating,
    ConsevalStudy,
    ConsevalStudyPublic,
    utcnow,
)

ITEM_COLUMNS = ["id", "study_id", "idx", "criterion", "query", "response", "source_id", "oracle_score", "oracle_scale"]
RATING_COLUMNS = ["item_id", "rater", "method", "granularity", "scale", "sample", "value", "raw", "problem"]
HUMAN_RATING_COLUMNS = ["rater_id", "rater", "item_id", "scale", "value"]


# -- studies -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewItem:
    """An item to save with a new study, and answers saved with it (e.g. an imported oracle's scores)."""

    fields: dict[str, Any]  # ConsevalItem columns but study_id
    ratings: list[dict[str, Any]] = field(default_factory=list)  # ConsevalRating columns but study_id, item_id


def create_study(
    *, session: Session, name: str, config: dict[str, Any], n_planned: int, items: Sequence[NewItem]
) -> int:
    """Save a queued study with its items (numbered in order by the caller) and their saved answers; its id."""
    study = ConsevalStudy(name=name, config=config, n_planned=n_planned)
    session.add(study)
    session.flush()
    for it in items:
        row = ConsevalItem(study_id=study.id, **it.fields)
        session.add(row)
        session.flush()
        for rating in it.ratings:
            session.add(ConsevalRating(study_id=study.id, item_id=row.id, **rating))
    session.flush()
    return study.id  # type: ignore[return-value]


def get_study(*, session: Session, study_id: int) -> ConsevalStudyPublic | None:
    s = session.get(ConsevalStudy, study_id)
    return ConsevalStudyPublic.model_validate(s, from_attributes=True) if s else None


def study_exists(*, session: Session, study_id: int) -> bool:
    return session.get(ConsevalStudy, study_id) is not None


def list_studies(*, session: Session, limit: int = 100) -> list[ConsevalStudyPublic]:
    """The newest studies first."""
    rows = session.execute(select(ConsevalStudy).order_by(ConsevalStudy.id.desc()).limit(limit)).scalars()
    return [ConsevalStudyPublic.model_validate(s, from_attributes=True) for s in rows]


def delete_study(*, session: Session, study_id: int) -> bool:
    """Delete a study with its items, answers, raters and their scores; False if there was none."""
    item_ids = select(ConsevalItem.id).where(ConsevalItem.study_id == study_id)
    rater_ids = select(ConsevalRater.id).where(ConsevalRater.study_id == study_id)
    session.execute(delete(ConsevalHumanRating).where(ConsevalHumanRating.rater_id.in_(rater_ids)))
    session.execute(delete(ConsevalHumanRating).where(ConsevalHumanRating.item_id.in_(item_ids)))
    session.execute(delete(ConsevalRater).where(ConsevalRater.study_id == study_id))
    session.execute(delete(ConsevalRating).where(ConsevalRating.study_id == study_id))
    session.execute(delete(ConsevalItem).where(ConsevalItem.study_id == study_id))
    n = session.execute(delete(ConsevalStudy).where(ConsevalStudy.id == study_id)).rowcount
    return bool(n)


def requeue_study(*, session: Session, study_id: int, n_forgotten: int = 0) -> None:
    """Queue the study again, its progress less `n_forgotten` answers dropped to be asked again."""
    session.execute(
        update(ConsevalStudy)
        .where(ConsevalStudy.id == study_id)
        .values(
            n_done=ConsevalStudy.n_done - n_forgotten,
            status="queued",
            cancel_requested=False,
            error=None,
            finished_at=None,
        )
    )


def save_results(*, session: Session, study_id: int, results: dict[str, Any]) -> None:
    session.execute(update(ConsevalStudy).where(ConsevalStudy.id == study_id).values(results=results))


# -- items and answers ---------------------------------------------------------------------------
def list_items(*, session: Session, study_id: int) -> list[ConsevalItem]:
    """The study's items in their order."""
    return list(
        session.execute(
            select(ConsevalItem).where(ConsevalItem.study_id == study_id).order_by(ConsevalItem.idx)
        ).scalars()
    )


def item_rows(*, session: Session, study_id: int) -> list[dict[str, Any]]:
    """The study's items in their order, as dicts of ITEM_COLUMNS."""
    return [r.model_dump() for r in list_items(session=session, study_id=study_id)]


def rating_rows(*, session: Session, study_id: int) -> list[tuple[Any, ...]]:
    """Every answer of the study, as tuples of RATING_COLUMNS."""
    cols = [getattr(ConsevalRating, c) for c in RATING_COLUMNS]
    return [tuple(r) for r in session.execute(select(*cols).where(ConsevalRating.study_id == study_id)).all()]


def insert_ratings(*, session: Session, study_id: int, rows: list[dict[str, Any]]) -> int:
    """Save answers, keeping one saved meanwhile for the same call; how many were added (all of them when the
    driver does not say, as psycopg for many rows)."""
    if not rows:
        return 0
    conn = session.connection()
    res = conn.execute(
        dialect_insert(conn)(ConsevalRating.__table__).on_conflict_do_nothing(),
        [{"study_id": study_id, **r} for r in rows],
    )
    return res.rowcount if res.rowcount is not None and res.rowcount >= 0 else len(rows)


def count_problem_ratings(*, session: Session, study_id: int, prefix: str) -> int:
    """Answers of the study whose problem starts with `prefix`."""
    return int(
        session.execute(
            select(func.count()).where(ConsevalRating.study_id == study_id, ConsevalRating.problem.like(f"{prefix}%"))
        ).scalar_one()
    )


def delete_problem_ratings(*, session: Session, study_id: int, prefix: str) -> int:
    """Drop the answers of the study whose problem starts with `prefix`; how many."""
    return int(
        session.execute(
            delete(ConsevalRating).where(ConsevalRating.study_id == study_id, ConsevalRating.problem.like(f"{prefix}%"))
        ).rowcount
    )


# -- human raters --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RaterInfo:
    id: int
    study_id: int
    name: str
    token: str
    active: bool
    n_rated: int


def rater_named(*, session: Session, study_id: int, name: str) -> bool:
    """Whether the study has a rater of this name."""
    return (
        session.execute(
            select(ConsevalRater.id).where(ConsevalRater.study_id == study_id, ConsevalRater.name == name)
        ).first()
        is not None
    )


def add_rater(*, session: Session, study_id: int, name: str) -> RaterInfo:
    r = ConsevalRater(study_id=study_id, name=name)
    session.add(r)
    session.flush()
    return RaterInfo(r.id, study_id, name, r.token, True, 0)  # type: ignore[arg-type]


def list_raters(*, session: Session, study_id: int) -> list[RaterInfo]:
    """The study's raters by name, with how many scores each gave."""
    counts = dict(
        session.execute(
            select(ConsevalHumanRating.rater_id, func.count())
            .join(ConsevalRater, ConsevalRater.id == ConsevalHumanRating.rater_id)
            .where(ConsevalRater.study_id == study_id)
            .group_by(ConsevalHumanRating.rater_id)
        ).all()
    )
    rows = session.execute(
        select(ConsevalRater).where(ConsevalRater.study_id == study_id).order_by(ConsevalRater.name)
    ).scalars()
    return [RaterInfo(r.id, r.study_id, r.name, r.token, r.revoked_at is None, int(counts.get(r.id, 0))) for r in rows]  # type: ignore[arg-type]


def active_rater_by_token(*, session: Session, token: str) -> RaterInfo | None:
    """The rater with this token unless their link was revoked."""
    r = session.execute(select(ConsevalRater).where(ConsevalRater.token == token)).scalar_one_or_none()
    if r is None or r.revoked_at is not None:
        return None
    n = session.execute(select(func.count()).where(ConsevalHumanRating.rater_id == r.id)).scalar_one()
    return RaterInfo(r.id, r.study_id, r.name, r.token, True, int(n))  # type: ignore[arg-type]


def revoke_rater(*, session: Session, rater_id: int) -> None:
    session.execute(update(ConsevalRater).where(ConsevalRater.id == rater_id).values(revoked_at=utcnow()))


def get_rater(*, session: Session, rater_id: int) -> ConsevalRater | None:
    return session.get(ConsevalRater, rater_id)


def get_item(*, session: Session, item_id: int) -> ConsevalItem | None:
    return session.get(ConsevalItem, item_id)


def save_human_rating(*, session: Session, rater_id: int, item_id: int, scale: str, value: float) -> None:
    """Store the person's score of the item on the scale, replacing an earlier one."""
    row = session.execute(
        select(ConsevalHumanRating).where(
            ConsevalHumanRating.rater_id == rater_id,
            ConsevalHumanRating.item_id == item_id,
            ConsevalHumanRating.scale == scale,
        )
    ).scalar_one_or_none()
    if row is None:
        row = ConsevalHumanRating(rater_id=rater_id, item_id=item_id, scale=scale, value=value)
    else:
        row.value, row.updated_at = value, utcnow()
    session.add(row)


def human_rating_rows(*, session: Session, study_id: int) -> list[tuple[Any, ...]]:
    """Every human score of the study, as tuples of HUMAN_RATING_COLUMNS (the rater's name as `rater`)."""
    return [
        tuple(r)
        for r in session.execute(
            select(
                ConsevalHumanRating.rater_id,
                ConsevalRater.name,
                ConsevalHumanRating.item_id,
                ConsevalHumanRating.scale,
                ConsevalHumanRating.value,
            )
            .join(ConsevalRater, ConsevalRater.id == ConsevalHumanRating.rater_id)
            .where(ConsevalRater.study_id == study_id)
        ).all()
    ]
