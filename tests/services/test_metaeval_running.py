"""A running batch read from its last read (metaeval.RunningBatches) gives what a whole read gives, at every step.

The batch moves the way workers move it (db/batches.py: claims, written results, failures, claims given back, a
dead worker's items freed, failed items queued again), and after each step the reader's items are compared with
load_batch's, column by column. A write that lands behind the reader's window is caught by its count and the
batch is read whole.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select, update
from sqlmodel import Session

from db import batches as db_batches
from db.models import Batch, BatchItem, utcnow
from services import metaeval
from tests.metaeval_seed import Item, add_batch, make_dataset

VERDICTS = ("consistent", "inconsistent", "unknown")


def _items(n: int, seed: int) -> list[Item]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(1, 5))
        rounds = [[str(v) for v in rng.choice(VERDICTS, k, p=[0.6, 0.3, 0.1])] for _ in range(int(rng.integers(1, 5)))]
        votes = [{"w1": int(rng.integers(0, 2)), "w2": int(rng.integers(0, 2))} for _ in range(k)]
        out.append(
            Item(
                rounds=rounds,
                human_score=float(rng.random()) if i % 7 else None,
                human_label=int(rng.integers(0, 2)) if i % 5 else None,
                sentence_labels=votes,
                flag=[True, False, None][i % 3],
            )
        )
    return out


def _results(engine, batch_id: int) -> dict[int, dict]:
    """The finished batch's rows by item id: what a worker writes for that item."""
    cols = [c for c in db_batches.RESULT_COLUMNS]
    with Session(engine) as s:
        rows = s.execute(
            select(BatchItem.item_id, *[getattr(BatchItem, c) for c in cols]).where(BatchItem.batch_id == batch_id)
        )
        return {int(r[0]): dict(zip(cols, r[1:], strict=True)) for r in rows}


class Run:
    """A running batch over the dataset, moved along by the db functions the workers use."""

    def __init__(self, engine, ds_id: int, items: list[Item], rerun: list[Item] | None = None):
        self.engine = engine
        self.source = _results(engine, add_batch(engine, ds_id, items))  # every item done: the results to write
        # what a second run of an item writes (other rounds and verdicts)
        self.second = _results(engine, add_batch(engine, ds_id, rerun)) if rerun else self.source
        pending = [Item(rounds=it.rounds, status="pending") for it in items]
        self.id = add_batch(engine, ds_id, pending, status="running")
        with Session(engine) as s:
            self.ids = dict(
                s.execute(select(BatchItem.item_id, BatchItem.id).where(BatchItem.batch_id == self.id)).tuples().all()
            )

    def claim(self, wid: str, n: int) -> dict[int, int]:
        with self.engine.begin() as conn:
            return db_batches.claim_items(conn=conn, batch_id=self.id, wid=wid, limit=n) or {}

    def write(self, wid: str, claimed: dict[int, int], *, fail_every: int = 0, again: bool = False) -> None:
        by_row = {v: k for k, v in self.ids.items()}
        source = self.second if again else self.source
        rows, errors = [], []
        for k, (b_id, attempt) in enumerate(sorted(claimed.items())):
            if fail_every and k % fail_every == 0:
                errors.append({"b_id": b_id, "error": "the model did not answer"})
            else:
                rows.append(source[by_row[b_id]] | {"b_id": b_id, "attempt": attempt, "status": "done"})
        with self.engine.begin() as conn:
            if rows:
                db_batches.write_results(conn=conn, rows=rows, wid=wid)
            if errors:
                db_batches.fail_items(conn=conn, errors=errors)


def _check(reader: metaeval.RunningBatches, engine, batch_id: int, *, sentences: bool = True) -> metaeval.BatchData:
    got = reader.load(engine, batch_id)
    whole = metaeval.load_batch(engine, batch_id, sentences=sentences)
    pd.testing.assert_frame_equal(got.items, whole.items, check_exact=True)
    assert got.notes == whole.notes
    assert got.batch == whole.batch
    np.testing.assert_array_equal(got.label_counts, whole.label_counts)
    if sentences:  # and the sentence verdicts with the human votes, read from the last read too
        full = reader.with_sentences(engine, got)
        pd.testing.assert_frame_equal(full.sentences, whole.sentences, check_exact=True)
        np.testing.assert_array_equal(full.votes, whole.votes)
        assert (full.n_workers, full.n_vote_items, full.n_misaligned) == (
            whole.n_workers,
            whole.n_vote_items,
            whole.n_misaligned,
        )
    return got


