"""Fencing: a worker that paused past the stale limit neither sends nor writes items another worker took over."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlmodel import Session

from db import batches as db_batches
from db.engine import make_engine
from db.models import BatchItem, DatasetItem, WorkerHeartbeat, utcnow
from services.config import Settings
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, Gate, last_user, toy_judge
from tests.support.batches import BAD, EVAL, FIX, judge_backend, make_dataset
from tests.support.waiting import WAIT_LIMIT, wait_until

# Short worker timings for the test, through the same settings a deployment uses.
TIMINGS = {"WORKER_STALE_AFTER": "4", "WORKER_HEARTBEAT": "0.5", "DB_BUSY_TIMEOUT": "2"}


def _item_of(body: dict) -> str:
    return "x" + re.search(r"Item (\d+):", last_user(body)).group(1)


def _status_by_item(engine, batch_id: int) -> dict[str, tuple[str, str | None, int]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(DatasetItem.external_id, BatchItem.status, BatchItem.worker, BatchItem.attempts)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id)
        ).all()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _stopped(proc: subprocess.Popen) -> bool:
    """True once the process is in the stopped state (SIGSTOP is delivered asynchronously)."""
    with open(f"/proc/{proc.pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def _writable(db_file) -> bool:
    """Whether a write transaction can begin on the SQLite file (waiting a moment for a running writer)."""
    conn = sqlite3.connect(db_file, timeout=2)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.rollback()
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _pause_holding_no_lock(proc: subprocess.Popen, db_file) -> None:
    """SIGSTOP the worker at a moment when it holds no write lock on the database.

    A process stopped inside a write transaction (a heartbeat, say) keeps SQLite's one write lock until it
    runs again: no other worker can write, take its items over or even beat, and no fencing changes that. On
    a busy machine such a moment is likely enough to hit, so the test pauses, checks, and tries again."""
    for _ in range(50):
        proc.send_signal(signal.SIGSTOP)
        wait_until(lambda: _stopped(proc), "the worker stopped")
        if _writable(db_file):
            return
        proc.send_signal(signal.SIGCONT)
    raise AssertionError("the worker held the database's write lock at every one of 50 pauses")


def test_a_paused_worker_sends_and_writes_nothing_another_worker_finished(tmp_path):
    """Two worker processes; one is stopped (SIGSTOP) past the stale limit, the other takes its items over
    and finishes them, then the first resumes (SIGCONT): no request for a finished item reaches the model.

    Every step waits for the event before it, whatever the machine's speed: the server holds every request
    at a gate until both workers hold items and both threads of the first wait on the model, so neither
    worker can finish anything (and the first cannot run out of items) before the pause."""
    db_url = f"sqlite:///{tmp_path / 'shared.db'}"
    engine = make_engine(db_url)
    judge = toy_judge(BAD, FIX)
    sent: Counter[str] = Counter()
    after_done: list[str] = []
    lock = threading.Lock()
    gate = Gate()

    def responder(body: dict):
        item = _item_of(body)
        status, worker, _ = _status_by_item(engine, bid)[item]
        with lock:
            sent[item] += 1
            if status == "done":
                after_done.append(item)  # sent for an item some worker had already finished
        gate.passes(worker)
        return judge(body)

    n = 40
    with FakeOpenAIServer(responder=responder) as fake:
        ds = make_dataset(engine, n)
        # The held requests wait as long as the test needs: no client timeout may end them first.
        backend = judge_backend(fake).with_changes(timeout=WAIT_LIMIT)
        bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=EVAL, concurrency=2)
        base = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))},
            "PYTHONPATH": os.getcwd(),
            "DATABASE_URL": db_url,
            **TIMINGS,
        }
        machines = [base | {"DATA_DIR": str(tmp_path / f"machine-{m}")} for m in "ab"]
        logs = [tmp_path / f"worker-{m}.log" for m in "ab"]
        workers = [
            subprocess.Popen([sys.executable, "-m", "services.worker"], env=env, stderr=open(log, "wb"))
            for env, log in zip(machines, logs, strict=True)
        ]
        paused = workers[0]
        wid = f"{socket.gethostname()}:{paused.pid}"
        try:
            wait_until(lambda: len(batches.live_workers(engine)) == 2, "both workers started")
            enqueue = f"from services.jobs.queue import enqueue; enqueue({bid})"
            subprocess.run([sys.executable, "-c", enqueue], env=machines[1], check=True)

            def held_by_paused() -> list[str]:
                return [i for i, (s, w, _) in _status_by_item(engine, bid).items() if s == "running" and w == wid]

            # The pause comes while each of the first worker's threads waits on an answer: a thread stopped
            # between its last check and its request reaching the model would send that request late, which
            # no fence can stop.
            gate.wait_for(lambda g: g.held.count(wid) >= 2, "both threads of the first worker wait on the model")
            _pause_holding_no_lock(paused, tmp_path / "shared.db")
            taken = held_by_paused()
            assert len(taken) >= 2, "the paused worker held items"
            gate.open()
            # The other worker sees the silence, takes the items over and finishes them.
            wait_until(lambda: all(_status_by_item(engine, bid)[i][0] == "done" for i in taken), "the items taken over")
            paused.send_signal(signal.SIGCONT)
            wait_until(lambda: batches.progress(engine, bid).batch.status == "done", "the batch finished")
            # The resumed worker finds out it lost its items and leaves the batch.
            wait_until(
                lambda: f"batch {bid}: {wid} leaves it" in logs[0].read_text(errors="replace"), "the resumed worker"
            )
        finally:
            gate.open()
            for w in workers:
                w.send_signal(signal.SIGCONT)
                w.send_signal(signal.SIGINT)
            for w in workers:
                w.wait(timeout=WAIT_LIMIT)
        final = _status_by_item(engine, bid)
        assert after_done == [], f"sent again after another worker finished them: {after_done}"
        assert [s for s, _, _ in final.values()] == ["done"] * n
        assert all(final[i][1] != wid and final[i][2] >= 2 for i in taken), "the other worker finished them"
        assert set(sent) == set(final) and max(sent.values()) <= 2, f"calls per item: {sent}"
        assert sum(sent.values()) - n <= len(taken), "only requests in flight at the pause were sent twice"
        assert "Traceback" not in logs[0].read_text(errors="replace")
    engine.dispose()


# -- the same guarantees, in one process -----------------------------------------------------------
def _age_heartbeat(engine, wid: str, seconds: float) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(WorkerHeartbeat)
            .where(WorkerHeartbeat.id == wid)
            .values(heartbeat_at=utcnow() - timedelta(seconds=seconds))
        )


def test_a_result_is_written_only_under_the_claim_it_was_made_for(file_engine):
    ds = make_dataset(file_engine, 2)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend_stub(), cfg=EVAL)
    a = batches.claim_leases(file_engine, bid, "a:1", 1)
    ((item, attempt_a),) = a.items()
    batches.heartbeat(file_engine, "a:1")
    _age_heartbeat(file_engine, "a:1", 3600)
    batches.recover(file_engine)  # a is silent: its item goes back to the queue
    b = batches.claim_leases(file_engine, bid, "b:1", 1)
    assert b == {item: attempt_a + 1}
    row = {"b_id": item, "status": "done", "score": 1.0}
    with file_engine.begin() as conn:
        assert db_batches.write_results(conn=conn, rows=[row | {"attempt": attempt_a}], wid="a:1") == []
        assert db_batches.write_results(conn=conn, rows=[row | {"attempt": attempt_a}], wid="b:1") == [], (
            "an older claim"
        )
        assert (
            len(db_batches.write_results(conn=conn, rows=[row | {"attempt": attempt_a + 1, "score": 0.5}], wid="b:1"))
            == 1
        )
    with Session(file_engine) as s:
        got = s.get(BatchItem, item)
        assert (got.status, got.score, got.worker) == ("done", 0.5, "b:1")


def test_a_worker_back_from_a_pause_checks_its_claims_before_sending(file_engine, monkeypatch):
    ds = make_dataset(file_engine, 3)
    bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend_stub(), cfg=EVAL)
    leases = batches.Leases(file_engine, "a:1")
    claimed = batches.claim_leases(file_engine, bid, "a:1", 2)
    leases.add(claimed)
    leases.beat()
    lost, kept = claimed
    for i in claimed:
        leases.check(i)  # a fresh heartbeat vouches for both claims
    with file_engine.begin() as conn:  # while a is away, `lost` goes back to the queue and b takes it
        conn.execute(update(BatchItem).where(BatchItem.id == lost).values(status="pending", worker=None))
    assert list(batches.claim_leases(file_engine, bid, "b:1", 1)) == [lost]
    monkeypatch.setattr(leases, "_confirmed", time.monotonic() - leases.trust_s - 1)  # the pause
    with pytest.raises(batches.LeaseLost):
        leases.check(lost)
    leases.check(kept)  # still a's: checked once in the database, then trusted again
    with Session(file_engine) as s:
        assert (utcnow() - s.get(WorkerHeartbeat, "a:1").heartbeat_at.replace(tzinfo=utcnow().tzinfo)) < timedelta(
            seconds=60
        ), "the worker beat again before checking"


def judge_backend_stub():
    from services.config import BackendConfig

    return BackendConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="fake-model", max_retries=0)


def test_worker_timings_must_leave_room_for_a_lock_wait(monkeypatch):
    monkeypatch.setenv("DB_BUSY_TIMEOUT", "30")
    monkeypatch.setenv("WORKER_HEARTBEAT", "3")
    monkeypatch.setenv("WORKER_STALE_AFTER", "20")
    with pytest.raises(ValueError, match="WORKER_STALE_AFTER .* must exceed DB_BUSY_TIMEOUT"):
        Settings()
    monkeypatch.delenv("WORKER_STALE_AFTER")
    s = Settings()
    assert s.worker_stale_after > s.db_busy_timeout + 2 * s.worker_heartbeat
