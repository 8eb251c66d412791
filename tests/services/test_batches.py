"""Batches: claiming, processing, cache, cancel, re-run, and resume after a worker is killed."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from db.engine import make_engine
from db.models import BatchItem, DatasetItem, WorkerHeartbeat, utcnow
from services import dcr
from services.jobs import batches
from services.text import InputError
from tests.fakes import FakeOpenAIServer, Gate, Reply, last_user, toy_judge
from tests.support.batches import BAD, EVAL, FIX, judge_backend, make_dataset
from tests.support.waiting import WAIT_LIMIT, wait_until


@pytest.fixture
def judge():
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        yield fake


def items(engine, batch_id) -> list[BatchItem]:
    with Session(engine) as s:
        return list(s.exec(select(BatchItem).where(BatchItem.batch_id == batch_id).order_by(BatchItem.id)))


def test_a_batch_judges_every_item_and_records_scores_usage_and_results(file_engine, judge):
    ds = make_dataset(file_engine, 6)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL, concurrency=3)
    stats = batches.process_batch(file_engine, bid)
    assert stats.processed == 6 and stats.failed == 0
    rows = items(file_engine, bid)
    assert [r.status for r in rows] == ["done"] * 6
    assert [r.score for r in rows] == [0.5, 1.0] * 3  # the sentence with 47 million is inconsistent
    assert all(r.calls == 1 and r.n_sentences == 2 and r.result["rounds"][0]["sentences"] for r in rows)
    # what the pages read of each result is written next to it: round 0's verdicts, a letter per sentence
    assert [r.verdicts for r in rows] == ["ic", "cc"] * 3 and [r.consistent for r in rows] == [0, 1] * 3
    p = batches.progress(file_engine, bid)
    assert p.batch.status == "done" and (p.done, p.failed, p.pending, p.calls) == (6, 0, 0, 6)
    assert len(judge.requests) == 6


def test_retries_are_counted_apart_from_answered_calls_and_the_cost_is_tokens_at_the_prices_set(file_engine, judge):
    """A 503 the SDK retries is a request sent, not an answer: 3 items, 2 refusals first, 5 requests, 3 answers."""
    ds = make_dataset(file_engine, 3)
    backend = judge_backend(judge, price_input_per_million=2.0, price_output_per_million=10.0)
    backend = backend.with_changes(max_retries=2)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=backend, cfg=EVAL, concurrency=1)
    judge.enqueue_status(503, headers={"retry-after": "0"})
    judge.enqueue_status(503, headers={"retry-after": "0"})
    batches.process_batch(file_engine, bid)
    p = batches.progress(file_engine, bid)
    assert p.done == 3 and len(judge.requests) == 5
    assert (p.calls, p.answered, p.retries) == (5, 3, 2)
    rows = items(file_engine, bid)
    pt, ct = sum(r.prompt_tokens for r in rows), sum(r.completion_tokens for r in rows)
    assert pt > 0 and ct > 0 and (p.prompt_tokens, p.completion_tokens) == (pt, ct)
    spent = p.spent(backend)  # the prices set on Settings, for this model at this endpoint
    assert spent.cost_usd == pytest.approx((pt * 2.0 + ct * 10.0) / 1e6)
    assert "at $2 / $10 per million" in spent.summary()
    other = p.spent(backend.with_changes(model="another-model"))
    assert other.cost_usd is None and "for `another-model`" in other.summary()


def test_rounds_in_a_batch_repair_the_inconsistent_items(file_engine, judge):
    ds = make_dataset(file_engine, 4)
    cfg = dcr.DCRConfig(max_rounds=2)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=cfg)
    batches.process_batch(file_engine, bid)
    rows = items(file_engine, bid)
    bad = [r for r in rows if r.score < 1]
    assert bad and all(r.final_score == 1.0 and r.n_rounds == 2 for r in bad)
    assert all(FIX in r.result["final_candidate"] for r in bad)


def test_finished_items_are_never_sent_again_and_the_cache_serves_a_repeat(file_engine, judge):
    ds = make_dataset(file_engine, 5)
    b1 = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL)
    batches.process_batch(file_engine, b1)
    sent = len(judge.requests)
    batches.process_batch(file_engine, b1)  # a duplicate task for a finished batch
    assert len(judge.requests) == sent
    b2 = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL)
    batches.process_batch(file_engine, b2)
    assert len(judge.requests) == sent, "the same evaluation again is served from the cache"
    p = batches.progress(file_engine, b2)
    assert p.calls == 0 and p.cache_hits == 5 and p.done == 5


def test_claims_never_overlap(file_engine, judge):
    ds = make_dataset(file_engine, 10)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL)
    a = batches.claim(file_engine, bid, "a", 4)
    b = batches.claim(file_engine, bid, "b", 4)
    c = batches.claim(file_engine, bid, "c", 4)
    assert len(a) == 4 and len(b) == 4 and len(c) == 2
    assert not set(a) & set(b) and not set(b) & set(c)
    assert batches.claim(file_engine, bid, "d", 4) == []


def test_failed_items_keep_their_reason_and_a_rerun_finishes_them(file_engine):
    state = {"fail": True}
    judge_fn = toy_judge(BAD, FIX)

    def flaky(body):
        if state["fail"] and "Item 1:" in last_user(body):
            return Reply(status=500, body={"error": {"message": "boom"}})
        return judge_fn(body)

    with FakeOpenAIServer(responder=flaky) as fake:
        ds = make_dataset(file_engine, 3)
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        batches.process_batch(file_engine, bid)
        rows = items(file_engine, bid)
        assert [r.status for r in rows] == ["done", "failed", "done"]
        assert "500" in rows[1].error and rows[1].score is None
        assert batches.progress(file_engine, bid).batch.status == "done"

        state["fail"] = False
        sent = len(fake.requests)
        assert batches.reopen(file_engine, bid, failed_too=True) == 1
        batches.process_batch(file_engine, bid)
        rows = items(file_engine, bid)
        assert [r.status for r in rows] == ["done"] * 3 and rows[1].attempts == 2
        assert len(fake.requests) == sent + 1, "only the failed item went to the model again"


def test_cancel_stops_claiming_and_resume_finishes(file_engine, judge):
    ds = make_dataset(file_engine, 8)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL, concurrency=1)
    batches.request_cancel(file_engine, bid)
    batches.process_batch(file_engine, bid)
    p = batches.progress(file_engine, bid)
    assert p.batch.status == "cancelled" and p.pending == 8 and not judge.requests
    assert batches.reopen(file_engine, bid) == 8
    batches.process_batch(file_engine, bid)
    assert batches.progress(file_engine, bid).done == 8


def test_recover_returns_items_of_dead_workers_and_names_batches_without_one(file_engine, judge):
    ds = make_dataset(file_engine, 4)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL)
    taken = batches.claim(file_engine, bid, "ghost:1", 2)
    with Session(file_engine) as s:
        s.add(WorkerHeartbeat(id="ghost:1", heartbeat_at=utcnow() - timedelta(minutes=5)))
        for r in s.exec(select(BatchItem).where(BatchItem.batch_id == bid)):
            r.updated_at = utcnow() - timedelta(minutes=5)
            s.add(r)
        s.commit()
    assert batches.recover(file_engine) == [bid]
    assert {r.id: r.status for r in items(file_engine, bid)} == {
        i: "pending" for i in [r.id for r in items(file_engine, bid)]
    }
    assert batches.recover(file_engine) == [], "just enqueued: not again at once"
    batches.process_batch(file_engine, bid)
    assert batches.progress(file_engine, bid).done == 4 and taken


def test_a_live_workers_items_are_left_alone(file_engine, judge):
    ds = make_dataset(file_engine, 2)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(judge), cfg=EVAL)
    batches.heartbeat(file_engine, "alive:1")
    batches.claim(file_engine, bid, "alive:1", 2)
    assert batches.recover(file_engine) == []
    assert {r.status for r in items(file_engine, bid)} == {"running"}


def test_unknown_dataset_or_empty_dataset_is_refused(file_engine, judge):
    with pytest.raises(InputError):
        batches.create_batch(file_engine, dataset_id=99, backend=judge_backend(judge), cfg=EVAL)


WORKER = """
import sys
from db.engine import make_engine
from services.jobs import batches
batches.process_batch(make_engine(sys.argv[1]), int(sys.argv[2]))
"""


def test_a_worker_killed_mid_batch_resumes_without_losing_or_redoing_finished_items(tmp_path):
    judge_fn = toy_judge(BAD, FIX)
    gate = Gate()  # the first 6 requests are answered, the rest wait: the kill comes mid-batch on any machine
    answered = itertools.count()

    def first_six(body):
        if next(answered) >= 6:
            gate.passes()
        return judge_fn(body)

    url = f"sqlite:///{tmp_path}/kill.db"
    engine = make_engine(url)
    with FakeOpenAIServer(responder=first_six) as fake:
        ds = make_dataset(engine, 30)
        backend = judge_backend(fake).with_changes(timeout=WAIT_LIMIT)
        bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=EVAL, concurrency=2)
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        proc = subprocess.Popen([sys.executable, "-c", WORKER, url, str(bid)], env=env)
        wait_until(lambda: batches.progress(engine, bid).done >= 6, "6 items done")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        gate.open()
        before = {r.id: r for r in items(engine, bid) if r.status == "done"}
        assert 6 <= len(before) < 30, "killed mid-batch"
        sent_before = len(fake.requests)

        # The dead worker's claims go back to the queue once its heartbeat is stale.
        assert batches.recover(engine, stale_after=timedelta(seconds=0)) == [bid]
        batches.process_batch(engine, bid)
        after = items(engine, bid)
        assert [r.status for r in after] == ["done"] * 30
        for r in after:
            if r.id in before:  # finished before the kill: untouched, not sent again
                assert r.attempts == 1 and r.updated_at == before[r.id].updated_at and r.result == before[r.id].result
        # Items finished before the kill were not sent again; each other item was judged after it.
        resent_items = Counter(
            m.group(1) for m in (re.search(r"Item (\d+):", last_user(b)) for b in fake.requests[sent_before:]) if m
        )
        with Session(engine) as s:
            ext = {r.id: s.get(DatasetItem, r.item_id).external_id.lstrip("x") for r in after}
        assert not {ext[i] for i in before} & set(resent_items)
        assert set(resent_items) == {ext[r.id] for r in after if r.id not in before}
        assert all(n == 1 for n in resent_items.values())
    engine.dispose()


def test_rerun_failed_on_a_cancelled_batch_asks_only_the_failed_item_again_and_replaces_its_cached_answer(
    file_engine,
):
    """Re-run failed used to resume the whole cancelled batch, and to read the failed item's cached answer again."""
    state = {"bad": True}
    judge_fn = toy_judge(BAD, FIX)
    stop = threading.Event()
    ds = make_dataset(file_engine, 8)

    def flaky(body):
        if state["bad"] and "Item 1:" in last_user(body):
            # "Cancel" is pressed while the model answers item 1; the worker hears of it at once
            batches.request_cancel(file_engine, bid)
            stop.set()
            return {"reason": [], "is_consistent": True}  # reads as JSON, judges no sentence: the item fails
        return judge_fn(body)

    with FakeOpenAIServer(responder=flaky) as fake:
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL, concurrency=1)
        batches.process_batch(file_engine, bid, stop=stop)
        p = batches.progress(file_engine, bid)
        assert p.batch.status == "cancelled" and p.failed == 1 and p.pending >= 4
        pending_before, sent = p.pending, len(fake.requests)
        (failed,) = batches.failed_items(file_engine, bid)
        assert failed.answers and '"reason": []' in failed.answers[0]["raw"]  # the raw answer, to read

        state["bad"] = False
        assert batches.reopen(file_engine, bid, failed_too=True) == 1
        batches.process_batch(file_engine, bid)
        p = batches.progress(file_engine, bid)
        assert len(fake.requests) == sent + 1, "only the failed item went to the model, past its cached answer"
        assert p.failed == 0 and p.pending == pending_before, "the cancelled batch's other items were not run"
        assert p.batch.status == "cancelled" and not p.batch.retry_only
        row = next(r for r in items(file_engine, bid) if r.result and "Item 1:" in r.result["final_candidate"])
        assert row.status == "done" and not row.refresh and row.cache_hits == 0

        # The good answer replaced the bad one in the cache: Resume (or another batch) reads it.
        assert batches.reopen(file_engine, bid) == pending_before
        batches.process_batch(file_engine, bid)
        again = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        sent = len(fake.requests)
        batches.process_batch(file_engine, again)
        assert len(fake.requests) == sent and batches.progress(file_engine, again).failed == 0
