"""What a batch spends: every call's usage kept across retries and re-runs, a delete that stops the workers
before it deletes, and a worker killed on this host whose items are taken back at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta

from sqlalchemy import update
from sqlmodel import Session, select

from db import batches as db_batches
from db.engine import make_engine
from db.models import Batch, BatchItem, BatchUsage, WorkerHeartbeat, utcnow
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, Gate, Reply, last_user, toy_judge
from tests.support.batches import BAD, EVAL, FIX, judge_backend, make_dataset
from tests.support.waiting import WAIT_LIMIT


class Counting:
    """A scripted server's side of the bill: every request, the answers it gave and the tokens it billed."""

    def __init__(self, script) -> None:
        self.script = script
        self.lock = threading.Lock()
        self.requests = self.answered = self.prompt_tokens = self.completion_tokens = 0

    def __call__(self, body: dict):
        reply = self.script(body)
        reply = reply if isinstance(reply, Reply) else Reply(content=reply if isinstance(reply, str) else "")
        with self.lock:
            self.requests += 1
            if reply.status == 200:
                reply.usage = (100 + self.requests, 7 + self.requests % 3)  # what the server bills
                self.answered += 1
                self.prompt_tokens += reply.usage[0]
                self.completion_tokens += reply.usage[1]
        return reply


def _as_reply(obj) -> Reply:
    import json

    return obj if isinstance(obj, Reply) else Reply(content=obj if isinstance(obj, str) else json.dumps(obj))


def test_a_batch_counts_every_request_the_endpoint_got_across_malformed_answers_retries_and_a_rerun(file_engine):
    """Re-running failed items used to replace their usage with the last attempt's: the retries and the
    malformed answers the server billed vanished from the batch's cost."""
    judge_fn = toy_judge(BAD, FIX)
    state = {"broken": True, "refusals": 0}

    def script(body):
        prompt = last_user(body)
        if "\nSummary\n\n" not in prompt:  # asked to repair a malformed answer: more nonsense
            return _as_reply("still not JSON")
        if state["broken"] and ("Item 1:" in prompt or "Item 4:" in prompt):
            if "Item 1:" in prompt and state["refusals"] < 2:  # refused twice, then answered with nonsense
                state["refusals"] += 1
                return Reply(status=503, headers={"retry-after": "0"})
            return _as_reply("this is not the JSON that was asked for")
        return _as_reply(judge_fn(body))

    server = Counting(script)
    with FakeOpenAIServer(responder=server) as fake:
        ds = make_dataset(file_engine, 6)
        backend = judge_backend(fake).with_changes(max_retries=2)
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=backend, cfg=EVAL, concurrency=2)
        batches.process_batch(file_engine, bid)
        before = batches.progress(file_engine, bid)
        assert before.failed == 2 and before.done == 4
        assert server.requests == len(fake.requests) > 8, "refusals and repair requests reached the server"
        assert (before.calls, before.answered) == (server.requests, server.answered)
        assert before.retries == 2

        state["broken"] = False
        assert batches.reopen(file_engine, bid, failed_too=True) == 2
        batches.process_batch(file_engine, bid)
        after = batches.progress(file_engine, bid)
        assert after.done == 6 and after.failed == 0
        assert len(fake.requests) == server.requests
    # What the batch says it cost is what the endpoint was sent and billed, retries and nonsense included.
    assert (after.calls, after.answered, after.retries) == (server.requests, server.answered, 2)
    assert (after.prompt_tokens, after.completion_tokens) == (server.prompt_tokens, server.completion_tokens)
    assert after.calls > before.calls and after.prompt_tokens > before.prompt_tokens, "the re-run adds, never replaces"
    # One usage row per call, whatever became of its answer, adding up to the same.
    with file_engine.connect() as conn:
        ledger = db_batches.call_totals(conn=conn, batch_id=bid)
    assert (ledger["calls"], ledger["answered"]) == (server.requests, server.answered)
    assert (ledger["prompt_tokens"], ledger["completion_tokens"]) == (server.prompt_tokens, server.completion_tokens)
    # The item table's usage (what the judges' cost per document and the exports read) adds up to it too.
    with Session(file_engine) as s:
        rows = list(s.exec(select(BatchItem).where(BatchItem.batch_id == bid)))
    assert sum(r.calls for r in rows) == server.requests
    assert sum(r.prompt_tokens for r in rows) == server.prompt_tokens


