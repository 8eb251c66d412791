"""A full disk with no room for a reserve loses no paid answer: the batch stops claiming, holds its results in
memory (at most the items it claimed), says how many, and writes them once there is room; when it must leave
first, it sets them aside off that disk and the next run writes them. Calls at the server == items.

The full disk is simulated where the writes fail (SQLite's "database or disk is full" at the result write, the
claim and the heartbeat); the reserve cannot be made, as on an 8 MB disk. tests/test_cli_disk_full.py fills a
real tmpfs where the tests may mount one.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading

import pytest
from sqlalchemy.exc import OperationalError

from db import batches as db_batches
from db import reserve
from services.errors import is_disk_full
from services.jobs import batches
from services.jobs.batches import work
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.batches import BAD, EVAL, FIX, judge_backend, make_dataset
from tests.support.waiting import WAIT_LIMIT, wait_until

N = 16


class FullDisk:
    """The database's disk: full from the `fill_at`-th request the server gets until `free()`."""

    def __init__(self, monkeypatch, fill_at: int) -> None:
        self.fill_at = fill_at
        self.full = False
        self.lock = threading.Lock()
        self.events: list[tuple[str, bool]] = []  # (what was written, whether it was refused)
        self.held_at_refusal: list[int] = []
        self.seen = 0
        self.judge = toy_judge(BAD, FIX)
        for name in ("write_results", "claim_items", "heartbeat"):
            monkeypatch.setattr(db_batches, name, self._seam(name, getattr(db_batches, name)))

    def _seam(self, name, real):
        def write(**kw):
            with self.lock:
                refused = self.full
                self.events.append((name, refused))
                if refused and name == "write_results":
                    self.held_at_refusal.append(len(kw["rows"]))
            if refused:
                raise OperationalError("UPDATE batch_item", {}, sqlite3.OperationalError("database or disk is full"))
            return real(**kw)

        return write

    def __call__(self, body: dict):
        with self.lock:
            self.seen += 1
            if self.seen == self.fill_at:
                self.full = True
        return self.judge(body)

    def refusals(self) -> int:
        with self.lock:
            return sum(1 for what, refused in self.events if refused and what == "write_results")

    def free(self) -> None:
        with self.lock:
            self.full = False

    def claims_after_the_disk_filled(self) -> int:
        """Claims tried after the first refused write (the batch should have stopped claiming)."""
        with self.lock:
            first = next((i for i, (_, refused) in enumerate(self.events) if refused), len(self.events))
            return sum(1 for what, refused in self.events[first + 1 :] if what == "claim_items" and refused)


@pytest.fixture
def no_reserve(monkeypatch, tmp_path):
    """No room for a reserve, whatever its size (an 8 MB disk); answers set aside go to `elsewhere`."""
    monkeypatch.setattr(reserve, "RESERVE_BYTES", 1 << 60)
    monkeypatch.setattr(reserve, "SMALLEST_BYTES", 1 << 59)
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setattr(reserve, "spill_dirs", lambda: [elsewhere])
    monkeypatch.setattr(work, "HELD_RETRY_EVERY", 0.05)
    return elsewhere


def test_the_answers_are_held_until_the_disk_frees_and_no_item_is_asked_twice(
    file_engine, no_reserve, monkeypatch, caplog
):
    disk = FullDisk(monkeypatch, fill_at=5)
    with FakeOpenAIServer(responder=disk) as fake:
        ds = make_dataset(file_engine, N)
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL, concurrency=3)
        got: dict[str, object] = {}

        def run():
            try:
                got["stats"] = batches.process_batch(file_engine, bid)
            except BaseException as exc:
                got["error"] = exc

        caplog.set_level(logging.WARNING, logger="services.jobs.batches.work")
        t = threading.Thread(target=run)
        t.start()
        wait_until(lambda: disk.refusals() >= 3 or "error" in got, "writes refused on the full disk")
        disk.free()
        t.join(WAIT_LIMIT)
        assert "error" not in got, got.get("error")
        p = batches.progress(file_engine, bid)
        assert (p.done, p.pending, p.running) == (N, 0, 0)
        assert len(fake.requests) == N, "every answer paid for was kept: none asked for twice"
    assert max(disk.held_at_refusal) > 0, "results were waiting when the disk was full"
    assert disk.claims_after_the_disk_filled() == 0, "nothing more was claimed while the disk was full"
    said = [
        re.search(r"(\d+) finished item\(s\) and \d+ model answer\(s\) held", r.getMessage()) for r in caplog.records
    ]
    assert max(int(m.group(1)) for m in said if m) > 0, "the run says how many answers it holds"
    assert not no_reserve.exists(), "nothing was set aside: the disk freed while the run was on"


