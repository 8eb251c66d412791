"""The rows of any table of jobs (a model with id, status and cancel_requested): claim, beat, cancel, finish.

Each function runs in the caller's transaction (`conn`); services.jobs.runner decides when.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from db.models import utcnow


def _has(model: Any, column: str) -> bool:
    return column in model.__table__.c


def request_cancel(*, conn: Connection, model: Any, ident: int) -> None:
    """Ask the workers to stop the job: a queued job is cancelled now, a running one at its next safe point."""
    m = model
    conn.execute(update(m).where(m.id == ident, m.status.in_(("queued", "running"))).values(cancel_requested=True))
    conn.execute(update(m).where(m.id == ident, m.status == "queued").values(status="cancelled", finished_at=utcnow()))


def claim(*, conn: Connection, model: Any, ident: int, wid: str, stale_before: datetime) -> bool:
    """Take the job unless it is finished, cancelled, asked to cancel, or held by a worker that beat after
    `stale_before`; one conditional UPDATE, so only one claimer wins."""
    m = model
    now = utcnow()
    values: dict[str, Any] = {"status": "running", "heartbeat_at": now}
    if _has(m, "worker"):
        values["worker"] = wid
    if _has(m, "error"):
        values["error"] = None
    if _has(m, "started_at"):
        values["started_at"] = func.coalesce(m.started_at, now)
    n = conn.execute(
        update(m)
        .where(
            m.id == ident,
            m.cancel_requested.is_(False),
            m.status.not_in(("done", "cancelled")),
            (m.status != "running") | m.heartbeat_at.is_(None) | (m.heartbeat_at < stale_before),
        )
        .values(values)
    ).rowcount
    return n == 1


def beat(*, conn: Connection, model: Any, ident: int) -> None:
    conn.execute(update(model).where(model.id == ident).values(heartbeat_at=utcnow()))


def advance(*, conn: Connection, model: Any, ident: int, counts: dict[str, int]) -> bool:
    """Add to the job's progress counters; True if its cancel was asked for."""
    m = model
    values = {c: getattr(m, c) + n for c, n in counts.items()} | {"heartbeat_at": utcnow()}
    res = conn.execute(update(m).where(m.id == ident).values(values).returning(m.cancel_requested))
    return bool(res.scalar())


def cancel_requested(*, conn: Connection, model: Any, ident: int) -> bool:
    return bool(conn.execute(select(model.cancel_requested).where(model.id == ident)).scalar())


def finish(*, conn: Connection, model: Any, ident: int, status: str, error: str | None, values: dict[str, Any]) -> None:
    conn.execute(
        update(model)
        .where(model.id == ident)
        .values(status=status, error=error, finished_at=utcnow(), heartbeat_at=None, **values)
    )


def recover(*, conn: Connection, model: Any, stale_before: datetime) -> list[int]:
    """Jobs left running by a worker quiet since `stale_before`: queued again, or cancelled if that was asked."""
    m = model
    quiet = (m.status == "running") & (m.heartbeat_at.is_(None) | (m.heartbeat_at < stale_before))
    conn.execute(
        update(m)
        .where(quiet, m.cancel_requested.is_(True))
        .values(status="cancelled", finished_at=utcnow(), heartbeat_at=None)
    )
    res = conn.execute(update(m).where(quiet).values(status="queued", heartbeat_at=None).returning(m.id))
    return sorted(int(i) for i in res.scalars())
