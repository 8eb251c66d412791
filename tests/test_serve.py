"""The app starts its batch worker with the server: a restarted app resumes batches before any page is opened."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from db.engine import make_engine
from db.models import Batch, WorkerHeartbeat, utcnow
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.batches import BAD, EVAL, FIX, judge_backend, make_dataset
from tests.support.browser import free_port, server_flags
from tests.support.waiting import WAIT_LIMIT, wait_until

ROOT = Path(__file__).resolve().parents[1]


def test_a_restarted_app_resumes_its_batches_without_a_page_being_opened(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = make_engine(db_url)
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        ds = make_dataset(engine, 6)
        bid = batches.create_batch(engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        # The app stopped mid-batch: two items held by its worker, which is gone, the rest waiting.
        assert len(batches.claim(engine, bid, "gone:1", 2)) == 2
        batches.heartbeat(engine, "gone:1")
        with engine.begin() as conn:
            conn.execute(update(Batch).where(Batch.id == bid).values(status="running", enqueued_at=utcnow()))
            conn.execute(update(WorkerHeartbeat).values(heartbeat_at=utcnow() - timedelta(hours=1)))
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "STREAMLIT_"))},
            "DATABASE_URL": db_url,
            "DATA_DIR": str(tmp_path / "data"),
            "CONSISTENCY_SPAWN_WORKER": "1",
            "WORKER_STALE_AFTER": "4",
            "WORKER_HEARTBEAT": "0.5",
            "DB_BUSY_TIMEOUT": "2",
        }
        port = free_port()
        log = tmp_path / "app.log"
        cmd = [sys.executable, "serve.py", *server_flags(port)]
        with open(log, "wb") as out:
            app = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:

            def finished() -> bool:
                assert app.poll() is None, log.read_text(errors="replace")[-2000:]
                return batches.progress(engine, bid).batch.status == "done"

            wait_until(finished, "the app's worker finished the batch")
        finally:
            app.terminate()
            app.wait(timeout=WAIT_LIMIT)
        p = batches.progress(engine, bid)
        assert p.batch.status == "done" and p.done == 6, log.read_text(errors="replace")[-2000:]
        assert len(fake.requests) == 6, "each item sent once"
        worker_log = (tmp_path / "data" / "worker.log").read_text(errors="replace")
        assert "joining batch" in worker_log or "enqueued" in worker_log
    engine.dispose()


PRELOAD_PROBE = """
import gc, sys, weakref
import serve
serve.preload()
frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())

class Node:
    pass

a, b = Node(), Node()
a.other, b.other = b, a  # a cycle made after the start, as a page's run makes them
gone = []
weakref.finalize(a, gone.append, "a")
del a, b
gc.collect()
print(frozen, tracked, len(gone), all(m in sys.modules for m in serve.PRELOAD))
"""


def test_preloaded_modules_are_kept_out_of_each_collection_and_later_garbage_is_still_collected():
    """Streamlit collects garbage fully after every script run: what the start imported is frozen once, so those
    collections walk only what pages made since, and a cycle a page leaves is still freed."""
    out = subprocess.run(
        [sys.executable, "-c", PRELOAD_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=WAIT_LIMIT, check=True
    ).stdout.split()
    frozen, tracked, freed, loaded = int(out[0]), int(out[1]), int(out[2]), out[3] == "True"
    assert loaded
    assert frozen > 100_000, "the preloaded modules' objects are frozen"
    assert tracked < frozen / 10, "a collection after the start walks a small part of the heap"
    assert freed == 1, "garbage made after the start is still collected"
