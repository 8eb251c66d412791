"""Background work in the child process: each task's process ends with it, so its memory is given back."""

from __future__ import annotations

import os
from pathlib import Path

from components import background
from tests.support.waiting import WAIT_LIMIT, wait_until


def test_each_process_task_runs_in_a_child_that_exits_when_it_is_done():
    registry = background._Registry()
    try:
        first = registry.submit_process("a", "a", os.getpid, (), {})
        pid = first.future.result(timeout=WAIT_LIMIT)
        assert pid != os.getpid()
        # the child that ran it ends (what it imported and allocated goes with it); a new one takes the next task
        wait_until(lambda: not Path(f"/proc/{pid}").exists(), what=f"the child {pid} to exit")
        second = registry.submit_process("b", "b", os.getpid, (), {})
        assert second.future.result(timeout=WAIT_LIMIT) not in (pid, os.getpid())
    finally:
        if registry.procs is not None:
            registry.procs.shutdown(wait=True)
