"""A judge's items as the Judges page reads them, on SQLite and PostgreSQL: the driver's own rows for a model
judge, SQLAlchemy's decoded ones (the stored results) for the evidence checker."""

from __future__ import annotations

import math

import numpy as np
from sqlalchemy import update
from sqlmodel import Session

from db import judges as db
from db.engine import get_session
from db.models import BatchItem
from services import judges
from tests.metaeval_seed import Item, seed

C, X, U = "consistent", "inconsistent", "unknown"
ITEMS = [
    Item([[C, C]]),
    Item([[C, X, U]]),
    Item([[X]], status="failed"),
    Item([[C]], status="pending"),
]


def _costs(engine, bid: int) -> None:
    with Session(engine) as s:
        for n, item_id in enumerate(sorted(r.item_id for r in s.query(BatchItem).filter(BatchItem.batch_id == bid))):
            s.execute(
                update(BatchItem)
                .where(BatchItem.batch_id == bid, BatchItem.item_id == item_id)
                .values(calls=n + 1, cache_hits=n, prompt_tokens=100 * n, completion_tokens=7 * n, latency_ms=2.5 * n)
            )
        s.commit()


def test_a_model_judges_items_in_dataset_order_with_missing_scores_as_nan(engine):
    _, bid = seed(engine, ITEMS)
    _costs(engine, bid)
    with get_session(engine) as session:
        rows = db.judge_items(session=session, batch_id=bid, with_result=False)
    assert [len(r) for r in rows] == [len(db.JUDGE_ITEM_FIELDS)] * 4
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    assert frame["status"].tolist() == ["done", "done", "failed", "pending"]
    assert frame["item_id"].is_monotonic_increasing
    assert frame["score"].iloc[0] == 1.0 and frame["score"].iloc[1] == 0.5
    assert frame["score"].iloc[2:].isna().all()
    assert frame["verdict"].tolist()[:2] == [1.0, 0.0] and frame["verdict"].iloc[2:].isna().all()
    assert frame["prediction"].tolist()[:2] == [1.0, 0.5] and frame["prediction"].iloc[2:].isna().all()
    assert frame["n_sentences"].tolist() == [2, 3, 1, 1] and frame["n_unknown"].tolist() == [0, 1, 0, 0]
    assert frame["calls"].tolist() == [1, 2, 3, 4] and frame["prompt_tokens"].tolist() == [0, 100, 200, 300]
    assert frame["completion_tokens"].tolist() == [0, 7, 14, 21] and frame["cache_hits"].tolist() == [0, 1, 2, 3]
    assert frame["latency_ms"].tolist() == [0.0, 2.5, 5.0, 7.5]
    for name in ("calls", "n_sentences", "prompt_tokens"):
        assert np.issubdtype(frame[name].dtype, np.integer)


def test_the_evidence_checkers_items_carry_their_decoded_results(engine):
    items = [Item([[C, C]], flag=True), Item([[C, X]], flag=None), Item([[X]], status="failed")]
    _, bid = seed(engine, items, method="evidence")
    with get_session(engine) as session:
        rows = db.judge_items(session=session, batch_id=bid, with_result=True)
    assert isinstance(rows[0][-1], dict) and rows[2][-1] is None
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    # the first round's model_is_consistent is the verdict: True, then undecided; a failed item has none
    assert frame["verdict"].iloc[0] == 1.0 and math.isnan(frame["verdict"].iloc[1])
    assert math.isnan(frame["verdict"].iloc[2]) and "result" not in frame
