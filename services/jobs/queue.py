"""The task queue: Huey, on a SQLite file by default (no extra server), so jobs outlive the page.

Huey was chosen because it is small, well kept, runs on SQLite with no broker, and swaps to Redis
(`RedisHuey`) or any SQL database (`huey.contrib.sql_huey.SqlHuey`) when workers run on other machines.
The queue only says "work on job N of kind K" (services.jobs.runner); the state of every job lives in the app
database, so a lost or duplicated task costs nothing: jobs and batch items are claimed atomically and
recovered from dead workers.
"""

from __future__ import annotations

import atexit
import logging
import subprocess
import sys
import threading

from huey import RedisHuey, SqliteHuey
from huey.api import Huey
from sqlalchemy.engine import Engine

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


def run_job(kind: str, ident: int) -> None:
    """Work on job `ident` of a registered kind (services.jobs.runner) until it is finished or cancelled."""
    from services.database import get_engine
    from services.jobs import runner as jobrunner

    log.info("%s %s: %s", kind, ident, jobrunner.kind(kind).process(get_engine(), ident))


# Huey names a task by its module; this one keeps the name it had when the queue was services/jobs.py, so
# tasks already in a queue when the code is updated still run.
run_job.__module__ = "services.jobs"
run_job = huey.task(retries=0)(run_job)


_here = threading.local()


def run_here(engine: Engine | None) -> None:
    """Jobs submitted from this thread from now on run in this process, on `engine` (a database the workers do
    not read, such as the demo workspace); None hands them to the workers again."""
    _here.engine = engine


def submit(kind: str, ident: int) -> None:
    """Hand job `ident` of a registered kind to the workers (or run it here: see `run_here`)."""
    from services.database import get_engine
    from services.jobs import runner as jobrunner

    job = jobrunner.kind(kind)
    here = getattr(_here, "engine", None)
    if here is not None:
        if job.on_enqueue is not None:
            job.on_enqueue(here, ident)
        threading.Thread(target=job.process, args=(here, ident), name=f"{kind}-{ident}-here", daemon=True).start()
        return
    if job.on_enqueue is not None:
        job.on_enqueue(get_engine(), ident)
    run_job(kind, ident)


def enqueue(batch_id: int) -> None:
    """Hand a batch to the workers."""
    submit("batch", batch_id)


def enqueue_conseval(study_id: int) -> None:
    """Hand a ConsEval study to the workers."""
    submit("conseval", study_id)


def enqueue_dhp(kind: str, ident: int) -> None:
    """Hand DHP work (a set to perturb or a run to score) to the workers."""
    submit(f"dhp-{kind}", ident)


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
    log.info("started worker pid %s", proc.pid)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
