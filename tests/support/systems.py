"""A dataset of several systems' summaries of the same references, with labels and a finished judge, written
straight to the database (no model call): for the comparison's service, page and browser tests."""

from __future__ import annotations

import numpy as np
from sqlmodel import Session

from db.models import Dataset, DatasetItem, Document
from tests.support.judges import add_judge


def systems_dataset(
    engine, rates: dict[str, float], *, n_refs: int = 120, n_labelled: int = 40, seed: int = 0
) -> tuple[int, int]:
    """(dataset id, judge batch id): each system summarizes the same n_refs references; an item is consistent
    with its system's rate; the first n_labelled items of each system carry their label; the judge is
    informative (0.2 + 0.6 Y + noise)."""
    rng = np.random.default_rng(seed)
    scores: list[float] = []
    with Session(engine) as session:
        refs = [Document(sha256=f"sys-ref-{seed}-{i}", text=f"Reference {i}.", n_chars=12) for i in range(n_refs)]
        ds = Dataset(name=f"systems-{seed}", format="jsonl", sha256=f"systems-{seed}", n_items=n_refs * len(rates))
        session.add_all([*refs, ds])
        session.flush()
        idx = 0
        for name, rate in rates.items():
            y = (rng.random(n_refs) < rate).astype(int)
            scores += [float(x) for x in np.clip(0.2 + 0.6 * y + rng.normal(0, 0.1, n_refs), 0, 1)]
            for i in range(n_refs):
                session.add(
                    DatasetItem(
                        dataset_id=ds.id,
                        idx=idx,
                        external_id=f"{name}-{i}",
                        reference_id=refs[i].id,
                        candidate=f"Summary {i} by {name}.",
                        sentences=[f"Summary {i} by {name}."],
                        human_label=int(y[i]) if i < n_labelled else None,
                        system=name,
                        extra={"truth": int(y[i])},
                    )
                )
                idx += 1
        session.commit()
        ds_id = int(ds.id)
    return ds_id, add_judge(engine, ds_id, scores)
