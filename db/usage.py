"""Usage events: the model calls a run made, one row per stage and call record."""

from __future__ import annotations

from sqlmodel import Session

from db.models import UsageEvent
from services.llm import CallRecord


def save_usage(*, session: Session, run_id: int | None, records: list[CallRecord]) -> None:
    for r in records:
        session.add(
            UsageEvent(
                run_id=run_id,
                stage=r.stage,
                prompt_version=r.prompt_version,
                cached=r.cached,
                requests=r.requests,
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                latency_ms=r.latency_ms,
                error=r.error,
            )
        )
