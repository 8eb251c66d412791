"""Human raters: personal links, their scores, and the scores as a DataFrame."""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Engine

from db import conseval as q
from db.conseval import RaterInfo
from db.engine import get_session
from services.conseval.scales import scale
from services.text import InputError


def add_rater(engine: Engine, study_id: int, name: str) -> RaterInfo:
    name = (name or "").strip()
    if not name:
        raise InputError("Give the rater a name.")
    if len(name) > 100:
        raise InputError("A rater's name has at most 100 characters.")
    with get_session(engine) as session:
        if not q.study_exists(session=session, study_id=study_id):
            raise InputError(f"Study {study_id} does not exist.")
        if q.rater_named(session=session, study_id=study_id, name=name):
            raise InputError(f"A rater named {name!r} exists already in this study.")
        return q.add_rater(session=session, study_id=study_id, name=name)


def list_raters(engine: Engine, study_id: int) -> list[RaterInfo]:
    with get_session(engine) as session:
        return q.list_raters(session=session, study_id=study_id)


def rater_by_token(engine: Engine, token: str) -> RaterInfo | None:
    """The active rater whose personal link carries this token (a revoked link gives None)."""
    token = (token or "").strip()
    if not token:
        return None
    with get_session(engine) as session:
        return q.active_rater_by_token(session=session, token=token)


def revoke_rater(engine: Engine, rater_id: int) -> None:
    """The rater's link stops working; their ratings stay."""
    with get_session(engine) as session:
        q.revoke_rater(session=session, rater_id=rater_id)


def save_human_rating(engine: Engine, rater_id: int, item_id: int, scale_key: str, value: float) -> None:
    """Store (or replace) a person's score; InputError for a value off the scale or an item of another study."""
    sc = scale(scale_key)
    if value is None or not sc.lo <= float(value) <= sc.hi:
        raise InputError(f"{value!r} is not on the {sc.key} scale ({sc.options}).")
    with get_session(engine) as session:
        rater = q.get_rater(session=session, rater_id=rater_id)
        item = q.get_item(session=session, item_id=item_id)
        if rater is None or rater.revoked_at is not None:
            raise InputError("This rater link is not valid any more.")
        if item is None or item.study_id != rater.study_id:
            raise InputError("This item is not part of the rater's study.")
        q.save_human_rating(session=session, rater_id=rater_id, item_id=item_id, scale=scale_key, value=float(value))


def human_ratings_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    with get_session(engine) as session:
        rows = q.human_rating_rows(session=session, study_id=study_id)
    return pd.DataFrame(rows, columns=q.HUMAN_RATING_COLUMNS)
