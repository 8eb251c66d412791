"""The model-answer cache in the app database (table `llm_cache`).

Both classes have the `get`/`put` of services.llm's `ResponseCache`, which registers them as its implementations.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from db.engine import dialect_insert
from db.models import LLMCacheEntry, utcnow


class SqlCache:
    """Reads and writes the database at every call (any SQLAlchemy backend)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, key: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            payload = conn.execute(select(LLMCacheEntry.payload).where(LLMCacheEntry.key == key)).scalar()
        return dict(payload) if payload is not None else None

    def put(self, key: str, *, model: str, prompt_version: str, payload: dict[str, Any], replace: bool = False) -> None:
        with self.engine.begin() as conn:
            _insert(conn, [_row(key, model, prompt_version, payload)], replace=replace)


class BufferedSqlCache(SqlCache):
    """The database cache for a batch: known keys read once, writes buffered and flushed in bulk.

    At 64 requests in flight a database read per call costs more CPU than the call itself; the set of
    keys stored for the model is loaded up front, so a new answer costs no read at all. The batch's one
    writer calls `flush` inside the transaction that saves the results.
    """

    def __init__(self, engine: Engine, model: str | None = None) -> None:
        super().__init__(engine)
        self._lock = threading.Lock()
        self._pending: dict[str, dict[str, Any]] = {}
        self._replace: set[str] = set()
        q = select(LLMCacheEntry.key)
        if model is not None:
            q = q.where(LLMCacheEntry.model == model)
        with engine.connect() as conn:
            self._known: set[str] = set(conn.execute(q).scalars())

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._pending.get(key)
            known = key in self._known
        if row is not None:
            return dict(row["payload"])
        return super().get(key) if known else None

    def put(self, key: str, *, model: str, prompt_version: str, payload: dict[str, Any], replace: bool = False) -> None:
        with self._lock:
            if replace:
                self._pending[key] = _row(key, model, prompt_version, payload)
                self._replace.add(key)
            else:
                self._pending.setdefault(key, _row(key, model, prompt_version, payload))

    def flush(self, conn: Connection) -> None:
        """Write the buffered answers in the caller's transaction (an entry stored meanwhile is kept, unless the
        answer was asked again to replace it). Should the transaction fail, `take`, `write` and `restore`
        keep the answers instead."""
        self.write(conn, self.take())

    def take(self) -> tuple[list[dict[str, Any]], set[str]]:
        """The buffered answers (and the keys asked again to replace), no longer buffered."""
        with self._lock:
            rows, self._pending = list(self._pending.values()), {}
            replace, self._replace = self._replace, set()
        return rows, replace

    def write(self, conn: Connection, taken: tuple[list[dict[str, Any]], set[str]]) -> None:
        """Write answers taken from the buffer in the caller's transaction."""
        rows, _ = taken
        store(conn, taken)
        with self._lock:
            self._known.update(r["key"] for r in rows)

    def restore(self, taken: tuple[list[dict[str, Any]], set[str]]) -> None:
        """Buffer again answers whose write failed (a full disk): paid for, they wait for the next write."""
        rows, replace = taken
        with self._lock:
            for r in rows:
                self._pending.setdefault(r["key"], r)
            self._replace |= replace

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


def store(conn: Connection, taken: tuple[list[dict[str, Any]], set[str]]) -> None:
    """Write answers taken from a cache's buffer (`BufferedSqlCache.take`), in the caller's transaction: an
    entry stored meanwhile is kept, unless its key is among those asked again to replace it."""
    rows, replace = taken
    keep = [r for r in rows if r["key"] not in replace]
    if keep:
        _insert(conn, keep)
    if len(keep) < len(rows):
        _insert(conn, [r for r in rows if r["key"] in replace], replace=True)


def _row(key: str, model: str, prompt_version: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "model": model, "prompt_version": prompt_version, "payload": payload, "created_at": utcnow()}


def _insert(conn: Connection, rows: list[dict[str, Any]], *, replace: bool = False) -> None:
    stmt = dialect_insert(conn)(LLMCacheEntry.__table__)
    if replace:
        stmt = stmt.on_conflict_do_update(
            index_elements=[LLMCacheEntry.__table__.c.key],
            set_={c: stmt.excluded[c] for c in ("model", "prompt_version", "payload", "created_at")},
        )
    else:
        stmt = stmt.on_conflict_do_nothing()
    conn.execute(stmt, rows)
