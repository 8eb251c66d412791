"""Background work in the child process: the child is kept while it is used and ends once it is idle."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from components import background
from tests.support.waiting import WAIT_LIMIT, wait_until


def test_the_child_is_kept_while_used_and_ends_once_idle(monkeypatch):
    monkeypatch.setattr(background, "IDLE_CHILD_SECONDS", 5.0)  # far above a wake-up under load
    registry = background._Registry()
    try:
        pid = registry.submit_process("a", "a", os.getpid, (), {}).future.result(timeout=WAIT_LIMIT)
        assert pid != os.getpid()
        # a task right after the last one finds the same child (no new start, no imports again)
        assert registry.submit_process("b", "b", os.getpid, (), {}).future.result(timeout=WAIT_LIMIT) == pid
        # idle, it ends: what it imported and allocated goes with it; the next task starts a new child
        wait_until(lambda: not Path(f"/proc/{pid}").exists(), what=f"the idle child {pid} to exit")
        assert registry.procs is None
        again = registry.submit_process("c", "c", os.getpid, (), {}).future.result(timeout=WAIT_LIMIT)
        assert again not in (pid, os.getpid())
    finally:
        if registry.procs is not None:
            registry.procs.shutdown(wait=True)


def test_a_queued_task_cancelled_by_a_newer_one_of_its_group_is_counted_out_without_a_deadlock(monkeypatch):
    monkeypatch.setattr(background, "IDLE_CHILD_SECONDS", 600.0)
    registry = background._Registry()
    tasks = {}

    def submit_all():
        # one task runs and one more is handed to the child's queue; the third waits in the pool, cancellable
        tasks["slow"] = registry.submit_process("slow", "slow", time.sleep, (1.0,), {})
        tasks["next"] = registry.submit_process("next", "next", os.getpid, (), {})
        tasks["q1"] = registry.submit_process("q1", "g", os.getpid, (), {})
        # a newer request of q1's group cancels it, under the registry's lock, which runs its done-callback
        tasks["q2"] = registry.submit_process("q2", "g", os.getpid, (), {})

    thread = threading.Thread(target=submit_all, daemon=True)
    try:
        thread.start()
        thread.join(WAIT_LIMIT)
        assert not thread.is_alive(), "submitting deadlocked"
        assert tasks["q1"].future.cancelled()
        for name in ("slow", "next", "q2"):
            tasks[name].future.result(timeout=WAIT_LIMIT)
        wait_until(lambda: registry.procs_pending == 0, what="no task left counted as pending")
    finally:
        if registry.procs is not None:
            registry.procs.shutdown(wait=not thread.is_alive())  # a deadlocked pool is left, not waited for
