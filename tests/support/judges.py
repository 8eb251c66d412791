"""Judges for the judge-card tests: a labelled dataset with two finished batches written straight to the
database (no model call), and the QAGS-CNN sample with real batches."""

from __future__ import annotations

import numpy as np
from sqlmodel import Session

from db.models import Batch, BatchItem, Dataset, DatasetItem, Document
from tests.support.qags import QAGS_FILE  # noqa: F401  (the judges tests import it from here)


def labelled_dataset(engine, n: int = 200, *, rate: float = 0.4, seed: int = 0, n_labelled: int | None = None) -> int:
    """A dataset of n one-sentence items whose true labels are Bernoulli(rate); the first n_labelled carry
    their label (all when None). The true labels are in each item's extra['truth']."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < rate).astype(int)
    with Session(engine) as session:
        ref = Document(sha256=f"ref-{seed}", text="The council met on Tuesday.", n_chars=27)
        ds = Dataset(name=f"labelled-{seed}", format="jsonl", sha256=f"ds-{seed}-{n}", n_items=n)
        session.add(ref)
        session.add(ds)
        session.flush()
        for i in range(n):
            known = n_labelled is None or i < n_labelled
            session.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=f"x{i}",
                    reference_id=ref.id,
                    candidate=f"Item {i}: the council met.",
                    sentences=[f"Item {i}: the council met."],
                    human_label=int(truth[i]) if known else None,
                    extra={"truth": int(truth[i])},
                )
            )
        session.commit()
        return int(ds.id)


def add_judge(
    engine, dataset_id: int, scores: list[float | None], *, method: str = "summ-nli", model: str = "m"
) -> int:
    """A finished batch whose item i has score scores[i] (None: failed), with a little cost per item."""
    with Session(engine) as session:
        items = session.query(DatasetItem).filter(DatasetItem.dataset_id == dataset_id).order_by(DatasetItem.idx).all()
        b = Batch(dataset_id=dataset_id, method=method, model=model, status="done", n_items=len(items))
        session.add(b)
        session.flush()
        for item, s in zip(items, scores, strict=True):
            session.add(
                BatchItem(
                    batch_id=b.id,
                    item_id=item.id,
                    status="failed" if s is None else "done",
                    score=s,
                    n_sentences=1,
                    calls=2,
                    prompt_tokens=300,
                    completion_tokens=50,
                    latency_ms=500.0,
                )
            )
        session.commit()
        return int(b.id)


def truth_of(engine, dataset_id: int) -> np.ndarray:
    with Session(engine) as session:
        items = session.query(DatasetItem).filter(DatasetItem.dataset_id == dataset_id).order_by(DatasetItem.idx).all()
        return np.array([it.extra["truth"] for it in items])
