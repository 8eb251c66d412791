"""Batches: their items, claims by workers (with fencing), worker heartbeats, progress and results.

Functions that take `conn` run in the caller's transaction on a Core connection (the claim and write
paths, where one transaction must hold the check and the write); the rest take a session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.engine import Connection, Row
from sqlmodel import Session

# The write path lives in db.batch_writes; its names are kept here, where callers and tests look for them.
from db.batch_writes import (  # noqa: F401
    CALL_FIELDS,
    COUNT_COLUMNS,
    RESULT_COLUMNS,
    USAGE_COLUMNS,
    add_usage,
    call_totals,
    fail_items,
    write_results,
    write_set_aside,
)
from db.engine import insert_ignore
from db.models import (
    Batch,
    BatchItem,
    BatchOptions,
    BatchPublic,
    BatchUsage,
    DatasetItem,
    Document,
    WorkerHeartbeat,
    utcnow,
)


# -- batches and their options ----------------------------------------------------------------------
def add_batch(
    *, session: Session, data: Batch, item_ids: list[int], window: int, sample: int, repeat_group: str | None
) -> int:
    """Store a new batch with its options and every item pending; returns its id."""
    session.add(data)
    session.flush()
    session.add(BatchOptions(batch_id=data.id, window=window, sample=sample, repeat_group=repeat_group))
    now = utcnow()
    session.execute(
        BatchItem.__table__.insert(),
        [
            {
                "batch_id": data.id,
                "item_id": i,
                "status": "pending",
                "attempts": 0,
                "refresh": False,
                "updated_at": now,
                "n_sentences": 0,
                "n_unknown": 0,
                "n_rounds": 0,
                "calls": 0,
                "answered": 0,
                "cache_hits": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "latency_ms": 0.0,
            }
            for i in item_ids
        ],
    )
    return data.id  # type: ignore[return-value]


def get_batch(*, session: Session, batch_id: int) -> Batch | None:
    return session.get(Batch, batch_id)


def list_batches(*, session: Session, limit: int = 200) -> list[BatchPublic]:
    """Newest batches first."""
    rows = session.execute(select(Batch).order_by(Batch.id.desc()).limit(limit)).scalars().all()
    return [BatchPublic.model_validate(b) for b in rows]


def batches_for_dataset(*, session: Session, dataset_id: int) -> list[BatchPublic]:
    """The dataset's batches, newest first."""
    rows = session.execute(select(Batch).where(Batch.dataset_id == dataset_id).order_by(Batch.id.desc())).scalars()
    return [BatchPublic.model_validate(b) for b in rows]


def batch_names(*, session: Session, batch_ids: list[int]) -> dict[int, str]:
    """The names of those of these batches that exist."""
    if not batch_ids:
        return {}
    rows = session.execute(select(Batch.id, Batch.name).where(Batch.id.in_(batch_ids))).all()
    return {r[0]: r[1] for r in rows if r[0] is not None}


def get_options(*, session: Session, batch_id: int) -> BatchOptions | None:
    row = session.get(BatchOptions, batch_id)
    return None if row is None else BatchOptions.model_validate(row)


def all_options(*, session: Session) -> dict[int, BatchOptions]:
    return {o.batch_id: BatchOptions.model_validate(o) for o in session.execute(select(BatchOptions)).scalars()}


def mark_running(*, session: Session, batch: Batch) -> None:
    """A worker starts on the batch (the first one sets its start time)."""
    batch.status = "running"
    batch.started_at = batch.started_at or utcnow()
    session.add(batch)


def set_enqueued(*, conn: Connection, batch_ids: list[int]) -> None:
    """Note that these batches were handed to the queue now."""
    conn.execute(update(Batch).where(Batch.id.in_(batch_ids)).values(enqueued_at=utcnow()))


def count_items(*, session: Session, batch_id: int, statuses: tuple[str, ...]) -> int:
    """How many of a batch's items are in one of `statuses`."""
    return int(
        session.execute(
            select(func.count()).where(BatchItem.batch_id == batch_id, BatchItem.status.in_(statuses))
        ).scalar_one()
    )


