"""Label next: which unlabelled items people should label, sent to chosen annotators' Annotate queues.

Two ways to choose:
- "random": a uniform random draw among the unlabelled items. PPI's interval assumes the labelled items are
  such a draw, so this keeps it valid; every new label narrows it (the width goes as 1/sqrt(n)).
  With `per_system` (item -> system), the draw is k items from each system's unlabelled items, so that every
  system of a comparison gets its own random labels (services.judges.compare needs at least two per system).
  Systems in `decided` (every pair of theirs decided in the live comparison: Comparison.decided_systems) get
  none: labelling them further changes no conclusion.
- "uncertain": where the judges are least certain (prediction nearest 0.5) or disagree most (spread of their
  predictions). These labels teach the most about where the judges fail, and sharpen agreement figures, but
  they are not a random draw: each is recorded as such (`send(..., origin=...)`), and the cards count such
  items as known values and compute their intervals from the random labels (services.judges.card).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db import annotations as queries
from db.engine import get_session
from db.models import utcnow
from services.errors import InputError

log = logging.getLogger(__name__)

Strategy = Literal["random", "uncertain"]
STRATEGIES: dict[str, str] = {
    "random": "At random (keeps the PPI interval valid)",
    "uncertain": "Where the judges are unsure or disagree (best for finding failures)",
}


@dataclass(frozen=True)
class Proposal:
    item_ids: list[int]
    table: pd.DataFrame  # item_id, idx, external_id, uncertainty, disagreement, priority
    n_unlabelled: int


def propose(
    human: pd.DataFrame,
    judges: Sequence[pd.DataFrame],
    *,
    k: int,
    strategy: Strategy = "random",
    exclude: Sequence[int] = (),
    seed: int = 0,
    per_system: pd.Series | None = None,
    decided: set[str] | frozenset[str] = frozenset(),
) -> Proposal:
    """Up to k unlabelled items (no human label or score) that the judges ran on, not among `exclude` (already
    in someone's queue); with `per_system` (item_id -> system) and the random strategy, up to k per system,
    none of a system in `decided`."""
    if k < 1:
        raise InputError("Propose at least one item.")
    if strategy not in STRATEGIES:
        raise InputError(f"Unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}.")
    free = human[human["label"].isna() & human["hscore"].isna() & ~human["item_id"].isin(list(exclude))]
    if judges:  # only items some judge ran on (a batch may cover the first items of a dataset only)
        free = free[free["item_id"].isin(pd.concat([j["item_id"] for j in judges]))]
    free = free[["item_id", "idx", "external_id"]].reset_index(drop=True)
    preds = np.full((len(free), max(len(judges), 1)), np.nan)
    for j, df in enumerate(judges):
        p = df.set_index("item_id")["prediction"]
        preds[:, j] = p.reindex(free["item_id"]).to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        unsure = 1.0 - np.abs(2.0 * preds - 1.0)  # 1 at 0.5, 0 at 0 or 1; an unscored item counts as unsure
        unsure = np.where(np.isfinite(unsure), unsure, 1.0)
        spread = np.nan_to_num(np.nanstd(preds, axis=1)) if preds.shape[1] > 1 else np.zeros(len(free))
    free["uncertainty"] = unsure.mean(axis=1)
    free["disagreement"] = spread
    free["priority"] = free["uncertainty"] + 2.0 * free["disagreement"]
    if strategy == "random":
        order = np.random.default_rng(seed).permutation(len(free))
        if per_system is not None:
            system = per_system.reindex(free["item_id"].to_numpy()).to_numpy(dtype=object)
            if decided:
                system = np.where(pd.Series(system).isin(list(decided)).to_numpy(), None, system)
            free["system"] = system
            drawn = pd.Series(system[order])
            rank = drawn.groupby(drawn.fillna("")).cumcount().to_numpy()
            keep = order[(rank < k) & drawn.notna().to_numpy()]
            return _chosen(free, keep)
    else:
        order = np.lexsort((free["idx"].to_numpy(), -free["priority"].to_numpy()))
    return _chosen(free, order[:k])


def _chosen(free: pd.DataFrame, rows: np.ndarray) -> Proposal:
    chosen = free.iloc[rows].reset_index(drop=True)
    return Proposal([int(i) for i in chosen["item_id"]], chosen, len(free))


def queued_items(engine: Engine, dataset_id: int) -> list[int]:
    """Items of the dataset already in someone's queue."""
    with get_session(engine) as session:
        return sorted({i for i, _ in queries.assignment_pairs(session=session, dataset_id=dataset_id)})


def send(
    engine: Engine,
    dataset_id: int,
    item_ids: Sequence[int],
    annotator_ids: Sequence[int],
    *,
    origin: str = "manual",
) -> dict[str, int]:
    """Put the items in the annotators' queues, in turn (each item to one annotator); {name: items added}.

    `origin` records how the items were chosen: the strategy that proposed them ("random", "uncertain"), else
    "manual" (picked by hand); the cards compute their intervals from the random ones only."""
    from db.models import LABEL_ORIGINS

    if origin not in LABEL_ORIGINS or origin == "imported":
        raise InputError(f"Unknown origin {origin!r}; one of random, uncertain, manual.")
    ids = list(dict.fromkeys(int(a) for a in annotator_ids))
    if not ids:
        raise InputError("Choose at least one annotator.")
    if not item_ids:
        raise InputError("There is no item to send.")
    now = utcnow()
    with get_session(engine) as session:
        names = queries.annotator_names(session=session, annotator_ids=ids)
        missing = [a for a in ids if a not in names]
        if missing:
            raise InputError(f"Annotator(s) {missing} do not exist.")
        rows = [
            {
                "dataset_id": dataset_id,
                "dataset_item_id": int(item),
                "annotator_id": ids[k % len(ids)],
                "status": "pending",
                "origin": origin,
                "assigned_at": now,
                "done_at": None,
            }
            for k, item in enumerate(item_ids)
        ]
        queries.insert_assignments(session=session, rows=rows)
        queries.refresh_assignments(session=session, pairs={(r["dataset_item_id"], r["annotator_id"]) for r in rows})
    counts = {names[a]: sum(r["annotator_id"] == a for r in rows) for a in ids}
    log.info("sent %d item(s) of dataset %s to %d annotator(s)", len(rows), dataset_id, len(ids))
    return counts
