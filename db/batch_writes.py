"""Writing a batch's results and what its calls used: results under the claim they were made for, usage added
per attempt (one `batch_usage` row per call), results set aside on a full disk, and items failed before sending.

Every function runs in the caller's transaction on a Core connection (db.batches re-exports them).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select, update
from sqlalchemy.engine import Connection

from db.models import BatchItem, BatchUsage, utcnow

RESULT_COLUMNS = (
    "status",
    "error",
    "score",
    "final_score",
    "n_sentences",
    "n_unknown",
    "n_rounds",
    "calls",
    "answered",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "result",
    "verdicts",
    "consistent",
    "checker_score",
)
COUNT_COLUMNS = ("n_sentences", "n_unknown", "n_rounds")
# What an item's calls used: every attempt's adds to these (a re-run, a retry, an answer that could not be read
# or one whose result was never written all cost something), so they are never replaced by a result.
USAGE_COLUMNS = ("calls", "answered", "cache_hits", "prompt_tokens", "completion_tokens")
CALL_FIELDS = (
    "stage",
    "prompt_version",
    "cached",
    "requests",
    "answered",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "error",
)


def write_results(*, conn: Connection, rows: list[dict[str, Any]], wid: str) -> list[dict[str, Any]]:
    """Write results of items `wid` still holds under the claim each was done for; returns the rows written.

    An item taken over by another worker (its claim has another worker or attempt number) is left alone, but
    what its calls used is added to it all the same (`add_usage`): they were sent. A row with `usage_only`
    carries no result (the item was stopped before it had one), only its calls.
    """
    now = utcnow()
    t = BatchItem.__table__
    results = [r for r in rows if not r.get("usage_only")]
    held = (
        {
            i: a
            for i, a in conn.execute(
                select(t.c.id, t.c.attempts).where(
                    t.c.id.in_([r["b_id"] for r in results]), t.c.worker == wid, t.c.status == "running"
                )
            ).all()
        }
        if results
        else {}
    )
    mine = [r for r in results if r["b_id"] in held and held[r["b_id"]] == r.get("attempt")]
    if mine:
        columns = _written_columns()
        full = [_written_row(r, columns, attempt=r["attempt"], wid=wid, updated_at=now) for r in mine]
        # The claim is in the WHERE clause as well: the check above and this write share one transaction, and
        # the condition holds even where another writer slips in between.
        stmt = (
            update(t)
            .where(
                t.c.id == bindparam("b_id"),
                t.c.worker == bindparam("wid"),
                t.c.attempts == bindparam("attempt"),
                t.c.status == "running",
            )
            .values({c: bindparam(c) for c in (*columns, "updated_at")} | {"refresh": False})
        )
        conn.execute(stmt, full)
    add_usage(conn=conn, rows=rows)
    return mine


def _written_columns() -> list[str]:
    """The result columns a write sets (usage is added apart, per call: add_usage)."""
    return [c for c in RESULT_COLUMNS if c not in USAGE_COLUMNS]


def _written_row(r: dict[str, Any], columns: list[str], **extra: Any) -> dict[str, Any]:
    """One item's parameters for a result write: its columns (counts and latency 0 where missing), its id, and
    the statement's other parameters."""
    row = {c: r.get(c) for c in columns} | {"b_id": r["b_id"]} | extra
    for c in COUNT_COLUMNS:
        row[c] = row[c] or 0
    row["latency_ms"] = row["latency_ms"] or 0.0
    return row


def write_set_aside(*, conn: Connection, rows: list[dict[str, Any]], wid: str) -> int:
    """Write results a worker set aside when the disk was full (db.reserve.spill) to items still without one:
    pending, or running under the claim of that worker (gone since). Their usage is added whatever happens
    (`add_usage`). Returns how many results were written."""
    t = BatchItem.__table__
    results = [r for r in rows if not r.get("usage_only")]
    n = 0
    if results:
        columns = _written_columns()
        full = [_written_row(r, columns, wid=wid) for r in results]
        stmt = (
            update(t)
            .where(
                t.c.id == bindparam("b_id"),
                or_(t.c.status == "pending", and_(t.c.status == "running", t.c.worker == bindparam("wid"))),
            )
            .values({c: bindparam(c) for c in columns} | {"refresh": False, "worker": None, "updated_at": utcnow()})
        )
        n = sum(conn.execute(stmt, r).rowcount for r in full)  # a few rows: those held in flight
    add_usage(conn=conn, rows=rows)
    return n


def add_usage(*, conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Add what each row's calls used to its item's usage columns, and keep one `batch_usage` row per call
    (a row's `call_records`: dicts of CALL_FIELDS); rows that made no call are skipped."""
    used = [r for r in rows if r.get("calls") or r.get("cache_hits") or r.get("call_records")]
    if not used:
        return
    t = BatchItem.__table__
    # answered stays NULL on an item written before it was counted: its earlier calls' answers are unknown.
    conn.execute(
        update(t)
        .where(t.c.id == bindparam("b_id"))
        .values({c: getattr(t.c, c) + bindparam(f"add_{c}") for c in USAGE_COLUMNS}),
        [{"b_id": r["b_id"]} | {f"add_{c}": int(r.get(c) or 0) for c in USAGE_COLUMNS} for r in used],
    )
    ids = {r["b_id"] for r in used}
    batch_of = dict(conn.execute(select(t.c.id, t.c.batch_id).where(t.c.id.in_(sorted(ids)))).all())
    now = utcnow()
    calls = [
        {f: c.get(f) for f in CALL_FIELDS}
        | {"batch_id": batch_of[r["b_id"]], "batch_item_id": r["b_id"], "attempt": r.get("attempt"), "created_at": now}
        for r in used
        if r["b_id"] in batch_of  # an item deleted meanwhile (its batch was deleted): nothing to add to
        for c in r.get("call_records") or []
    ]
    if calls:
        conn.execute(BatchUsage.__table__.insert(), calls)


def call_totals(*, conn: Connection, batch_id: int) -> dict[str, int]:
    """A batch's usage summed over its `batch_usage` rows: one per call made, whatever became of the answer."""
    u = BatchUsage.__table__.c
    row = conn.execute(
        select(
            func.count(),
            func.coalesce(func.sum(u.requests), 0),
            func.coalesce(func.sum(u.answered), 0),
            func.count().filter(u.cached.is_(True)),
            func.coalesce(func.sum(u.prompt_tokens), 0),
            func.coalesce(func.sum(u.completion_tokens), 0),
        ).where(u.batch_id == batch_id)
    ).one()
    keys = ("records", "calls", "answered", "cache_hits", "prompt_tokens", "completion_tokens")
    return {k: int(v) for k, v in zip(keys, row, strict=True)}


def fail_items(*, conn: Connection, errors: list[dict[str, Any]]) -> None:
    """Mark items failed before they are sent: dicts of b_id (the batch item) and error."""
    table = BatchItem.__table__
    conn.execute(
        update(table)
        .where(table.c.id == bindparam("b_id"))
        .values(status="failed", error=bindparam("error"), updated_at=utcnow()),
        errors,
    )