def reopen(*, session: Session, batch_id: int, failed_too: bool) -> int:
    """Queue a batch again, or mark it done if nothing is pending; returns the items that will run.

    `failed_too` ("Re-run failed") queues the failed items only, each marked to ask the model again rather
    than read its cached answer; the batch's other pending items (a cancelled batch's) wait for Resume.
    Without it (Resume) every pending item runs.
    """
    if failed_too:
        session.execute(
            update(BatchItem)
            .where(BatchItem.batch_id == batch_id, BatchItem.status == "failed")
            .values(status="pending", worker=None, error=None, refresh=True, updated_at=utcnow())
        )
        n = claimable(session=session, batch_id=batch_id, retry_only=True)
    else:
        n = count_items(session=session, batch_id=batch_id, statuses=("pending",))
    if n:
        values: dict[str, Any] = {"status": "queued", "finished_at": None, "retry_only": failed_too}
    else:  # nothing to run: the batch keeps what it was (cancelled with items pending, else done)
        left = count_items(session=session, batch_id=batch_id, statuses=("pending",))
        values = {"status": "cancelled" if left else "done", "finished_at": utcnow(), "retry_only": False}
    session.execute(update(Batch).where(Batch.id == batch_id).values(cancel_requested=False, **values))
    return n


def claimable(*, session: Session, batch_id: int, retry_only: bool) -> int:
    """How many pending items of a batch a worker may claim (only those marked `refresh` on a re-run)."""
    q = select(func.count()).where(BatchItem.batch_id == batch_id, BatchItem.status == "pending")
    if retry_only:
        q = q.where(BatchItem.refresh.is_(True))
    return int(session.execute(q).scalar_one())


def mark_deleting(*, conn: Connection, batch_id: int) -> bool:
    """Ask the workers to leave a batch at once, sending nothing more and writing no result (it is about to be
    deleted); False when there is no such batch."""
    return bool(
        conn.execute(
            update(Batch).where(Batch.id == batch_id).values(status="deleting", cancel_requested=True)
        ).rowcount
    )


def stop_state(*, conn: Connection, batch_id: int) -> tuple[bool, bool]:
    """(cancel requested, being deleted) of a batch; a batch that is gone is being deleted."""
    row = conn.execute(select(Batch.cancel_requested, Batch.status).where(Batch.id == batch_id)).first()
    if row is None:
        return True, True
    return bool(row[0]), row[1] == "deleting"


def deleting(*, session: Session) -> list[int]:
    """Batches waiting for their workers to let go of their items before they are deleted."""
    return list(session.execute(select(Batch.id).where(Batch.status == "deleting")).scalars())


def delete_batch(*, session: Session, batch_id: int, if_free: bool = False) -> bool:
    """Delete a batch with its items, options and usage rows; with `if_free`, only once no worker holds any of its
    items (False, nothing deleted, while one does)."""
    b = session.get(Batch, batch_id)
    if b is None:
        return False
    if if_free and count_items(session=session, batch_id=batch_id, statuses=("running",)):
        return False
    session.execute(BatchUsage.__table__.delete().where(BatchUsage.batch_id == batch_id))
    session.execute(BatchItem.__table__.delete().where(BatchItem.batch_id == batch_id))
    session.execute(BatchOptions.__table__.delete().where(BatchOptions.batch_id == batch_id))
    session.expunge(b)
    # A statement, not session.delete: another process finishing the same delete meanwhile is no error.
    session.execute(Batch.__table__.delete().where(Batch.id == batch_id))
    return True


def settle(*, session: Session, batch_id: int) -> None:
    """Mark the batch done or cancelled once no item is pending or running."""
    b = session.get(Batch, batch_id)
    if b is None or b.status == "deleting":
        return
    left = count_items(session=session, batch_id=batch_id, statuses=("pending", "running"))
    running = count_items(session=session, batch_id=batch_id, statuses=("running",))
    if left == 0:
        b.status, b.finished_at, b.retry_only = "done", utcnow(), False
    elif b.cancel_requested and running == 0:
        b.status, b.finished_at, b.retry_only = "cancelled", utcnow(), False
    elif b.retry_only and running == 0 and not claimable(session=session, batch_id=batch_id, retry_only=True):
        # The failed items were re-run; the rest were left pending by a cancel and wait for Resume.
        b.status, b.finished_at, b.retry_only = "cancelled", utcnow(), False
    session.add(b)


def failed_counts(*, session: Session) -> dict[int, int]:
    """batch id -> failed items, for the batches that have any."""
    rows = session.execute(
        select(BatchItem.batch_id, func.count()).where(BatchItem.status == "failed").group_by(BatchItem.batch_id)
    ).all()
    return {int(b): int(n) for b, n in rows}