def test_answers_held_when_the_run_must_leave_are_written_by_the_next_run(file_engine, no_reserve, monkeypatch):
    monkeypatch.setattr(work, "HOLD_SECONDS", 0.3)  # no room for that long: the run leaves, the answers set aside
    disk = FullDisk(monkeypatch, fill_at=5)
    with FakeOpenAIServer(responder=disk) as fake:
        ds = make_dataset(file_engine, N)
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL, concurrency=3)
        with pytest.raises(Exception) as stopped:
            batches.process_batch(file_engine, bid)
        assert is_disk_full(stopped.value)
        sent = len(fake.requests)
        assert 5 <= sent < N
        assert len(list(no_reserve.glob("consistency-held-*.json"))) == 1, "set aside off the full disk"
        p = batches.progress(file_engine, bid)
        assert p.running == 0 and p.done + p.pending == N

        disk.free()  # space freed: the next run writes what was set aside, then asks only for the rest
        batches.process_batch(file_engine, bid)
        p = batches.progress(file_engine, bid)
        assert p.done == N
        assert len(fake.requests) == N, "no answer was asked for twice"
        assert p.calls == N, "the set-aside answers' usage counted once"
    assert not list(no_reserve.glob("consistency-held-*.json")), "written, then removed"


def test_a_run_stopped_while_it_holds_answers_sets_them_aside(file_engine, no_reserve, monkeypatch):
    """Ctrl-C in the CLI, SIGTERM to a worker: the held answers go off the full disk, the next run writes them."""
    disk = FullDisk(monkeypatch, fill_at=4)
    stop = threading.Event()
    with FakeOpenAIServer(responder=disk) as fake:
        ds = make_dataset(file_engine, N)
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL, concurrency=3)
        got: dict[str, BaseException] = {}

        def run():
            try:
                batches.process_batch(file_engine, bid, stop=stop)
            except BaseException as exc:
                got["error"] = exc

        t = threading.Thread(target=run)
        t.start()
        wait_until(lambda: disk.refusals() >= 2, "writes refused on the full disk")
        stop.set()
        t.join(WAIT_LIMIT)
        assert is_disk_full(got["error"]), got
        assert len(list(no_reserve.glob("consistency-held-*.json"))) == 1
        disk.free()
        batches.process_batch(file_engine, bid)
        assert batches.progress(file_engine, bid).done == N
        assert len(fake.requests) == N


def test_a_set_aside_file_is_taken_by_one_process_and_freed_if_that_one_dies(file_engine, no_reserve):
    import os
    import subprocess
    import sys

    path = reserve.spill(file_engine, {"wid": "w:1", "batch_id": 1, "cache": [], "replace": [], "results": []})
    assert path is not None and path.stat().st_mode & 0o077 == 0, "readable by its user only"
    assert reserve.spilled(file_engine) == [path]
    mine = path.with_name(f"{path.name}.{os.getpid()}")
    path.rename(mine)  # taken by a process that runs (this one): nobody else's
    assert reserve.spilled(file_engine) == []
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = path.with_name(f"{path.name}.{int(dead.stdout)}")
    mine.rename(orphan)  # taken by a process that died before writing it: free again
    assert reserve.spilled(file_engine) == [orphan]
    assert work.restore_set_aside(file_engine) == 0
    assert reserve.spilled(file_engine) == [] and not list(no_reserve.iterdir())


def test_a_disk_full_before_any_answer_stops_the_run_saying_so(file_engine, no_reserve, monkeypatch):
    disk = FullDisk(monkeypatch, fill_at=0)
    with FakeOpenAIServer(responder=disk) as fake:
        ds = make_dataset(file_engine, 4)
        bid = batches.create_batch(file_engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        batches.heartbeat(file_engine, "w:1")  # written while there was room
        monkeypatch.setattr(db_batches, "heartbeat", lambda **kw: None)  # the heartbeat row needs no new page
        disk.full = True
        with pytest.raises(Exception) as stopped:
            batches.process_batch(file_engine, bid)
        assert is_disk_full(stopped.value)
        assert not fake.requests and batches.progress(file_engine, bid).pending == 4
        assert not no_reserve.exists(), "nothing to set aside"
