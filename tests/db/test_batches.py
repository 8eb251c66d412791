"""The batch queries on both backends: adding a batch, claims with attempt numbers, fenced writes, reopening."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from sqlmodel import Session

from db import batches as db_batches
from db import datasets as db_datasets
from db.models import Batch
from tests.support.batches import make_dataset


def _batch(engine, n: int = 3, *, dataset_id: int | None = None, **columns) -> int:
    ds = dataset_id if dataset_id is not None else make_dataset(engine, n)
    with Session(engine) as session:
        ids = db_datasets.item_ids(session=session, dataset_id=ds)
        bid = db_batches.add_batch(
            session=session,
            data=Batch(**({"name": "b"} | columns), dataset_id=ds, n_items=len(ids)),
            item_ids=ids,
            window=2,
            sample=1,
            repeat_group="g",
        )
        session.commit()
    return bid


def test_a_new_batch_has_every_item_pending_and_its_options(engine):
    bid = _batch(engine, 4)
    with Session(engine) as session:
        assert db_batches.count_items(session=session, batch_id=bid, statuses=("pending",)) == 4
        opts = db_batches.get_options(session=session, batch_id=bid)
        assert (opts.window, opts.sample, opts.repeat_group) == (2, 1, "g")
        assert db_batches.get_options(session=session, batch_id=bid + 1) is None
        assert [b.id for b in db_batches.list_batches(session=session)] == [bid]


def test_claims_raise_the_attempt_and_only_the_current_claim_writes(engine):
    bid = _batch(engine, 3)
    with engine.begin() as conn:
        first = db_batches.claim_items(conn=conn, batch_id=bid, wid="a:1", limit=2)
    assert len(first) == 2 and set(first.values()) == {1}
    with engine.begin() as conn:
        rest = db_batches.claim_items(conn=conn, batch_id=bid, wid="b:1", limit=5)
        assert list(rest.values()) == [1] and not set(rest) & set(first)
        assert db_batches.claim_items(conn=conn, batch_id=bid, wid="b:1", limit=5) == {}, "none pending"
    item, attempt = next(iter(first.items()))
    with engine.begin() as conn:
        assert db_batches.holds(conn=conn, batch_item_id=item, wid="a:1", attempt=attempt)
        assert not db_batches.holds(conn=conn, batch_item_id=item, wid="b:1", attempt=attempt)
        row = {"b_id": item, "status": "done", "score": 1.0}
        assert db_batches.write_results(conn=conn, rows=[row | {"attempt": attempt + 1}], wid="a:1") == []
        assert db_batches.write_results(conn=conn, rows=[row | {"attempt": attempt}], wid="a:1") == [
            row | {"attempt": attempt}
        ]
    with Session(engine) as session:
        assert db_batches.count_items(session=session, batch_id=bid, statuses=("done",)) == 1


def test_reopen_requeues_failed_items_and_settle_finishes_the_batch(engine):
    bid = _batch(engine, 2)
    with engine.begin() as conn:
        claimed = db_batches.claim_items(conn=conn, batch_id=bid, wid="a:1", limit=2)
        db_batches.fail_items(conn=conn, errors=[{"b_id": i, "error": "too long"} for i in claimed])
    with Session(engine) as session:
        assert db_batches.reopen(session=session, batch_id=bid, failed_too=False) == 0
        session.commit()
        assert db_batches.get_batch(session=session, batch_id=bid).status == "done"
        assert db_batches.reopen(session=session, batch_id=bid, failed_too=True) == 2
        session.commit()
        assert db_batches.get_batch(session=session, batch_id=bid).status == "queued"
        assert db_batches.delete_batch(session=session, batch_id=bid)
        session.commit()
        assert db_batches.get_batch(session=session, batch_id=bid) is None
        assert not db_batches.delete_batch(session=session, batch_id=bid)


def test_same_configuration_matches_the_given_columns_newest_first(engine):
    older = _batch(engine, 1, name="cli: f", method="dce")
    with Session(engine) as session:
        ds = db_batches.get_batch(session=session, batch_id=older).dataset_id
    newer = _batch(engine, dataset_id=ds, name="cli: f", method="dce")
    other = _batch(engine, dataset_id=ds, name="cli: f", method="sent-nli")
    unnamed = _batch(engine, dataset_id=ds, name="f", method="dce")
    with engine.connect() as conn:
        rows = db_batches.same_configuration(conn=conn, dataset_id=ds, name_prefix="cli: ", match={"method": "dce"})
    assert [r[0] for r in rows] == [newer, older]
    assert other not in [r[0] for r in rows] and unnamed not in [r[0] for r in rows]
    assert [(r[1], r[2], r[3]) for r in rows] == [(2, 1, "g")] * 2


def test_a_running_batchs_counts_read_indexes_not_its_rows(engine):
    """The Batches page polls a running batch's counts every 1.5 s: both queries are answered from covering
    indexes (SQLite's query plan says so), never by reading the rows with their results."""
    if engine.dialect.name != "sqlite":
        pytest.skip("the query plan read here is SQLite's")
    from datetime import timedelta

    from sqlalchemy import event

    from db import estimates as db_estimates
    from db.models import utcnow

    bid = _batch(engine, 3)
    seen: list[tuple[str, object]] = []

    def keep(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        with Session(engine) as session:
            totals = db_batches.status_totals(session=session, batch_id=bid)
            n, _ = db_estimates.recent_finishes(session=session, batch_id=bid, since=utcnow() - timedelta(minutes=2))
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    assert [(r[0], r[1]) for r in totals] == [("pending", 3)] and n == 0
    assert len(seen) == 2
    with engine.connect() as conn:
        for statement, parameters in seen:
            plan = " ".join(r[-1] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters))
            assert "USING COVERING INDEX" in plan, (statement, plan)


def _claim(engine, bid: int, wid: str, n: int) -> dict[int, int]:
    with engine.begin() as conn:
        return db_batches.claim_items(conn=conn, batch_id=bid, wid=wid, limit=n)


def _states(engine, bid: int) -> dict[int, tuple[str, str | None]]:
    from sqlalchemy import select

    from db.models import BatchItem

    with engine.connect() as conn:
        rows = conn.execute(select(BatchItem.id, BatchItem.status, BatchItem.worker).where(BatchItem.batch_id == bid))
        return {i: (s, w) for i, s, w in rows}


def test_a_batch_being_deleted_gives_no_claim_and_reads_as_stopping(engine):
    bid = _batch(engine, 3)
    with engine.begin() as conn:
        assert db_batches.stop_state(conn=conn, batch_id=bid) == (False, False)
        assert db_batches.mark_deleting(conn=conn, batch_id=bid)
        assert not db_batches.mark_deleting(conn=conn, batch_id=bid + 1), "no such batch"
        assert db_batches.stop_state(conn=conn, batch_id=bid) == (True, True)
        assert db_batches.stop_state(conn=conn, batch_id=bid + 1) == (True, True), "a batch that is gone"
    assert _claim(engine, bid, "a:1", 3) == {}
    with Session(engine) as session:
        assert db_batches.deleting(session=session) == [bid]
        assert db_batches.delete_batch(session=session, batch_id=bid, if_free=True)
        session.commit()


def test_a_held_batch_is_deleted_only_once_its_items_are_let_go(engine):
    bid = _batch(engine, 3)
    _claim(engine, bid, "a:1", 2)
    with Session(engine) as session:
        assert not db_batches.delete_batch(session=session, batch_id=bid, if_free=True)
    with engine.begin() as conn:
        assert db_batches.release_claims(conn=conn, batch_id=bid, workers=["a:1"]) == 2
    with Session(engine) as session:
        assert db_batches.delete_batch(session=session, batch_id=bid, if_free=True)
        session.commit()
        assert db_batches.get_batch(session=session, batch_id=bid) is None


def test_the_claims_of_gone_workers_are_released_in_every_batch(engine):
    ds = make_dataset(engine, 3)
    first, second, third = (_batch(engine, dataset_id=ds) for _ in range(3))
    _claim(engine, first, "gone:1", 2)
    _claim(engine, second, "gone:1", 1)
    kept = _claim(engine, third, "alive:2", 1)
    with engine.begin() as conn:
        assert sorted(db_batches.claim_holders(conn=conn, batch_id=None)) == ["alive:2", "gone:1"]
        assert db_batches.claim_holders(conn=conn, batch_id=third) == ["alive:2"]
        assert db_batches.release_claims_of(conn=conn, workers=["gone:1"]) == [first, second]
    assert {s for s, _ in _states(engine, first).values()} | {s for s, _ in _states(engine, second).values()} == {
        "pending"
    }
    assert [_states(engine, third)[i] for i in kept] == [("running", "alive:2")]
    with Session(engine) as session:
        with session.begin():
            session.execute(update(Batch).where(Batch.id == first).values(status="running"))
        assert db_batches.needing_a_worker(session=session, batch_ids=[first, third]) == [first]


def test_every_attempts_usage_adds_up_and_a_set_aside_result_goes_only_where_none_is(engine):
    bid = _batch(engine, 3)
    (a, b, c) = sorted(_states(engine, bid))
    call = {"stage": "dce", "prompt_version": "v", "cached": False, "error": None, "latency_ms": 1.0}
    one = call | {"requests": 2, "answered": 1, "prompt_tokens": 10, "completion_tokens": 3}
    usage = {"calls": 2, "answered": 1, "cache_hits": 0, "prompt_tokens": 10, "completion_tokens": 3}
    claimed = _claim(engine, bid, "a:1", 2)
    with engine.begin() as conn:
        # a: written under its claim; b: usage only (stopped half way); both attempts' calls counted
        rows = [
            {"b_id": a, "attempt": claimed[a], "status": "done", "score": 1.0, "call_records": [one]} | usage,
            {"b_id": b, "attempt": claimed[b], "usage_only": True, "call_records": [one]} | usage,
        ]
        assert [r["b_id"] for r in db_batches.write_results(conn=conn, rows=rows, wid="a:1")] == [a]
        db_batches.add_usage(conn=conn, rows=[{"b_id": a, "call_records": [one]} | usage])  # a re-run of a
        totals = db_batches.call_totals(conn=conn, batch_id=bid)
    assert (totals["records"], totals["calls"], totals["answered"], totals["prompt_tokens"]) == (3, 6, 3, 30)
    with Session(engine) as session:
        rows = {r[0]: r for r in db_batches.status_totals(session=session, batch_id=bid)}
    assert sum(int(r[2]) for r in rows.values()) == 6 and sum(int(r[7]) for r in rows.values()) == 30
    # Results set aside by a worker that is gone: written to its own claim (b) and to a pending item (c), never
    # over a finished one (a).
    with engine.begin() as conn:
        back = [{"b_id": i, "status": "done", "score": 0.5} for i in (a, b, c)]
        assert db_batches.write_set_aside(conn=conn, rows=back, wid="a:1") == 2
    states = _states(engine, bid)
    assert [states[i][0] for i in (a, b, c)] == ["done", "done", "done"]
    with Session(engine) as session:
        from db.models import BatchItem

        assert session.get(BatchItem, a).score == 1.0 and session.get(BatchItem, c).score == 0.5
