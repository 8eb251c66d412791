"""Work that outlives one script run: service calls in a thread or a child process of this server.

Pages submit a service call under a key and poll it; a rerun, another tab or a closed tab finds the same
task by its key instead of starting it again. Tasks hold ids and plain results, never sessions. Threads suit
work that waits on the database or releases the GIL (storing baseline values chunk by chunk); CPU-bound
pure functions (bootstrap intervals) go to one child process, so they cannot slow other sessions' scripts
by holding the GIL. Only for work that is safe to lose with the process; batches of model calls go to the
batch worker instead.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

log = logging.getLogger(__name__)

MAX_TASKS = 32
# The child process ends after this long without a task; one that keeps being used (a running batch's
# intervals, recomputed every 30 s while its page is open) is kept, so it is not started again each time.
IDLE_CHILD_SECONDS = 120.0


@dataclass
class Task:
    """A submitted call: its future, when it started, and the progress it reports."""

    key: str
    group: str
    future: Future
    submitted: float = field(default_factory=time.monotonic)
    done_units: int = 0
    total_units: int = 0
    stage: str = ""

    def report(self, done: int, total: int, stage: str = "") -> None:
        """Progress callback for the service call (any thread)."""
        self.done_units, self.total_units, self.stage = done, total, stage

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.submitted

    @property
    def fraction(self) -> float:
        return self.done_units / self.total_units if self.total_units else 0.0

    def error(self) -> BaseException | None:
        return self.future.exception() if self.future.done() and not self.future.cancelled() else None


class _Registry:
    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cs-background")
        self.tasks: dict[str, Task] = {}
        self.lock = threading.RLock()  # a future cancelled under it runs _process_done in this thread
        self.procs: ProcessPoolExecutor | None = None
        self.procs_pending = 0  # process tasks submitted and not yet done
        self.procs_last_done = 0.0

    def _process_pool(self) -> ProcessPoolExecutor:
        # "spawn": a fork of a threaded server can inherit held locks; one worker keeps a core for the pages.
        if self.procs is None or getattr(self.procs, "_broken", False):
            self.procs = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self.procs

    def _process_done(self, _future: Future) -> None:
        with self.lock:
            self.procs_pending -= 1
            self.procs_last_done = time.monotonic()
        timer = threading.Timer(IDLE_CHILD_SECONDS, self._retire_idle_child)
        timer.daemon = True
        timer.start()

    def _retire_idle_child(self) -> None:
        """End the child once it has had nothing to do for IDLE_CHILD_SECONDS: what it imported and the arrays
        of the batch it last computed (200-400 MB) go with it; the next task starts a new one."""
        with self.lock:
            idle = time.monotonic() - self.procs_last_done
            if self.procs is None or self.procs_pending or idle < IDLE_CHILD_SECONDS * 0.99:
                return
            procs, self.procs = self.procs, None
        procs.shutdown(wait=False)

    def submit_process(self, key: str, group: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Task:
        with self.lock:
            task = self.tasks.get(key)
            if task is not None and (not task.future.done() or task.error() is None and not task.future.cancelled()):
                return task
            self._cancel_group(group, key)
            task = Task(key=key, group=group, future=self._process_pool().submit(fn, *args, **kwargs))
            self.procs_pending += 1
            task.future.add_done_callback(self._process_done)
            self.tasks[key] = task
            self._evict()
            return task

    def _cancel_group(self, group: str, key: str) -> None:
        # A newer request of the same group (e.g. the same batch after more items finished) makes the
        # queued, not yet started ones pointless.
        for other in self.tasks.values():
            if other.group == group and other.key != key:
                other.future.cancel()

    def submit(self, key: str, fn: Callable[[Task], Any], group: str, restart: bool) -> Task:
        with self.lock:
            task = self.tasks.get(key)
            if task is not None and not task.future.done():
                return task
            if task is not None and not restart and not task.future.cancelled() and task.error() is None:
                return task
            self._cancel_group(group, key)
            future: Future = Future()
            task = Task(key=key, group=group, future=future)
            self.tasks[key] = task

            def run() -> None:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    future.set_result(fn(task))
                except BaseException as exc:  # reported to the page through the future
                    log.exception("background task %s failed", key)
                    future.set_exception(exc)

            self.pool.submit(run)
            self._evict()
            return task

    def _evict(self) -> None:
        finished = [k for k, t in self.tasks.items() if t.future.done()]
        for k in finished[: max(0, len(self.tasks) - MAX_TASKS)]:
            del self.tasks[k]

    def get(self, key: str) -> Task | None:
        with self.lock:
            return self.tasks.get(key)


@st.cache_resource(show_spinner=False)
def _registry() -> _Registry:
    return _Registry()


def submit(key: str, fn: Callable[[Task], Any], *, group: str = "", restart: bool = False) -> Task:
    """Start fn(task) in the background unless a task with this key is running, or has succeeded (and not
    `restart`). A failed or cancelled task is started again."""
    return _registry().submit(key, fn, group or key, restart)


def submit_process(key: str, fn: Callable[..., Any], *args: Any, group: str = "", **kwargs: Any) -> Task:
    """Start fn(*args, **kwargs) in the child process (fn and its arguments must pickle) unless a task with
    this key is running or has succeeded. No progress reports from there."""
    return _registry().submit_process(key, group or key, fn, args, kwargs)


def get(key: str) -> Task | None:
    return _registry().get(key)


def wait(task: Task, timeout: float) -> bool:
    """Block up to `timeout` seconds for the task; whether it has finished."""
    try:
        task.future.result(timeout=timeout)
    except Exception:  # a failure or a timeout: the caller looks at the task
        pass
    return task.future.done()