@pytest.mark.parametrize("margin", [timedelta(0), metaeval.RunningBatches.MARGIN])
def test_each_read_of_a_running_batch_equals_a_whole_read(engine, margin):
    items = _items(60, seed=3)
    ds = make_dataset(engine, items)
    run = Run(engine, ds, items, rerun=_items(60, seed=4))
    reader = metaeval.RunningBatches()
    reader.MARGIN = margin
    _check(reader, engine, run.id)  # nothing finished yet: read whole
    a = run.claim("a:1", 12)
    _check(reader, engine, run.id)  # claimed: running
    run.write("a:1", a, fail_every=4)
    _check(reader, engine, run.id)
    b = run.claim("b:1", 15)
    run.write("b:1", dict(list(b.items())[:9]))  # six still running
    _check(reader, engine, run.id)
    run.write("e:1", run.claim("e:1", 3))  # later finishes: b's six were claimed before the newest one
    _check(reader, engine, run.id)
    with engine.begin() as conn:  # b gives its last six back
        db_batches.release_claims(conn=conn, batch_id=run.id, workers=["b:1"])
    _check(reader, engine, run.id)
    c = run.claim("c:1", 5)
    with Session(engine) as s:  # c dies: its items are freed without a new updated_at
        db_batches.release_items_of_dead_workers(session=s, since=utcnow() + timedelta(seconds=1))
        s.commit()
    _check(reader, engine, run.id)
    assert c
    with Session(engine) as s:  # failed items queued again ("Re-run failed"): finished ones go back to pending
        db_batches.reopen(session=s, batch_id=run.id, failed_too=True)
        # and three done items with them, as a re-run of chosen items would: their rounds are replaced
        done = s.execute(
            select(BatchItem.id).where(BatchItem.batch_id == run.id, BatchItem.status == "done").limit(3)
        ).scalars()
        s.execute(
            update(BatchItem)
            .where(BatchItem.id.in_(list(done)))
            .values(status="pending", worker=None, refresh=True, updated_at=utcnow())
        )
        s.commit()
    _check(reader, engine, run.id)
    while claimed := run.claim("d:1", 10):  # the failed ones run again, with other results
        run.write("d:1", claimed, again=True)
        _check(reader, engine, run.id)
    assert reader.counts["whole"] == 1, reader.counts  # every later read came from the one before
    assert reader.counts["mismatch"] == 0
    assert reader.counts["sentences whole"] == 1 and reader.counts["sentences changes"] > 5, reader.counts
    with Session(engine) as s:  # finished: read whole, and the reader forgets it
        s.execute(update(Batch).where(Batch.id == run.id).values(status="done", finished_at=utcnow()))
        s.commit()
    _check(reader, engine, run.id)
    assert reader.counts["whole"] == 1 and not reader._last


def _running(engine, n: int, *, seed: int) -> tuple[Run, metaeval.RunningBatches]:
    """A running batch of `n` items, nothing claimed yet, and a reader that has not read it."""
    items = _items(n, seed=seed)
    return Run(engine, make_dataset(engine, items), items), metaeval.RunningBatches()


def test_a_write_behind_the_window_is_caught_and_the_batch_read_whole(engine):
    run, reader = _running(engine, 30, seed=5)
    run.write("a:1", run.claim("a:1", 10))
    _check(reader, engine, run.id)
    run.write("a:1", run.claim("a:1", 5))
    _check(reader, engine, run.id)
    assert (reader.counts["whole"], reader.counts["changes"], reader.counts["mismatch"]) == (1, 1, 0)
    late = run.claim("b:1", 3)
    run.write("b:1", late)
    with Session(engine) as s:  # as if these writes had committed long after their updated_at
        s.execute(
            update(BatchItem).where(BatchItem.id.in_(list(late))).values(updated_at=utcnow() - timedelta(hours=1))
        )
        s.commit()
    got = _check(reader, engine, run.id)
    assert reader.counts["mismatch"] == 1 and reader.counts["whole"] == 2
    assert got.done.shape[0] == 18


def test_another_batch_under_the_same_id_is_read_whole(engine):
    run, reader = _running(engine, 20, seed=8)
    run.write("a:1", run.claim("a:1", 8))
    _check(reader, engine, run.id)
    with Session(engine) as s:  # the batch's row now says it was made at another time: not the batch read before
        s.execute(update(Batch).where(Batch.id == run.id).values(created_at=utcnow() + timedelta(seconds=5)))
        s.commit()
    _check(reader, engine, run.id)
    assert reader.counts["whole"] == 2 and reader.counts["changes"] == 0