def test_a_deleted_running_batch_sends_nothing_more_and_writes_nothing(file_engine):
    """34 more calls used to go out after a running batch was deleted: its workers went on with their items."""
    judge_fn = toy_judge(BAD, FIX)
    gate = Gate()

    def held(body):
        gate.passes(len(gate.seen))
        return judge_fn(body)

    with FakeOpenAIServer(responder=held) as fake:
        ds = make_dataset(file_engine, 40)
        backend = judge_backend(fake).with_changes(timeout=WAIT_LIMIT)
        cfg = EVAL.__class__(max_rounds=2)  # an item asks again after its first answer: rounds of RAI
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=backend, cfg=cfg, concurrency=3)
        done: dict[str, object] = {}
        worker = threading.Thread(target=lambda: done.setdefault("stats", batches.process_batch(file_engine, bid)))
        worker.start()
        gate.wait_for(lambda g: len(g.held) == 3, "three requests in flight")
        assert batches.delete_batch(file_engine, bid, wait=WAIT_LIMIT) is True  # once the worker let go
        sent = len(fake.requests)
        gate.open()  # the answers in flight arrive after the delete
        worker.join(WAIT_LIMIT)
        assert not worker.is_alive()
        assert len(fake.requests) == sent == 3, "nothing more reached the endpoint after the delete"
    with Session(file_engine) as s:
        assert s.get(Batch, bid) is None
        assert not list(s.exec(select(BatchItem).where(BatchItem.batch_id == bid)))
        assert not list(s.exec(select(BatchUsage).where(BatchUsage.batch_id == bid)))


def test_a_batch_nobody_works_on_is_deleted_at_once_and_a_held_one_waits_for_its_workers(file_engine, monkeypatch):
    ds = make_dataset(file_engine, 4)
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        idle = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        assert batches.delete_batch(file_engine, idle, wait=0) is True
        assert batches.delete_batch(file_engine, idle, wait=0) is False, "no such batch"
        held = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        batches.heartbeat(file_engine, "elsewhere:1")
        batches.claim(file_engine, held, "elsewhere:1", 2)  # a live worker on another machine holds two items
        assert batches.delete_batch(file_engine, held, wait=0) is None
        assert batches.progress(file_engine, held).batch.status == "deleting"
        assert batches.claim(file_engine, held, "here:1", 4) == [], "nothing more is claimed"
        assert not batches.joinable(file_engine)
        batches.release_own(file_engine, held, "elsewhere:1")  # it sees the request and lets go
        batches.recover(file_engine)  # the workers' housekeeping finishes the delete
        assert batches.progress(file_engine, held) is None


WORKER = """
import sys
from db.engine import make_engine
from services.jobs import batches
batches.process_batch(make_engine(sys.argv[1]), int(sys.argv[2]))
"""


def test_a_worker_killed_on_this_host_has_its_items_taken_back_before_its_heartbeat_is_stale(tmp_path):
    """Its items used to wait WORKER_STALE_AFTER (90 s) though its process was gone."""
    gate = Gate()
    judge_fn = toy_judge(BAD, FIX)

    def hold(body):
        gate.passes()
        return judge_fn(body)

    url = f"sqlite:///{tmp_path}/kill.db"
    engine = make_engine(url)
    with FakeOpenAIServer(responder=hold) as fake:
        ds = make_dataset(engine, 6)
        backend = judge_backend(fake).with_changes(timeout=WAIT_LIMIT)
        bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=EVAL, concurrency=2)
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        proc = subprocess.Popen([sys.executable, "-c", WORKER, url, str(bid)], env=env)
        gate.wait_for(lambda g: len(g.held) == 2, "the worker's requests in flight")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        gate.open()
        wid = f"{os.uname().nodename}:{proc.pid}"
        with Session(engine) as s:
            running = list(s.exec(select(BatchItem).where(BatchItem.status == "running")))
        assert running and {r.worker for r in running} == {wid}
        # Its last heartbeat is a few seconds old (two beats missed), far from the 90 s stale limit.
        with engine.begin() as conn:
            conn.execute(
                update(WorkerHeartbeat)
                .where(WorkerHeartbeat.id == wid)
                .values(heartbeat_at=utcnow() - timedelta(seconds=10))
            )
        assert batches.recover(engine, stale_after=timedelta(seconds=90)) == [bid]
        with Session(engine) as s:
            assert not list(s.exec(select(BatchItem).where(BatchItem.status == "running")))
        batches.process_batch(engine, bid)
        assert batches.progress(engine, bid).done == 6
    engine.dispose()


def test_a_worker_on_another_machine_keeps_its_items_until_its_heartbeat_is_stale(file_engine):
    ds = make_dataset(file_engine, 2)
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        batches.claim(file_engine, bid, "another-host:999999", 2)  # no such pid here, but not this machine
        with Session(file_engine) as s:
            s.add(WorkerHeartbeat(id="another-host:999999", heartbeat_at=utcnow() - timedelta(seconds=30)))
            s.commit()
        assert batches.recover(file_engine, stale_after=timedelta(seconds=90)) == []
        assert {r for (r,) in db_rows(file_engine, bid)} == {"running"}


def db_rows(engine, bid):
    with engine.connect() as conn:
        return conn.execute(select(BatchItem.status).where(BatchItem.batch_id == bid)).all()
