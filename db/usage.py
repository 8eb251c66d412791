"""Usage events: the model calls a run made, one row per stage and call record."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlmodel import Session

from db.models import UsageEvent


def save_usage(*, session: Session, run_id: int | None, events: Iterable[dict[str, Any]]) -> None:
    """One `usage_event` row per dict of its columns (stage, prompt_version, cached, requests, tokens, ...)."""
    for e in events:
        session.add(UsageEvent(run_id=run_id, **e))
