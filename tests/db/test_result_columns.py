"""The columns written next to a batch item's result (services/result_columns.py), on SQLite and PostgreSQL: the
migration that added them fills them in for results written before, by the rules the worker writes them with, and
the Judges and Meta-evaluation pages read the same from them as from the results themselves."""

from __future__ import annotations

import math

import pandas as pd
from alembic import command
from sqlalchemy import select, update
from sqlmodel import Session

from db.engine import alembic_config, make_engine, upgrade
from db.models import BatchItem
from services import judges, result_columns
from services.metaeval import load_batch
from tests.db.test_judges import SHAPES
from tests.metaeval_seed import Item, add_batch, make_dataset

C, X, U = "consistent", "inconsistent", "unknown"
NLI = {
    "method": "sent-nli",
    "label": "inconsistent",
    "score": 0.5,
    "sentences": [{"index": 0, "text": "a", "verdict": C}, {"index": 1, "text": "b", "verdict": X}],
    "rounds": [
        {
            "round": 0,
            "score": 0.5,
            "model_is_consistent": False,
            "sentences": [
                {"index": 0, "text": "a", "verdict": C},
                {"index": 1, "text": "b", "verdict": X},
                {"index": 2, "text": "c", "verdict": None},
            ],
        }
    ],
}


def _seed(engine) -> tuple[int, int, list[dict | None]]:
    """A DCE batch (hand-made results: rounds, unknown sentences, undecided flags) and an evidence checker's batch
    whose results take every shape of SHAPES; returns both ids and the evidence batch's results."""
    dce = [
        Item([[C, X, U], [C, C, C]], flag=False, sentence_labels=[{"a": 1, "b": 1}, {"a": 0, "b": 1}, {"a": 0}]),
        Item([[C, C]], flag=True, sentence_labels=[{"a": 1}, {"a": 1, "b": 0}]),
        Item([[U]], flag=None),
        Item([[X, X]], status="failed"),
        Item([[C, X]], flag=None),
    ]
    ds = make_dataset(engine, [*dce, *[Item([[C]]) for _ in range(len(SHAPES) - len(dce))]])
    n = len(SHAPES)
    dce_id = add_batch(engine, ds, [*dce, *[Item([[C]], flag=True) for _ in range(n - len(dce))]])
    results = [*SHAPES[:-2], NLI, None]
    ev_id = add_batch(engine, ds, [Item([[C]], status="done" if r else "failed") for r in results], method="evidence")
    with Session(engine) as s:
        ids = s.execute(select(BatchItem.id).where(BatchItem.batch_id == ev_id).order_by(BatchItem.id)).scalars().all()
        for i, result in zip(ids, results, strict=True):
            s.execute(update(BatchItem).where(BatchItem.id == i).values(result=result, score=0.5))
        s.commit()
    return dce_id, ev_id, results


def _frames(engine, dce_id: int, ev_id: int) -> list[pd.DataFrame]:
    out = []
    for bid in (dce_id, ev_id):
        b = judges.data.batches(engine, [bid])[0]
        out.append(judges.judge_frame(engine, b))
        data = load_batch(engine, bid)
        out += [data.items, data.sentences]
    return out


def _stored(engine, batch_ids: list[int]) -> list[tuple]:
    with Session(engine) as s:
        return s.exec(
            select(BatchItem.result, BatchItem.verdicts, BatchItem.consistent, BatchItem.checker_score)
            .where(BatchItem.batch_id.in_(batch_ids))  # type: ignore[attr-defined]
            .order_by(BatchItem.id)
        ).all()


def _same(got: tuple, want: dict) -> bool:
    v, c, p = got
    close = (p is None and want["checker_score"] is None) or (
        p is not None and want["checker_score"] is not None and math.isclose(p, want["checker_score"], abs_tol=1e-9)
    )
    return v == want["verdicts"] and c == want["consistent"] and close


def test_the_migration_fills_the_columns_as_the_worker_writes_them_and_the_pages_read_the_same(db_url):
    engine = make_engine(db_url)
    dce_id, ev_id, _ = _seed(engine)
    before = _frames(engine, dce_id, ev_id)  # written without the columns: read from the results
    assert all(r[1] is None for r in _stored(engine, [dce_id, ev_id]))
    command.downgrade(alembic_config(engine), "0016")  # a database from before the columns, with these results
    engine.dispose()
    engine = make_engine(db_url, migrate=False)
    upgrade(engine)
    rows = _stored(engine, [dce_id, ev_id])
    filled = [r for r in rows if r[0] is not None]
    assert len(filled) == len(rows) - 2  # a failed item of each batch has no result
    for r in rows:
        assert _same(r[1:], result_columns.columns(r[0])), r
    assert {r[1] for r in filled} >= {"ciu", "cc", "u", "ci", ""}  # sentences of every verdict, and none
    after = _frames(engine, dce_id, ev_id)
    for a, b in zip(before, after, strict=True):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_categorical=False)
    engine.dispose()
