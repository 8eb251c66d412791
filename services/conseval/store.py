"""Saving, listing and deleting studies; their items and answers as DataFrames."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.models import (
    ConsevalHumanRating,
    ConsevalItem,
    ConsevalRater,
    ConsevalRating,
    ConsevalStudy,
    ConsevalStudyPublic,
)
from services.conseval.items import ItemIn
from services.conseval.study import GREEDY, IMPORTED, NO_EXAMPLE, ORACLE_RATER, StudyConfig, plan_for_items
from services.jobs.runner import JobTable
from services.text import InputError


# -- persistence ---------------------------------------------------------------------------------
def create_study(engine: Engine, cfg: StudyConfig, items: list[ItemIn], *, name: str = "") -> int:
    """Save a study and its items, queued; InputError when the set-up cannot run."""
    cfg.validate()
    if not items:
        raise InputError("The study has no items.")
    without = [c for c in cfg.criteria if not any(it.criterion == c for it in items)]
    if without:
        raise InputError(f"No items for {', '.join(without)}.")
    if cfg.oracle == "imported" and not any(it.oracle_score is not None or it.more_scores for it in items):
        raise InputError("The oracle is 'scores imported with the items', but no item has a score.")
    oracle, calls = plan_for_items(cfg, items)
    with Session(engine) as session:
        study = ConsevalStudy(
            name=name or f"ConsEval · {', '.join(cfg.criteria)} · {len(cfg.scales)} scales",
            config=cfg.to_dict(),
            n_planned=len(oracle) + len(calls),
        )
        session.add(study)
        session.flush()
        for i, it in enumerate(items):
            row = ConsevalItem(study_id=study.id, idx=i, **{k: v for k, v in asdict(it).items() if k != "more_scores"})
            session.add(row)
            session.flush()
            for oracle_name, v in it.more_scores:  # further imported oracles: saved as that oracle's answers
                session.add(ConsevalRating(study_id=study.id, item_id=row.id, rater=f"{ORACLE_RATER}:{oracle_name}",
                                           method=IMPORTED, granularity="-", scale=it.oracle_scale, sample=GREEDY,
                                           value=v, raw=f"{v:g}"))  # fmt: skip
        session.commit()
        return study.id  # type: ignore[return-value]


def get_study(engine: Engine, study_id: int) -> ConsevalStudyPublic | None:
    with Session(engine) as session:
        s = session.get(ConsevalStudy, study_id)
        return ConsevalStudyPublic.model_validate(s, from_attributes=True) if s else None


def list_studies(engine: Engine, limit: int = 100) -> list[ConsevalStudyPublic]:
    with Session(engine) as session:
        rows = session.execute(select(ConsevalStudy).order_by(ConsevalStudy.id.desc()).limit(limit)).scalars()
        return [ConsevalStudyPublic.model_validate(s, from_attributes=True) for s in rows]


def delete_study(engine: Engine, study_id: int) -> bool:
    with Session(engine) as session:
        item_ids = select(ConsevalItem.id).where(ConsevalItem.study_id == study_id)
        rater_ids = select(ConsevalRater.id).where(ConsevalRater.study_id == study_id)
        session.execute(delete(ConsevalHumanRating).where(ConsevalHumanRating.rater_id.in_(rater_ids)))
        session.execute(delete(ConsevalHumanRating).where(ConsevalHumanRating.item_id.in_(item_ids)))
        session.execute(delete(ConsevalRater).where(ConsevalRater.study_id == study_id))
        session.execute(delete(ConsevalRating).where(ConsevalRating.study_id == study_id))
        session.execute(delete(ConsevalItem).where(ConsevalItem.study_id == study_id))
        n = session.execute(delete(ConsevalStudy).where(ConsevalStudy.id == study_id)).rowcount
        session.commit()
        return bool(n)


JOBS = JobTable(ConsevalStudy)


def request_cancel(engine: Engine, study_id: int) -> None:
    """Ask the workers to stop the study (see services.jobs.runner: cancel means the same for every job)."""
    with engine.begin() as conn:
        JOBS.request_cancel(conn, study_id)


def reopen(engine: Engine, study_id: int) -> None:
    """Queue a cancelled or failed study again; answers already saved are never asked again."""
    with Session(engine) as session:
        session.execute(
            update(ConsevalStudy)
            .where(ConsevalStudy.id == study_id)
            .values(status="queued", cancel_requested=False, error=None, finished_at=None)
        )
        session.commit()


def n_without_examples(engine: Engine, study_id: int) -> int:
    """dICL answers that could not be asked for want of oracle examples (e.g. before people rated)."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).where(
                    ConsevalRating.study_id == study_id, ConsevalRating.problem.like(f"{NO_EXAMPLE}%")
                )
            ).scalar_one()
        )


def forget_without_examples(engine: Engine, study_id: int) -> int:
    """Drop the dICL answers that had no oracle example and queue the study, so they are asked again."""
    with Session(engine) as session:
        n = session.execute(
            delete(ConsevalRating).where(
                ConsevalRating.study_id == study_id, ConsevalRating.problem.like(f"{NO_EXAMPLE}%")
            )
        ).rowcount
        session.execute(
            update(ConsevalStudy)
            .where(ConsevalStudy.id == study_id)
            .values(n_done=ConsevalStudy.n_done - n, status="queued", cancel_requested=False, error=None,
                    finished_at=None)
        )  # fmt: skip
        session.commit()
        return int(n)


def items_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    with Session(engine) as session:
        rows = session.execute(
            select(ConsevalItem).where(ConsevalItem.study_id == study_id).order_by(ConsevalItem.idx)
        ).scalars()
        data = [r.model_dump() for r in rows]
    return pd.DataFrame(
        data,
        columns=[
            "id",
            "study_id",
            "idx",
            "criterion",
            "query",
            "response",
            "source_id",
            "oracle_score",
            "oracle_scale",
        ],
    )


def ratings_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    """Every model answer of a study (value NaN = missing, with raw and problem)."""
    cols = ["item_id", "rater", "method", "granularity", "scale", "sample", "value", "raw", "problem"]
    with engine.connect() as conn:
        rows = conn.execute(
            select(*[getattr(ConsevalRating, c) for c in cols]).where(ConsevalRating.study_id == study_id)
        ).all()
    df = pd.DataFrame(rows, columns=cols)
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    return df