def status_totals(*, session: Session, batch_id: int) -> list[Row]:
    """Per item state: (status, items, calls, cache hits, tokens, answered calls, items whose answered calls
    were not counted, prompt tokens, completion tokens)."""
    return list(
        session.execute(
            select(
                BatchItem.status,
                func.count(),
                func.coalesce(func.sum(BatchItem.calls), 0),
                func.coalesce(func.sum(BatchItem.cache_hits), 0),
                func.coalesce(func.sum(BatchItem.prompt_tokens + BatchItem.completion_tokens), 0),
                func.coalesce(func.sum(BatchItem.answered), 0),
                func.count().filter(BatchItem.answered.is_(None)),
                func.coalesce(func.sum(BatchItem.prompt_tokens), 0),
                func.coalesce(func.sum(BatchItem.completion_tokens), 0),
            )
            .where(BatchItem.batch_id == batch_id)
            .group_by(BatchItem.status)
        ).all()
    )


# -- workers --------------------------------------------------------------------------------------------
def heartbeat(*, conn: Connection, wid: str) -> None:
    """Record that worker `wid` is alive."""
    now = utcnow()
    n = conn.execute(update(WorkerHeartbeat).where(WorkerHeartbeat.id == wid).values(heartbeat_at=now)).rowcount
    if not n:
        conn.execute(
            insert_ignore(conn, WorkerHeartbeat.__table__),
            [
                {
                    "id": wid,
                    "host": wid.rsplit(":", 1)[0],
                    "pid": int(wid.rsplit(":", 1)[-1] or 0) if wid.rsplit(":", 1)[-1].isdigit() else 0,
                    "started_at": now,
                    "heartbeat_at": now,
                }
            ],
        )


def heartbeats(*, conn: Connection, workers: list[str]) -> dict[str, datetime]:
    """When each of these workers last beat (those with a heartbeat)."""
    q = select(WorkerHeartbeat.id, WorkerHeartbeat.heartbeat_at).where(WorkerHeartbeat.id.in_(workers))
    return {w: at for w, at in conn.execute(q).all()}


def live_workers(*, session: Session, since: datetime) -> list[str]:
    """Workers whose heartbeat is newer than `since`."""
    return list(session.execute(select(WorkerHeartbeat.id).where(WorkerHeartbeat.heartbeat_at >= since)).scalars())


def release_items_of_dead_workers(*, session: Session, since: datetime) -> int:
    """Return to the queue the running items of workers with no heartbeat since `since`; how many."""
    # One statement reads the heartbeats and frees the items: a worker that beats in between (back from
    # a pause) keeps its items, so it never sends an item it just checked it holds to a second worker.
    live = select(WorkerHeartbeat.id).where(WorkerHeartbeat.heartbeat_at >= since)
    return session.execute(
        update(BatchItem)
        .where(BatchItem.status == "running", or_(BatchItem.worker.is_(None), BatchItem.worker.not_in(live)))
        .values(status="pending", worker=None)
    ).rowcount


def claim_holders(*, conn: Connection, batch_id: int | None) -> list[str]:
    """The workers that hold running items of a batch (of any batch with None)."""
    q = select(BatchItem.worker).where(BatchItem.status == "running").distinct()
    if batch_id is not None:
        q = q.where(BatchItem.batch_id == batch_id)
    return [w for w in conn.execute(q).scalars() if w]


def release_claims(*, conn: Connection, batch_id: int, workers: list[str]) -> int:
    """Return to the queue the running items of a batch that these workers hold; how many."""
    if not workers:
        return 0
    return conn.execute(
        update(BatchItem)
        .where(BatchItem.batch_id == batch_id, BatchItem.status == "running", BatchItem.worker.in_(workers))
        .values(status="pending", worker=None, updated_at=utcnow())
    ).rowcount


def release_claims_of(*, conn: Connection, workers: list[str]) -> list[int]:
    """Return to the queue the running items, in any batch, of these workers; the batches they were in."""
    if not workers:
        return []
    held = (BatchItem.status == "running", BatchItem.worker.in_(workers))
    batch_ids = sorted(set(conn.execute(select(BatchItem.batch_id).where(*held).distinct()).scalars()))
    conn.execute(update(BatchItem).where(*held).values(status="pending", worker=None, updated_at=utcnow()))
    return batch_ids


def needing_a_worker(*, session: Session, batch_ids: list[int]) -> list[int]:
    """Of these batches, those handed to the workers, not asked to stop, with items pending and none running."""
    if not batch_ids:
        return []
    running = select(BatchItem.batch_id).where(BatchItem.status == "running").distinct()
    pending = select(BatchItem.batch_id).where(BatchItem.status == "pending").distinct()
    return list(
        session.execute(
            select(Batch.id).where(
                Batch.id.in_(batch_ids),
                Batch.status.in_(("queued", "running")),
                Batch.cancel_requested.is_(False),
                Batch.id.not_in(running),
                Batch.id.in_(pending),
            )
        ).scalars()
    )


