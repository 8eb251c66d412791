"""The task queue: Huey, on a SQLite file by default (no extra server), so batches outlive the page.

Huey was chosen because it is small, well kept, runs on SQLite with no broker, and swaps to Redis
(`RedisHuey`) or any SQL database (`huey.contrib.sql_huey.SqlHuey`) when workers run on other machines.
The queue only says "work on batch N"; the state of every item lives in the app database, so a lost
or duplicated task costs nothing: items are claimed atomically and recovered from dead workers.
"""

from __future__ import annotations

import atexit
import logging
import subprocess
import sys
import threading

from huey import RedisHuey, SqliteHuey
from huey.api import Huey

from services.config import PROJECT_ROOT, get_settings

log = logging.getLogger(__name__)


def make_huey() -> Huey:
    """The queue named by HUEY_URL (redis://...), else a SQLite file in the data folder."""
    s = get_settings()
    url = s.huey_url
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


@huey.task(retries=0)
def run_conseval(study_id: int) -> None:
    """Ask a ConsEval study's model answers not yet saved, then compute its results."""
    from db.engine import get_engine
    from services import conseval

    st = conseval.run_study(get_engine(), study_id)
    log.info("conseval study %s: %s, %d answers, %d calls", study_id, st.status, st.n_done, st.calls)


def enqueue_conseval(study_id: int) -> None:
    """Hand a ConsEval study to the workers."""
    run_conseval(study_id)


@huey.task(retries=0)
def run_dhp(kind: str, ident: int) -> None:
    """DHP work: "perturb" makes a set's LLM-based perturbations, "run" scores a set with one evaluator."""
    from db.engine import get_engine
    from services import dhp

    if kind == "perturb":
        dhp.process_set(get_engine(), ident)
    else:
        log.info("dhp run %s: %s", ident, dhp.process_run(get_engine(), ident))


def enqueue_dhp(kind: str, ident: int) -> None:
    """Hand DHP work (a set to perturb or a run to score) to the workers."""
    run_dhp(kind, ident)


def worker_command() -> list[str]:
    return [sys.executable, "-m", "services.worker"]


_worker: subprocess.Popen | None = None
_worker_lock = threading.Lock()


def ensure_worker() -> subprocess.Popen | None:
    """The worker beside this app process: started at app start-up (serve.py) or by the first page shown,
    once per process, and again if it has died."""
    global _worker
    with _worker_lock:
        if _worker is None or _worker.poll() is not None:
            _worker = spawn_worker()
        return _worker


def spawn_worker() -> subprocess.Popen | None:
    """Start a worker beside the app (it stops with the app). CONSISTENCY_SPAWN_WORKER=0 turns this off
    for deployments that run their own workers."""
    s = get_settings()
    if not s.consistency_spawn_worker:
        return None
    from services.embedded import spawn_child

    s.data_dir.mkdir(parents=True, exist_ok=True)
    with open(s.data_dir / "worker.log", "ab") as logf:
        proc = spawn_child(worker_command(), stdout=logf, stderr=subprocess.STDOUT, cwd=str(PROJECT_ROOT))
    atexit.register(_stop, proc)
    log.info("started batch worker pid %s", proc.pid)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
