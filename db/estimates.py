"""What estimates read: a dataset's text sizes, a model's measured calls, a batch's recent finishes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlmodel import Session, col

from db.models import Batch, BatchItem, DatasetItem, Document, Run, UsageEvent


def dataset_sizes(*, session: Session, dataset_id: int, limit: int | None = None) -> list[tuple[int, int, int]]:
    """Per item, in order: (reference characters, candidate characters, candidate sentences), each counted by
    the database: the reference's length as stored with it, the sentences' JSON not sent to be parsed."""
    q = (
        select(
            Document.n_chars,
            func.length(DatasetItem.candidate),
            func.json_array_length(DatasetItem.sentences),
        )
        .join(Document, Document.id == DatasetItem.reference_id)
        .where(DatasetItem.dataset_id == dataset_id)
        .order_by(DatasetItem.idx)
    )
    if limit:
        q = q.limit(limit)
    return [(int(r or 0), int(c or 0), int(k or 0)) for r, c, k in session.execute(q).all()]


def model_call_totals(*, session: Session, model: str, base_url: str | None) -> tuple[int, float, int, int]:
    """Requests this model (at this endpoint) answered, not from the cache: (requests, latency ms, prompt
    tokens, completion tokens), over single runs and batch items."""
    runs = session.execute(
        select(
            func.coalesce(func.sum(UsageEvent.requests), 0),
            func.coalesce(func.sum(UsageEvent.latency_ms), 0.0),
            func.coalesce(func.sum(UsageEvent.prompt_tokens), 0),
            func.coalesce(func.sum(UsageEvent.completion_tokens), 0),
        )
        .join(Run, Run.id == UsageEvent.run_id)
        .where(Run.model == model, Run.base_url == base_url, col(UsageEvent.cached).is_(False))
        .where(UsageEvent.requests > 0)
    ).one()
    items = session.execute(
        select(
            func.coalesce(func.sum(BatchItem.calls - BatchItem.cache_hits), 0),
            func.coalesce(func.sum(BatchItem.latency_ms), 0.0),
            func.coalesce(func.sum(BatchItem.prompt_tokens), 0),
            func.coalesce(func.sum(BatchItem.completion_tokens), 0),
        )
        .join(Batch, Batch.id == BatchItem.batch_id)
        .where(Batch.model == model, Batch.base_url == base_url, BatchItem.calls > BatchItem.cache_hits)
    ).one()
    return (
        int(runs[0]) + int(items[0]),
        float(runs[1]) + float(items[1]),
        int(runs[2]) + int(items[2]),
        int(runs[3]) + int(items[3]),
    )


def recent_finishes(*, session: Session, batch_id: int, since: datetime) -> tuple[int, datetime | None]:
    """How many of the batch's items finished since `since` (their last update), and when the first of them did:
    counted by the database, so a fast batch's window (tens of thousands of items) is never read row by row."""
    q = (
        select(func.count(), func.min(BatchItem.updated_at))
        .where(BatchItem.batch_id == batch_id, col(BatchItem.status).in_(("done", "failed")))
        .where(BatchItem.updated_at >= since)
    )
    n, first = session.execute(q).one()
    return int(n), first