def unattended(*, session: Session, since: datetime, enqueued_before: datetime) -> list[int]:
    """Batches with items pending and nobody on them: no item running, none touched since `since`, and not
    handed to the queue since `enqueued_before` (a busy queue may simply not have reached them yet)."""
    running = select(BatchItem.batch_id).where(BatchItem.status == "running").distinct()
    recent = select(BatchItem.batch_id).where(BatchItem.updated_at >= since).distinct()
    needy = (
        session.execute(
            select(Batch.id).where(
                Batch.status.in_(("queued", "running")),
                Batch.cancel_requested.is_(False),
                Batch.id.not_in(running),
                Batch.id.not_in(recent),
                (Batch.enqueued_at.is_(None)) | (Batch.enqueued_at < enqueued_before),
            )
        )
        .scalars()
        .all()
    )
    return [b for b in needy if count_items(session=session, batch_id=b, statuses=("pending",))]


def joinable(*, session: Session) -> list[int]:
    """Batches handed to the workers with items waiting and no cancel request."""
    pending = select(BatchItem.batch_id).where(BatchItem.status == "pending").distinct()
    return list(
        session.execute(
            select(Batch.id)
            .where(
                Batch.status.in_(("queued", "running")),
                Batch.cancel_requested.is_(False),
                Batch.enqueued_at.is_not(None),
                Batch.id.in_(pending),
            )
            .order_by(Batch.id)
        ).scalars()
    )


def claim_items(*, conn: Connection, batch_id: int, wid: str, limit: int) -> dict[int, int] | None:
    """Take up to `limit` pending items for worker `wid`, each with its new attempt number.

    {} when no item is pending; None when the claim lost a race and should be tried again. On PostgreSQL
    the candidates are locked with SKIP LOCKED, so racing workers pick different items.
    """
    mine = [BatchItem.batch_id == batch_id, BatchItem.status == "pending"]
    batch = conn.execute(select(Batch.retry_only, Batch.status).where(Batch.id == batch_id)).first()
    if batch is None or batch.status == "deleting":
        return {}  # going: nothing more is claimed
    if batch.retry_only:
        mine.append(BatchItem.refresh.is_(True))  # "Re-run failed": only the failed items, never the rest
    q = select(BatchItem.id).where(*mine).order_by(BatchItem.id).limit(limit)
    if conn.dialect.name == "postgresql":
        q = q.with_for_update(skip_locked=True)
    ids = list(conn.execute(q).scalars())
    if not ids:
        if conn.dialect.name != "postgresql":
            return {}
        # SKIP LOCKED hides items other workers are claiming right now: empty only if none is pending.
        left = conn.execute(select(func.count()).where(*mine)).scalar_one()
        return {} if not left else None
    res = conn.execute(
        update(BatchItem)
        .where(and_(BatchItem.id.in_(ids), BatchItem.status == "pending"))
        .values(status="running", worker=wid, attempts=BatchItem.attempts + 1, updated_at=utcnow())
        .returning(BatchItem.id, BatchItem.attempts)
    )
    return {int(i): int(a) for i, a in res.all()} or None


def holds(*, conn: Connection, batch_item_id: int, wid: str, attempt: int | None) -> bool:
    """Whether worker `wid` still holds the item under the claim with this attempt number."""
    held = conn.execute(
        select(BatchItem.id).where(
            BatchItem.id == batch_item_id,
            BatchItem.worker == wid,
            BatchItem.attempts == attempt,
            BatchItem.status == "running",
        )
    ).first()
    return held is not None


def oversized_items(*, conn: Connection, batch_id: int, max_chars: int) -> list[Row]:
    """(batch item id, external id, reference characters, candidate characters) of the batch's pending items
    whose reference or candidate is longer than `max_chars` (the reference's length as stored with it, so no
    text is read; the candidate's counted by the database)."""
    ref_len, cand_len = Document.n_chars, func.length(DatasetItem.candidate)
    return list(
        conn.execute(
            select(BatchItem.id, DatasetItem.external_id, ref_len, cand_len)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.batch_id == batch_id, BatchItem.status == "pending")
            .where(or_(ref_len > max_chars, cand_len > max_chars))
            .order_by(DatasetItem.idx)
        ).all()
    )


