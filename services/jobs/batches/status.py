"""Where a batch stands: counts by state, usage, an ETA, and its items as a table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import batches as db_batches
from db.models import BatchPublic, utcnow
from services import estimates
from services.config import BackendConfig
from services.errors import InputError


@dataclass(frozen=True)
class Progress:
    """Where a batch stands."""

    batch: BatchPublic
    total: int
    done: int
    failed: int
    running: int
    pending: int
    calls: int
    cache_hits: int
    tokens: int
    elapsed_s: float | None
    eta_s: float | None  # from the items finished per second over the last minutes (services/estimates.py)
    items_per_s: float | None = None
    rate_window_s: float | None = None
    answered: int | None = None  # requests that got an answer; None: some items were run before it was counted
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def retries(self) -> int | None:
        """Requests sent again or failed (refused connections, timeouts, error statuses)."""
        return None if self.answered is None else self.calls - self.answered

    def spent(self, prices: BackendConfig) -> estimates.Spent:
        """What the batch used so far, at the prices set for its model (`prices`: the backend in use)."""
        b = self.batch
        return estimates.spent(
            prices,
            model=b.model,
            base_url=b.base_url,
            kind=b.backend_kind,
            input_tokens=self.prompt_tokens,
            output_tokens=self.completion_tokens,
        )

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def status_text(self) -> str:
        """The batch's state in words: a batch that ended with failed items says how many."""
        return status_text(self.batch.status, self.failed)


def status_text(status: str, failed: int) -> str:
    """ "done", or "finished with 36 failures" when items failed; other states as they are."""
    if failed and status in ("done", "cancelled"):
        said = "finished" if status == "done" else "cancelled"
        return f"{said} with {failed:,} failure{'' if failed == 1 else 's'}"
    return status


def failed_counts(engine: Engine) -> dict[int, int]:
    """batch id -> its failed items, for every batch with any."""
    with Session(engine) as session:
        return db_batches.failed_counts(session=session)


def progress(engine: Engine, batch_id: int) -> Progress | None:
    """Counts by state, usage totals and an ETA from the throughput measured over a recent window."""
    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            return None
        rows = db_batches.status_totals(session=session, batch_id=batch_id)
        pub = BatchPublic.model_validate(b)
    by = {r[0]: r for r in rows}
    count = {s: int(by[s][1]) if s in by else 0 for s in ("done", "failed", "running", "pending")}
    calls = sum(int(r[2]) for r in rows)
    hits = sum(int(r[3]) for r in rows)
    tokens = sum(int(r[4]) for r in rows)
    uncounted = sum(int(r[6]) for r in rows if r[0] in ("done", "failed"))
    answered = None if uncounted else sum(int(r[5]) for r in rows)
    elapsed = eta = items_per_s = window = None
    if pub.started_at is not None:
        end = pub.finished_at if pub.status in ("done", "cancelled") and pub.finished_at else utcnow()
        started = pub.started_at if pub.started_at.tzinfo else pub.started_at.replace(tzinfo=end.tzinfo)
        end = end if end.tzinfo else end.replace(tzinfo=started.tzinfo)
        elapsed = max(0.0, (end - started).total_seconds())
        left = count["pending"] + count["running"]
        if left and pub.status == "running":
            rate = estimates.batch_throughput(engine, batch_id, left, utcnow())
            eta, items_per_s, window = rate.eta_s, rate.items_per_s, rate.window_s
    return Progress(
        batch=pub,
        total=sum(count.values()),
        calls=calls,
        cache_hits=hits,
        tokens=tokens,
        elapsed_s=elapsed,
        eta_s=eta,
        items_per_s=items_per_s,
        rate_window_s=window,
        answered=answered,
        prompt_tokens=sum(int(r[7]) for r in rows),
        completion_tokens=sum(int(r[8]) for r in rows),
        **count,
    )


def batch_public(engine: Engine, batch_id: int) -> BatchPublic:
    """A batch's row; InputError if it does not exist."""
    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            raise InputError(f"Batch {batch_id} does not exist.")
        return BatchPublic.model_validate(b)


def list_batches(engine: Engine, limit: int = 200) -> list[BatchPublic]:
    with Session(engine) as session:
        return db_batches.list_batches(session=session, limit=limit)


def items_frame(
    engine: Engine,
    batch_id: int,
    *,
    limit: int | None = None,
    offset: int = 0,
    status: str | None = None,
    item_ids: list[int] | None = None,
) -> Any:
    """One row per item in dataset order: state, scores, human judgments, usage and error. A page of `limit` rows
    from `offset`, and only the items in `status` or among `item_ids`, when given (the page shows a page)."""
    import pandas as pd

    with engine.connect() as conn:
        rows = db_batches.item_table(
            conn=conn, batch_id=batch_id, limit=limit, offset=offset, status=status, item_ids=item_ids
        )
    cols = [
        "item",
        "external_id",
        "status",
        "score",
        "final score",
        "human score",
        "human label",
        "sentences",
        "unknown",
        "rounds",
        "calls",
        "attempts",
        "error",
    ]
    return pd.DataFrame(rows, columns=cols)


@dataclass(frozen=True)
class FailedItem:
    """A failed item: why, and the model's answers as written (each call's stage, error and raw text)."""

    item: int
    external_id: str
    error: str | None
    answers: list[dict[str, Any]]


def failed_items(engine: Engine, batch_id: int, limit: int = 200) -> list[FailedItem]:
    """The batch's failed items with the model's raw answers (recorded for items failed since they were kept)."""
    with engine.connect() as conn:
        rows = db_batches.failed_results(conn=conn, batch_id=batch_id, limit=limit)
    return [FailedItem(int(i), ext or "", err, list((res or {}).get("raw_answers") or [])) for i, ext, err, res in rows]


def disagreements(engine: Engine, batch_id: int) -> list[dict[str, Any]]:
    """The sentences of a batch's finished items where the judge and the evidence disagree (round 0)."""
    from services.dcr import REFERENCE_NOUN
    from services.disagreement import batch_disagreements

    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            raise InputError(f"Batch {batch_id} does not exist.")
        if b.method == "evidence":  # the checker's own verdicts: nothing to compare
            return []
        noun = REFERENCE_NOUN.get(b.task, "reference")
    with engine.connect() as conn:
        rows = db_batches.judged_results(conn=conn, batch_id=batch_id)
    return batch_disagreements([tuple(r) for r in rows], noun)
