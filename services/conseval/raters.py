"""Human raters: personal links, their scores, and the scores as a DataFrame."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.models import (
    ConsevalHumanRating,
    ConsevalItem,
    ConsevalRater,
    ConsevalStudy,
    utcnow,
)
from services.conseval.scales import scale
from services.text import InputError


# -- human raters --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RaterInfo:
    id: int
    study_id: int
    name: str
    token: str
    active: bool
    n_rated: int


def add_rater(engine: Engine, study_id: int, name: str) -> RaterInfo:
    name = (name or "").strip()
    if not name:
        raise InputError("Give the rater a name.")
    if len(name) > 100:
        raise InputError("A rater's name has at most 100 characters.")
    with Session(engine) as session:
        if session.get(ConsevalStudy, study_id) is None:
            raise InputError(f"Study {study_id} does not exist.")
        taken = session.execute(
            select(ConsevalRater.id).where(ConsevalRater.study_id == study_id, ConsevalRater.name == name)
        ).first()
        if taken:
            raise InputError(f"A rater named {name!r} exists already in this study.")
        r = ConsevalRater(study_id=study_id, name=name)
        session.add(r)
        session.commit()
        return RaterInfo(r.id, study_id, name, r.token, True, 0)  # type: ignore[arg-type]


def list_raters(engine: Engine, study_id: int) -> list[RaterInfo]:
    with Session(engine) as session:
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
        return [
            RaterInfo(r.id, r.study_id, r.name, r.token, r.revoked_at is None, int(counts.get(r.id, 0))) for r in rows
        ]  # type: ignore[arg-type]


def rater_by_token(engine: Engine, token: str) -> RaterInfo | None:
    """The active rater whose personal link carries this token (a revoked link gives None)."""
    token = (token or "").strip()
    if not token:
        return None
    with Session(engine) as session:
        r = session.execute(select(ConsevalRater).where(ConsevalRater.token == token)).scalar_one_or_none()
        if r is None or r.revoked_at is not None:
            return None
        n = session.execute(select(func.count()).where(ConsevalHumanRating.rater_id == r.id)).scalar_one()
        return RaterInfo(r.id, r.study_id, r.name, r.token, True, int(n))  # type: ignore[arg-type]


def revoke_rater(engine: Engine, rater_id: int) -> None:
    """The rater's link stops working; their ratings stay."""
    with Session(engine) as session:
        session.execute(update(ConsevalRater).where(ConsevalRater.id == rater_id).values(revoked_at=utcnow()))
        session.commit()


def save_human_rating(engine: Engine, rater_id: int, item_id: int, scale_key: str, value: float) -> None:
    """Store (or replace) a person's score; InputError for a value off the scale or an item of another study."""
    sc = scale(scale_key)
    if value is None or not sc.lo <= float(value) <= sc.hi:
        raise InputError(f"{value!r} is not on the {sc.key} scale ({sc.options}).")
    with Session(engine) as session:
        rater = session.get(ConsevalRater, rater_id)
        item = session.get(ConsevalItem, item_id)
        if rater is None or rater.revoked_at is not None:
            raise InputError("This rater link is not valid any more.")
        if item is None or item.study_id != rater.study_id:
            raise InputError("This item is not part of the rater's study.")
        row = session.execute(
            select(ConsevalHumanRating).where(
                ConsevalHumanRating.rater_id == rater_id,
                ConsevalHumanRating.item_id == item_id,
                ConsevalHumanRating.scale == scale_key,
            )
        ).scalar_one_or_none()
        if row is None:
            row = ConsevalHumanRating(rater_id=rater_id, item_id=item_id, scale=scale_key, value=float(value))
        else:
            row.value, row.updated_at = float(value), utcnow()
        session.add(row)
        session.commit()


def human_ratings_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    cols = ["rater_id", "rater", "item_id", "scale", "value"]
    with engine.connect() as conn:
        rows = conn.execute(
            select(ConsevalHumanRating.rater_id, ConsevalRater.name, ConsevalHumanRating.item_id,
                   ConsevalHumanRating.scale, ConsevalHumanRating.value)
            .join(ConsevalRater, ConsevalRater.id == ConsevalHumanRating.rater_id)
            .where(ConsevalRater.study_id == study_id)
        ).all()  # fmt: skip
    return pd.DataFrame(rows, columns=cols)
