"""The meta-evaluation's queries, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from db import metaeval as db
from db.engine import get_session
from tests.metaeval_seed import Item, seed

C, X = "consistent", "inconsistent"
ITEMS = [
    Item([[C, C]], human_score=1.0, human_label=1, sentence_labels=[{"w1": 1}, {"w1": 1, "w2": 0}]),
    Item([[C, X]], human_score=0.5, human_label=0),
    Item([[X]], human_score=0.0, human_label=0, status="failed"),
]


def test_batch_stamp_counts_finished_items_and_names_a_missing_batch(engine):
    _, bid = seed(engine, ITEMS)
    with get_session(engine) as session:
        stamp = db.batch_stamp(session=session, batch_id=bid)
        assert stamp.startswith("done|") and stamp.split("|")[2] == "3"
        assert db.batch_stamp(session=session, batch_id=bid + 99) == "missing"


def test_batch_with_dataset_and_batches_by_id_leave_out_unknown_ids(engine):
    ds, bid = seed(engine, ITEMS)
    with get_session(engine) as session:
        batch, dataset = db.batch_with_dataset(session=session, batch_id=bid)
        assert (batch.id, dataset.id) == (bid, ds)
        assert db.batch_with_dataset(session=session, batch_id=bid + 99) is None
        assert list(db.batches_by_id(session=session, batch_ids=[bid + 99, bid])) == [bid]


def test_item_rows_follow_the_dataset_order(engine):
    _, bid = seed(engine, ITEMS)
    with get_session(engine) as session:
        rows = db.item_rows(session=session, batch_id=bid)
        full = db.item_result_rows(session=session, batch_id=bid)
    assert [r[1] for r in rows] == ["x0", "x1", "x2"]
    assert [r[2] for r in rows] == ["done", "done", "failed"]
    assert [tuple(r[: len(db.ITEM_COLUMNS)]) for r in full] == [tuple(r) for r in rows]
    assert full[0][-1] == [{"w1": 1}, {"w1": 1, "w2": 0}]


def test_sentence_labels_and_human_judgments_of_one_dataset(engine):
    ds, bid = seed(engine, ITEMS)
    other, other_bid = seed(engine, ITEMS[:1], name="other")
    with get_session(engine) as session:
        assert db.sentence_labels(session=session, dataset_id=ds) == [ITEMS[0].sentence_labels, None, None]
        ids = list(db.reference_ids(session=session, batch_id=bid))
        other_ids = list(db.reference_ids(session=session, batch_id=other_bid))
        judged = db.human_judgments(session=session, dataset_id=other, item_ids=ids + other_ids)
    assert [tuple(r) for r in judged] == [(other_ids[0], 1.0, 1)]


def test_baseline_values_are_read_in_chunks_and_only_for_the_asked_metrics(engine, monkeypatch):
    ds, bid = seed(engine, ITEMS)
    with get_session(engine) as session:
        ids = sorted(db.reference_ids(session=session, batch_id=bid))
    rows = [{"item_id": i, "metric": m, "value": 0.5} for i in ids for m in ("rouge2_precision", "other")]
    with get_session(engine) as session:
        assert db.baseline_stamp(session=session, dataset_id=ds) == "0|None"
        db.add_baseline_values(session=session, rows=rows)
    monkeypatch.setattr(db, "_CHUNK", 2)
    with get_session(engine) as session:
        got = db.baseline_rows(session=session, item_ids=ids, metrics=["rouge2_precision"])
        assert db.baseline_stamp(session=session, dataset_id=ds).startswith("6|")
        texts = db.item_texts(session=session, item_ids=ids)
    assert sorted(r[1] for r in got) == ids
    assert {r[2] for r in got} == {"rouge2_precision"}
    assert texts[ids[0]][0].startswith("Reference 0.")


def test_sqlite_json_rows_count_votes_and_workers(engine):
    if engine.dialect.name != "sqlite":
        pytest.skip("the JSON queries are SQLite's")
    _, bid = seed(engine, ITEMS)
    with get_session(engine) as session:
        votes = db.sqlite_json_rows(session=session, query="votes", batch_id=bid)
        workers = db.sqlite_json_rows(session=session, query="workers", batch_id=bid)
    assert sorted(tuple(v[1:]) for v in votes) == [(0, 1, 1), (1, 1, 2)]
    assert workers[0][0] == 2
