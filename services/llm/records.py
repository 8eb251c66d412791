"""What calls cost and gave: a record per logical call, the run's usage ledger and a call's result."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass
class CallRecord:
    """One logical call: a cache hit, or one or more requests to the server."""

    stage: str
    prompt_version: str
    cached: bool
    requests: int = 0
    answered: int | None = 0  # requests that got an answer (the others were retried or failed); None: not counted
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    raw: str = ""  # the model's answer as written (the last one asked for), so a failure can be read


class UsageLedger:
    """Calls, tokens, latency and cache hits of one run; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[CallRecord] = []

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self.records.append(record)

    def summary(self) -> dict[str, Any]:
        with self._lock:
            recs = list(self.records)
        return summarize_records(recs)


def summarize_records(recs: list[CallRecord]) -> dict[str, Any]:
    """Totals over call records; `calls` counts requests actually sent to the model, `answered` those that got
    an answer and `retries` the rest (sent again after a refused connection, a timeout or an error status);
    both None when a record did not count them (stored before they were)."""
    calls = sum(r.requests for r in recs)
    counted = all(r.answered is not None for r in recs)
    answered = sum(r.answered or 0 for r in recs) if counted else None
    return {
        "calls": calls,
        "answered": answered,
        "retries": None if answered is None else calls - answered,
        "cache_hits": sum(1 for r in recs if r.cached),
        "prompt_tokens": sum(r.prompt_tokens for r in recs),
        "completion_tokens": sum(r.completion_tokens for r in recs),
        "latency_s": round(sum(r.latency_ms for r in recs) / 1000, 2),
        "errors": sum(1 for r in recs if r.error),
    }


@dataclass
class CallResult(Generic[T]):
    """What a call gave: a parsed value, or an error that says what went wrong."""

    value: T | None
    raw: str = ""
    error: str | None = None
    cached: bool = False
    fatal: bool = False  # the backend itself failed (unreachable, bad key): stop the run

    @property
    def ok(self) -> bool:
        return self.error is None and self.value is not None
