"""Where model answers are remembered: the `ResponseCache` interface, an in-memory cache and the cache key."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ResponseCache(Protocol):
    """Where model answers are remembered, under `cache_key`; the first answer stored under a key is kept.

    Implementations: `MemoryCache` (a process's dictionary), `db.cache.SqlCache` (the app database) and
    `db.cache.BufferedSqlCache` (the app database for a batch: writes flushed in bulk by one writer). A protocol,
    so the data layer's caches need not import it.
    A payload is `{"raw": ..., "prompt_tokens": ..., "completion_tokens": ...}`.
    """

    def get(self, key: str) -> dict[str, Any] | None:
        """The payload stored under `key`, or None."""

    def put(self, key: str, *, model: str, prompt_version: str, payload: dict[str, Any], replace: bool = False) -> None:
        """Store a payload under `key`, unless one is stored there already (`replace`: store it anyway)."""


class MemoryCache(ResponseCache):
    """Answers kept in memory for the life of the object; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self.entries.get(key)
        return dict(entry["payload"]) if entry is not None else None

    def put(self, key: str, *, model: str, prompt_version: str, payload: dict[str, Any], replace: bool = False) -> None:
        entry = {"model": model, "prompt_version": prompt_version, "payload": dict(payload)}
        with self._lock:
            if replace:
                self.entries[key] = entry
            else:
                self.entries.setdefault(key, entry)


def cache_key(model: str, prompt_version: str, messages: list[dict], params: dict, sample: int) -> str:
    """Stable key over everything that decides an answer."""
    blob = json.dumps(
        {"model": model, "prompt": prompt_version, "messages": messages, "params": params, "sample": sample},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
