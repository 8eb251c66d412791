"""The real queue and worker: a batch enqueued on the SQLite queue is finished by `python -m services.worker`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from db.engine import make_engine
from services import dcr
from services.config import BackendConfig
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.batches import BAD, FIX, make_dataset
from tests.support.waiting import WAIT_LIMIT, wait_until


def test_the_worker_process_runs_an_enqueued_batch(tmp_path):
    url = f"sqlite:///{tmp_path}/w.db"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LLM_")},
        "PYTHONPATH": os.getcwd(),
        "DATABASE_URL": url,
        "DATA_DIR": str(tmp_path / "data"),
    }
    engine = make_engine(url)
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        ds = make_dataset(engine, 5)
        backend = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0)
        bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(max_rounds=0))
        # Enqueue from another process, as the app does, onto the queue file in DATA_DIR.
        subprocess.run(
            [sys.executable, "-c", f"from services.jobs.queue import enqueue; enqueue({bid})"], env=env, check=True
        )
        assert batches.progress(engine, bid).batch.status == "queued"
        worker = subprocess.Popen([sys.executable, "-m", "services.worker"], env=env)
        try:
            wait_until(lambda: batches.progress(engine, bid).batch.status == "done", "the worker finished the batch")
            p = batches.progress(engine, bid)
            assert p.batch.status == "done" and p.done == 5 and len(fake.requests) == 5
            assert batches.live_workers(engine), "the worker writes a heartbeat"
        finally:
            worker.send_signal(signal.SIGINT)
            worker.wait(timeout=WAIT_LIMIT)
    engine.dispose()


def test_a_worker_under_load_stops_on_sigterm_without_waiting_for_its_requests(tmp_path):
    """SIGTERM with requests held by the server: the worker sends nothing more, gives its items back and exits
    while the requests are still held (it does not wait for them beyond its short drain); a second worker
    finishes the batch, asking only for the items not answered."""
    from tests.test_cli_interrupt import HoldingServer

    url = f"sqlite:///{tmp_path}/w.db"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LLM_")},
        "PYTHONPATH": os.getcwd(),
        "DATABASE_URL": url,
        "DATA_DIR": str(tmp_path / "data"),
    }
    engine = make_engine(url)
    server = HoldingServer(free=2)
    with FakeOpenAIServer(responder=server) as fake:
        ds = make_dataset(engine, 8)
        backend = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0)
        bid = batches.create_batch(
            engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(max_rounds=0), concurrency=3
        )
        batches.mark_enqueued(engine, bid)  # handed to the workers: the worker joins it
        worker = subprocess.Popen([sys.executable, "-m", "services.worker"], env=env, stderr=subprocess.DEVNULL)
        try:
            assert server.holding.wait(WAIT_LIMIT), "the worker joined the batch and reached the model"
            wait_until(lambda: server.seen == server.free + 3, "three requests in flight, held")
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=WAIT_LIMIT) == 0
            assert not server.release.is_set() and server.seen == 5, "it left with its requests held, sent no more"
            p = batches.progress(engine, bid)
            assert p.running == 0 and p.done == 2, "the items in flight went back to the queue"
        finally:
            if worker.poll() is None:
                worker.kill()
            server.free = 10**9
            server.release.set()
        batches.process_batch(engine, bid, backend=backend)
        assert batches.progress(engine, bid).done == 8
    engine.dispose()
