"""Saving, listing and deleting studies; their items and answers as DataFrames."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
from sqlalchemy.engine import Engine

from db import conseval as q
from db.engine import get_session
from db.models import ConsevalStudy, ConsevalStudyPublic
from services.conseval.items import ItemIn
from services.conseval.study import GREEDY, IMPORTED, NO_EXAMPLE, ORACLE_RATER, StudyConfig, plan_for_items
from services.jobs.runner import JobTable
from services.text import InputError


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
    rows = [
        q.NewItem(
            fields={"idx": i, **{k: v for k, v in asdict(it).items() if k != "more_scores"}},
            # further imported oracles: saved as that oracle's answers
            ratings=[
                {
                    "rater": f"{ORACLE_RATER}:{oracle_name}",
                    "method": IMPORTED,
                    "granularity": "-",
                    "scale": it.oracle_scale,
                    "sample": GREEDY,
                    "value": v,
                    "raw": f"{v:g}",
                }
                for oracle_name, v in it.more_scores
            ],
        )
        for i, it in enumerate(items)
    ]
    with get_session(engine) as session:
        return q.create_study(
            session=session,
            name=name or f"ConsEval · {', '.join(cfg.criteria)} · {len(cfg.scales)} scales",
            config=cfg.to_dict(),
            n_planned=len(oracle) + len(calls),
            items=rows,
        )


def get_study(engine: Engine, study_id: int) -> ConsevalStudyPublic | None:
    with get_session(engine) as session:
        return q.get_study(session=session, study_id=study_id)


def list_studies(engine: Engine, limit: int = 100) -> list[ConsevalStudyPublic]:
    with get_session(engine) as session:
        return q.list_studies(session=session, limit=limit)


def delete_study(engine: Engine, study_id: int) -> bool:
    with get_session(engine) as session:
        return q.delete_study(session=session, study_id=study_id)


JOBS = JobTable(ConsevalStudy)


def request_cancel(engine: Engine, study_id: int) -> None:
    """Ask the workers to stop the study (see services.jobs.runner: cancel means the same for every job)."""
    with engine.begin() as conn:
        JOBS.request_cancel(conn, study_id)


def reopen(engine: Engine, study_id: int) -> None:
    """Queue a cancelled or failed study again; answers already saved are never asked again."""
    with get_session(engine) as session:
        q.requeue_study(session=session, study_id=study_id)


def n_without_examples(engine: Engine, study_id: int) -> int:
    """dICL answers that could not be asked for want of oracle examples (e.g. before people rated)."""
    with get_session(engine) as session:
        return q.count_problem_ratings(session=session, study_id=study_id, prefix=NO_EXAMPLE)


def forget_without_examples(engine: Engine, study_id: int) -> int:
    """Drop the dICL answers that had no oracle example and queue the study, so they are asked again."""
    with get_session(engine) as session:
        n = q.delete_problem_ratings(session=session, study_id=study_id, prefix=NO_EXAMPLE)
        q.requeue_study(session=session, study_id=study_id, n_forgotten=n)
        return n


def items_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    with get_session(engine) as session:
        data = q.item_rows(session=session, study_id=study_id)
    return pd.DataFrame(data, columns=q.ITEM_COLUMNS)


def ratings_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    """Every model answer of a study (value NaN = missing, with raw and problem)."""
    with get_session(engine) as session:
        rows = q.rating_rows(session=session, study_id=study_id)
    df = pd.DataFrame(rows, columns=q.RATING_COLUMNS)
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    return df
