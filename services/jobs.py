"""The task queue: Huey, on a SQLite file by default (no extra server), so batches outlive the page.

Huey was chosen because it is small, well kept, runs on SQLite with no broker, and swaps to Redis
(`RedisHuey`) or any SQL database (`huey.contrib.sql_huey.SqlHuey`) when workers run on other machines.
The queue only says "work on batch N"; the state of every item lives in the app database, so a lost
or duplicated task costs nothing: items are claimed atomically and recovered from dead workers.
"""

from __future__ import annotations

import logging
import os
import sys

from huey import RedisHuey, SqliteHuey
from huey.api import Huey

from services.config import get_settings

log = logging.getLogger(__name__)


def make_huey() -> Huey:
    """The queue named by HUEY_URL (redis://...), else a SQLite file in the data folder."""
    s = get_settings()
    url = os.environ.get("HUEY_URL", "")
    if url.startswith("redis://"):
        return RedisHuey("consistency-studio", url=url)
    s.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteHuey("consistency-studio", filename=str(s.data_dir / "queue.db"), timeout=30)


huey = make_huey()


@huey.task(retries=0)
def run_batch(batch_id: int) -> None:
    """Work on a batch until nothing is left to claim."""
    from db.engine import get_engine
    from services import batches

    stats = batches.process_batch(get_engine(), batch_id)
    log.info(
        "batch %s: %d item(s) processed, %d failed, %.1f s", batch_id, stats.processed, stats.failed, stats.seconds
    )


def enqueue(batch_id: int) -> None:
    """Hand a batch to the workers."""
    from sqlalchemy import update

    from db.engine import get_engine
    from db.models import Batch, utcnow

    with get_engine().begin() as conn:
        conn.execute(update(Batch).where(Batch.id == batch_id).values(enqueued_at=utcnow()))
    run_batch(batch_id)


def worker_command() -> list[str]:
    return [sys.executable, "-m", "services.worker"]
