"""The life of a background job, the same for every kind: claim, heartbeat, recover, cancel, progress.

A job is a row with `status` (queued | running | done | failed | cancelled), `cancel_requested` and
`heartbeat_at`. A worker claims the whole job atomically (a conditional UPDATE), so one worker runs it;
while it runs, a thread writes the heartbeat every WORKER_HEARTBEAT seconds; a job whose heartbeat is
older than WORKER_STALE_AFTER has lost its worker and is queued again by `recover`. Cancelling only
asks (`cancel_requested`): a queued job is cancelled at once, a running one stops at its next safe
point, where the runner sets `cancelled`. Batches share a job among many workers item by item (their
own claims with fencing) and use the same identity, timings and cancel request.

A new kind of job registers a `JobKind` (its process and recover functions) in its service module and
names that module in `MODULES`; services.jobs.queue hands any registered kind to the workers.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection, Engine

from db import jobs as jobs_db
from db.models import utcnow
from services.config import get_settings
from services.errors import InputError

log = logging.getLogger(__name__)

# The service modules that register job kinds (imported on first use: they import this module).
MODULES = ("services.jobs.batches", "services.conseval", "services.dhp.benchmark")


# -- identity and timings ---------------------------------------------------------------------------
def worker_id() -> str:
    """This process's worker name: host and pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def heartbeat_period() -> float:
    """Seconds between a worker's heartbeats (settings)."""
    return get_settings().worker_heartbeat


def stale_limit() -> timedelta:
    """A worker whose heartbeat is older than this has died: its work goes back to the queue (settings)."""
    return timedelta(seconds=get_settings().worker_stale_after)


def is_fresh(at: datetime | None) -> bool:
    """Whether a heartbeat written at `at` says its worker is alive."""
    if at is None:
        return False
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    return utcnow() - at < stale_limit()


# -- a table of jobs ----------------------------------------------------------------------------------
class Cancelled(Exception):
    """The job's cancel was requested; raised at a safe point, the runner records it as cancelled."""


@dataclass(frozen=True)
class JobTable:
    """The lifecycle of the rows of one table of jobs (a model with id, status and cancel_requested)."""

    model: Any

    def request_cancel(self, conn: Connection, ident: int) -> None:
        """Ask the workers to stop the job: a queued job is cancelled now, a running one at its next safe point."""
        jobs_db.request_cancel(conn=conn, model=self.model, ident=ident)

    def claim(self, engine: Engine, ident: int, wid: str) -> bool:
        """Take the job unless it is finished, cancelled, asked to cancel, or held by a live worker; atomic."""
        stale = utcnow() - stale_limit()
        with engine.begin() as conn:
            return jobs_db.claim(conn=conn, model=self.model, ident=ident, wid=wid, stale_before=stale)

    def beat(self, engine: Engine, ident: int) -> None:
        with engine.begin() as conn:
            jobs_db.beat(conn=conn, model=self.model, ident=ident)

    def advance(self, conn: Connection, ident: int, **counts: int) -> bool:
        """Add to the job's progress counters in the caller's transaction; True if its cancel was asked for."""
        return jobs_db.advance(conn=conn, model=self.model, ident=ident, counts=counts)

    def cancel_requested(self, engine: Engine, ident: int) -> bool:
        with engine.connect() as conn:
            return jobs_db.cancel_requested(conn=conn, model=self.model, ident=ident)

    def finish(self, engine: Engine, ident: int, status: str, error: str | None = None, **values: Any) -> None:
        with engine.begin() as conn:
            jobs_db.finish(conn=conn, model=self.model, ident=ident, status=status, error=error, values=values)

    def recover(self, engine: Engine) -> list[int]:
        """Jobs left running by a worker that went quiet: queued again (atomically, so one worker takes each),
        or cancelled if that was asked for."""
        with engine.begin() as conn:
            return jobs_db.recover(conn=conn, model=self.model, stale_before=utcnow() - stale_limit())


def _shares_one_connection(engine: Engine) -> bool:
    # An in-memory database lives in one process on one shared connection: no other worker, nothing to tell.
    return engine.url.get_backend_name() == "sqlite" and engine.url.database in (None, "", ":memory:")


def _beat_until(stop: threading.Event, engine: Engine, table: JobTable, ident: int) -> None:
    while not stop.wait(heartbeat_period()):
        try:
            table.beat(engine, ident)
        except Exception:  # the database may be briefly locked; the next beat will do
            log.debug("%s %s: heartbeat failed", table.model.__tablename__, ident, exc_info=True)


def run(
    engine: Engine, table: JobTable, ident: int, work: Callable[[], dict[str, Any] | None], *, wid: str | None = None
) -> str | None:
    """Claim a job, keep its heartbeat while `work()` runs, and record how it ended; None if not claimed.

    `work` returns column values to save with status done, raises `Cancelled` at a safe point after a
    cancel request, or `InputError` (its message is the job's error); any other exception fails the job too.
    """
    if not table.claim(engine, ident, wid or worker_id()):
        return None
    stop = threading.Event()
    if not _shares_one_connection(engine):
        name = f"{table.model.__tablename__}-{ident}-heartbeat"
        threading.Thread(target=_beat_until, args=(stop, engine, table, ident), daemon=True, name=name).start()
    values: dict[str, Any] = {}
    error = None
    try:
        values = work() or {}
        status = "done"
    except Cancelled:
        status = "cancelled"
    except InputError as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # a bug must not leave the job "running" for ever
        log.exception("%s %s failed", table.model.__tablename__, ident)
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        stop.set()
    table.finish(engine, ident, status, error, **values)
    return status


# -- the kinds of job ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobKind:
    """A kind of job the workers run: `process(engine, ident)` works on one, `recover(engine)` lists the
    ones that lost their worker, `on_enqueue(engine, ident)` runs when one is handed to the queue."""

    name: str
    process: Callable[[Engine, int], Any]
    recover: Callable[[Engine], list[int]] | None = None
    on_enqueue: Callable[[Engine, int], None] | None = None


_kinds: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Make a kind of job known to the workers."""
    _kinds[kind.name] = kind
    return kind


def kinds() -> dict[str, JobKind]:
    """Every registered kind of job, by name."""
    for module in MODULES:
        importlib.import_module(module)
    return dict(_kinds)


def kind(name: str) -> JobKind:
    found = kinds().get(name)
    if found is None:
        raise InputError(f"Unknown kind of job {name!r}; known: {', '.join(sorted(_kinds))}.")
    return found
