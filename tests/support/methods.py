"""One finished batch of each method over one labelled dataset, written straight to the database (no model call):
each with its own kind of score and verdict, as the batch engine stores them (services/jobs/batches/items.py).

* DCE and the paragraph level: the score is Eq. 3's share of consistent sentences; the model's own is_consistent
  (round 0) is stored beside it and is not the verdict (the verdict is "every sentence consistent").
* The NLI paradigms: the score is the share of units judged consistent, the label the verdict.
* The evidence checker: the score is its calibrated probability (never 1), its summary verdict
  (model_is_consistent) is withheld on some items (None), and the result carries `checker_score`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlmodel import Session, select

from db.models import Batch, BatchItem
from tests.metaeval_seed import Item, add_batch, make_dataset

METHODS = ("dce-amc", "paragraph", "evidence", "summ-nli", "sent-nli", "qg-qa")
C, X = "consistent", "inconsistent"
N = 40


@dataclass(frozen=True)
class Seeded:
    """A method's batch and what was written: the labels, scores and verdicts (NaN: none) per item."""

    dataset_id: int
    batch_id: int
    method: str
    labels: np.ndarray
    scores: np.ndarray
    verdicts: np.ndarray


def labels(n: int = N) -> np.ndarray:
    """Half consistent, half not (more than 5 of each, as the card's measures need)."""
    return np.array([1 if i % 2 == 0 else 0 for i in range(n)])


def seed_method(engine, method: str, *, seed: int = 0) -> Seeded:
    """A dataset of N labelled items and one finished batch of `method` over it."""
    rng = np.random.default_rng(seed)
    y = labels()
    # Two sentences per summary; the judge is right on about 3 items in 4.
    right = rng.random(N) < 0.75
    said = np.where(right, y, 1 - y)
    items = []
    for i in range(N):
        first = [C, C] if said[i] else ([X, C] if i % 3 else [X, X])
        items.append(Item([first], human_label=int(y[i]), human_score=float(y[i]), flag=bool(rng.random() < 0.5)))
    ds = make_dataset(engine, items, name=f"{method}-{seed}")
    bid = add_batch(engine, ds, items, method=method)
    scores = np.array([((s == C) + (t == C)) / 2 for s, t in (it.rounds[0] for it in items)], dtype=float)
    verdicts = (scores >= 1.0).astype(float)
    if method == "evidence":
        # A probability that leans the right way on most items, never 1; the checker withholds its verdict on
        # every fourth item and otherwise says what its probability says at even odds.
        p = np.clip(np.where(said == 1, 0.7, 0.3) + rng.normal(0, 0.15, N), 0.01, 0.99).round(3)
        flags = [None if i % 4 == 3 else bool(p[i] >= 0.5) for i in range(N)]
        with Session(engine) as s:
            rows = s.exec(select(BatchItem).where(BatchItem.batch_id == bid).order_by(BatchItem.item_id)).all()
            for row, prob, flag in zip(rows, p, flags, strict=True):
                result = dict(row.result)
                first = dict(result["rounds"][0], model_is_consistent=flag, checker_score=float(prob))
                row.result = {**result, "rounds": [first], "checker_score": float(prob)}
                row.score = row.final_score = float(prob)
                s.add(row)
            batch = s.get(Batch, bid)
            batch.model, batch.backend_kind, batch.base_url = "offline evidence checker (lexical overlap)", "none", None
            s.add(batch)
            s.commit()
        scores = p.astype(float)
        verdicts = np.array([np.nan if f is None else float(f) for f in flags])
    elif method in ("summ-nli", "sent-nli", "qg-qa"):
        with Session(engine) as s:  # the label is the verdict: every unit consistent
            rows = s.exec(select(BatchItem).where(BatchItem.batch_id == bid).order_by(BatchItem.item_id)).all()
            for row, v in zip(rows, verdicts, strict=True):
                result = dict(row.result)
                result["rounds"] = [dict(result["rounds"][0], model_is_consistent=bool(v))]
                row.result = result
                s.add(row)
            s.commit()
    return Seeded(ds, bid, method, y.astype(float), scores, verdicts)


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    """(TPR + TNR) / 2 over the items with a prediction, written out from its definition."""
    keep = np.isfinite(pred)
    p, t = pred[keep], y[keep]
    tpr = ((p == 1) & (t == 1)).sum() / (t == 1).sum()
    tnr = ((p == 0) & (t == 0)).sum() / (t == 0).sum()
    return float((tpr + tnr) / 2)
