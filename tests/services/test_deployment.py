"""Running for a team: a worker spread over several endpoints, and an API key that never leaks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import make_engine
from db.models import BatchItem
from services import dcr
from services.config import BackendConfig
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, Gate, toy_judge
from tests.support.batches import BAD, FIX, make_dataset, worker_of
from tests.support.waiting import WAIT_LIMIT, wait_until

KEY = "sk-test-" + "Zq7" * 12  # what a real key looks like; it must appear nowhere but in the request header


def test_a_worker_spreads_a_batch_over_its_own_endpoints(tmp_path, monkeypatch):
    engine = make_engine(f"sqlite:///{tmp_path}/spread.db")
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as a, FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as b:
        ds = make_dataset(engine, 12)
        # The batch was created against an endpoint this worker cannot reach; the worker has its own two.
        recorded = BackendConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="fake-model", max_retries=0)
        bid = batches.create_batch(engine, dataset_id=ds, backend=recorded, cfg=dcr.DCRConfig(max_rounds=0))
        monkeypatch.setenv("LLM_WORKER_BASE_URLS", f"{a.base_url}, {b.base_url}/")
        batches.process_batch(engine, bid)
        p = batches.progress(engine, bid)
        assert p.done == 12 and p.failed == 0
        assert a.requests and b.requests and len(a.requests) + len(b.requests) == 12
    engine.dispose()


def _files_under(*roots: Path) -> list[Path]:
    return [p for r in roots for p in ([r] if r.is_file() else r.rglob("*")) if p.is_file()]


def test_the_api_key_reaches_the_server_and_nothing_else(tmp_path):
    """A batch through the queue and a worker with a key: search the database, the logs and an export."""
    data = tmp_path / "data"
    db_file = tmp_path / "team.db"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))},
        "PYTHONPATH": os.getcwd(),
        "DATABASE_URL": f"sqlite:///{db_file}",
        "DATA_DIR": str(data),
        "LLM_API_KEY": KEY,
        "CONSISTENCY_SPAWN_WORKER": "0",
    }
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": f"d{i}",
                    "reference": "The council approved 40 million dollars.",
                    "candidate": f"Item {i}: the council approved {BAD if i % 2 else '40 million'} dollars.",
                    "score": i % 2,
                }
            )
            for i in range(6)
        )
    )
    log_file = tmp_path / "worker.log"
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        env |= {"LLM_BASE_URL": fake.base_url, "LLM_MODEL": "fake-model"}
        cli = [sys.executable, "cli.py"]
        out = subprocess.run(
            [*cli, "batch", "--dataset", str(pairs), "--format", "jsonl", "--score-column", "score", "--enqueue"],
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT_LIMIT,
        )
        assert out.returncode == 0, out.stderr
        engine = make_engine(env["DATABASE_URL"])
        bid = max(b.id for b in batches.list_batches(engine))
        with open(log_file, "wb") as logf:
            worker = subprocess.Popen(
                [sys.executable, "-m", "services.worker"], env=env, stdout=logf, stderr=subprocess.STDOUT
            )
            try:
                wait_until(lambda: batches.progress(engine, bid).batch.status == "done", "the batch finished")
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(timeout=WAIT_LIMIT)
        assert batches.progress(engine, bid).done == 6
        assert {h.get("authorization") for h in fake.request_headers} == {f"Bearer {KEY}"}, "the key was used"
        report = tmp_path / "report.json"
        html = tmp_path / "report.html"
        rep = subprocess.run(
            [*cli, "report", "--run", str(bid), "--output", str(report), "--html", str(html), "--boot", "50"],
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT_LIMIT,
        )
        assert rep.returncode == 0, rep.stderr
        engine.dispose()

    csv_export = tmp_path / "items.csv"
    engine = make_engine(env["DATABASE_URL"])
    batches.items_frame(engine, bid).to_csv(csv_export, index=False)
    engine.dispose()
    searched = _files_under(db_file.parent, data, log_file, report, html, csv_export)
    assert db_file in searched and log_file in searched and report in searched
    leaks = [str(p) for p in searched if KEY.encode() in p.read_bytes()]
    printed = {"cli output": out.stdout + out.stderr, "report output": rep.stdout + rep.stderr}
    leaks += [name for name, text in printed.items() if KEY in text]
    assert leaks == [], f"the API key leaked into {leaks}"
    assert "Bearer" not in log_file.read_text(errors="replace")


# -- upload limits ------------------------------------------------------------------------------
def test_uploads_over_the_size_limit_or_of_another_type_are_refused_with_the_reason(monkeypatch):
    import tomllib

    from services.config import Settings
    from services.text import InputError, read_document

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    default = Settings.model_fields["max_upload_mb"].default
    assert config["server"]["maxUploadSize"] == default, "the browser's limit and the service's agree"
    assert default * 1024 * 1024 >= 100_000 * 2300, "the default holds 100,000 typical pairs"
    MAX_UPLOAD_MB = 20
    monkeypatch.setenv("MAX_UPLOAD_MB", str(MAX_UPLOAD_MB))
    big = b"The council met on Tuesday. " * (MAX_UPLOAD_MB * 1024 * 1024 // 28 + 1)
    with pytest.raises(InputError, match=rf"report\.txt is 20\.0 MB; the limit is {MAX_UPLOAD_MB} MB"):
        read_document("report.txt", big)
    assert read_document("report.txt", big[: 1024 * 1024]).startswith("The council met")
    for name in ("payload.html", "run.exe", "notes.svg", "noext"):
        with pytest.raises(InputError, match="unsupported file type"):
            read_document(name, b"<script>alert(1)</script>")


# -- workers on several machines ----------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgresql"])
def shared_db(request, tmp_path):
    from tests.db import pg

    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
        return
    cluster = pg.cluster()
    url = cluster.new_database()
    yield url
    cluster.drop_database(url)


def test_a_worker_on_another_machine_joins_a_batch_queued_elsewhere(tmp_path, shared_db):
    """Two workers that share only the database (each its own queue, as on two machines) share a batch."""
    judge = toy_judge(BAD, FIX)
    gate = Gate()  # every request waits until both workers have one waiting: each has joined, however slow

    def held(body):
        gate.passes(worker_of(engine, bid, body))
        return judge(body)

    engine = make_engine(shared_db)
    with FakeOpenAIServer(responder=held) as fake:
        ds = make_dataset(engine, 40)
        backend = BackendConfig(
            kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=WAIT_LIMIT
        )
        bid = batches.create_batch(
            engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(max_rounds=0), concurrency=2
        )
        base = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))},
            "PYTHONPATH": os.getcwd(),
            "DATABASE_URL": shared_db,
        }
        machines = [base | {"DATA_DIR": str(tmp_path / f"machine-{m}")} for m in "ab"]
        workers = [
            subprocess.Popen([sys.executable, "-m", "services.worker"], env=env, stderr=subprocess.DEVNULL)
            for env in machines
        ]
        try:
            wait_until(lambda: len(batches.live_workers(engine)) == 2, "both workers started")
            subprocess.run(  # the app on machine a hands the batch to its own queue
                [sys.executable, "-c", f"from services.jobs.queue import enqueue; enqueue({bid})"],
                env=machines[0],
                check=True,
            )
            gate.wait_for(lambda g: len(set(g.held)) == 2, "both workers wait on the model")
            gate.open()
            wait_until(lambda: batches.progress(engine, bid).batch.status == "done", "the batch finished")
            p = batches.progress(engine, bid)
            assert p.batch.status == "done" and p.done == 40
        finally:
            gate.open()
            for w in workers:
                w.send_signal(signal.SIGINT)
            for w in workers:
                w.wait(timeout=WAIT_LIMIT)
        with Session(engine) as s:
            by_worker = Counter(s.exec(select(BatchItem.worker).where(BatchItem.batch_id == bid)).all())
        assert len(by_worker) == 2, f"both workers took items: {by_worker}"
        assert len(fake.requests) == 40, "no item was sent twice"
    engine.dispose()


def test_the_api_key_is_in_no_postgresql_table(monkeypatch):
    """The same search on PostgreSQL: every row of every table, as text."""
    from sqlalchemy import text
    from sqlmodel import SQLModel

    from tests.db import pg

    cluster = pg.cluster()
    url = cluster.new_database()
    engine = make_engine(url)
    try:
        monkeypatch.setenv("LLM_API_KEY", KEY)
        with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
            ds = make_dataset(engine, 4)
            recorded = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0)
            bid = batches.create_batch(engine, dataset_id=ds, backend=recorded, cfg=dcr.DCRConfig(max_rounds=1))
            batches.process_batch(engine, bid)  # the worker's way: the key comes from its environment
            assert batches.progress(engine, bid).done == 4
            assert {h.get("authorization") for h in fake.request_headers} == {f"Bearer {KEY}"}
        with engine.connect() as conn:
            for table in SQLModel.metadata.sorted_tables:
                rows = conn.execute(text(f'SELECT t::text FROM "{table.name}" t')).scalars().all()
                assert not any(KEY in r for r in rows), f"the API key is in table {table.name}"
    finally:
        engine.dispose()
        cluster.drop_database(url)