# -- items with their texts ---------------------------------------------------------------------------
def item_inputs(*, conn: Connection, batch_item_ids: list[int]) -> list[Row]:
    """(batch item id, reference text, candidate, sentences, refresh) of these items."""
    return list(
        conn.execute(
            select(BatchItem.id, Document.text, DatasetItem.candidate, DatasetItem.sentences, BatchItem.refresh)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.id.in_(batch_item_ids))
        ).all()
    )


def item_texts(*, conn: Connection, batch_id: int) -> list[Row]:
    """(batch item id, reference text, candidate) of every item of a batch."""
    return list(
        conn.execute(
            select(BatchItem.id, Document.text, DatasetItem.candidate)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.batch_id == batch_id)
        ).all()
    )


def item_table(
    *,
    conn: Connection,
    batch_id: int,
    limit: int | None = None,
    offset: int = 0,
    status: str | None = None,
    item_ids: list[int] | None = None,
) -> list[Row]:
    """One row per item in dataset order: the columns of the batch page's item table; a page of them with
    `limit`/`offset`, only those in `status` or among `item_ids` (dataset item ids) when given."""
    q = (
        select(
            BatchItem.item_id,
            DatasetItem.external_id,
            BatchItem.status,
            BatchItem.score,
            BatchItem.final_score,
            DatasetItem.human_score,
            DatasetItem.human_label,
            BatchItem.n_sentences,
            BatchItem.n_unknown,
            BatchItem.n_rounds,
            BatchItem.calls,
            BatchItem.attempts,
            BatchItem.error,
        )
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .where(BatchItem.batch_id == batch_id)
        .order_by(DatasetItem.idx)
    )
    if status is not None:
        q = q.where(BatchItem.status == status)
    if item_ids is not None:
        q = q.where(BatchItem.item_id.in_(item_ids))
    if limit is not None:
        q = q.limit(limit).offset(offset)
    return list(conn.execute(q).all())


def failed_results(*, conn: Connection, batch_id: int, limit: int) -> list[Row]:
    """(item id, external id, error, result) of a batch's failed items, in dataset order."""
    return list(
        conn.execute(
            select(BatchItem.item_id, DatasetItem.external_id, BatchItem.error, BatchItem.result)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id, BatchItem.status == "failed")
            .order_by(DatasetItem.idx)
            .limit(limit)
        ).all()
    )


def judged_results(*, conn: Connection, batch_id: int) -> list[Row]:
    """(item id, external id, reference text, result) of a batch's finished items, in dataset order."""
    return list(
        conn.execute(
            select(BatchItem.item_id, DatasetItem.external_id, Document.text, BatchItem.result)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.batch_id == batch_id, BatchItem.status == "done")
            .order_by(DatasetItem.idx)
        ).all()
    )


def output_rows(*, conn: Connection, batch_id: int, after_idx: int, limit: int) -> list[Row]:
    """Up to `limit` items after dataset position `after_idx`: (idx, external id, reference, status, score,
    error, calls, cache hits, prompt tokens, completion tokens, latency ms, result)."""
    return list(
        conn.execute(
            select(
                DatasetItem.idx,
                DatasetItem.external_id,
                Document.text,
                BatchItem.status,
                BatchItem.score,
                BatchItem.error,
                BatchItem.calls,
                BatchItem.cache_hits,
                BatchItem.prompt_tokens,
                BatchItem.completion_tokens,
                BatchItem.latency_ms,
                BatchItem.result,
            )
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.batch_id == batch_id, DatasetItem.idx > after_idx)
            .order_by(DatasetItem.idx)
            .limit(limit)
        ).all()
    )


def same_configuration(
    *,
    conn: Connection,
    dataset_id: int,
    name_prefix: str,
    match: dict[str, Any],
    statuses: tuple[str, ...] = ("queued", "running", "cancelled"),
) -> list[Row]:
    """Batches over a dataset named with `name_prefix`, in one of `statuses` (by default those with work left),
    whose columns equal `match`, newest first: (id, window, sample, repeat group, params, base URL, model,
    finished at)."""
    return list(
        conn.execute(
            select(
                Batch.id,
                BatchOptions.window,
                BatchOptions.sample,
                BatchOptions.repeat_group,
                Batch.params,
                Batch.base_url,
                Batch.model,
                Batch.finished_at,
            )
            .outerjoin(BatchOptions, BatchOptions.batch_id == Batch.id)
            .where(
                Batch.dataset_id == dataset_id,
                Batch.name.startswith(name_prefix),
                Batch.status.in_(statuses),
                *(getattr(Batch, column) == value for column, value in match.items()),
            )
            .order_by(Batch.id.desc())
        ).all()
    )
