"""Processes that start together on a new database (workers, the app, cli.py) all come up: the schema upgrade
runs under a database lock, so one process upgrades and the others find the schema current."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[2]

# Loads the engine module, says so, waits for the word to go, then opens (and upgrades) the database.
GATED = """
import sys
from services.database import make_engine
print("ready", flush=True)
sys.stdin.readline()
make_engine().dispose()
print("up", flush=True)
"""


def _start_together(url: str, n: int) -> list[tuple[int, str, str]]:
    env = os.environ | {"DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GATED],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        for p in procs:  # every process is past its imports: release them at once
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            results.append((p.returncode, out, err))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _versions(url: str) -> list[str]:
    eng = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with eng.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
    finally:
        eng.dispose()


def _head() -> str:
    from alembic.script import ScriptDirectory

    from db.engine import alembic_config, make_engine

    engine = make_engine("sqlite://")
    try:
        return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    finally:
        engine.dispose()


def test_four_processes_started_together_on_a_new_postgresql_database_all_come_up(pg_url):
    results = _start_together(pg_url, 4)
    for code, out, err in results:
        assert code == 0 and "up" in out, err[-3000:]
    assert _versions(pg_url) == [_head()]


def test_four_processes_started_together_on_a_new_sqlite_file_all_come_up(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    results = _start_together(url, 4)
    for code, out, err in results:
        assert code == 0 and "up" in out, err[-3000:]
    assert _versions(url) == [_head()]


def test_four_workers_started_together_on_a_new_postgresql_database_all_come_up(pg_url, tmp_path):
    """The issue's case: `python -m services.worker` four times at once on an empty database."""
    import socket
    import time

    env = os.environ | {"DATABASE_URL": pg_url, "PYTHONPATH": str(ROOT)}
    logs = [tmp_path / f"worker-{i}.log" for i in range(4)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "services.worker", "--no-join"],
            cwd=ROOT,
            env=env | {"DATA_DIR": str(tmp_path / f"machine-{i}")},  # each its own task queue, as on 4 machines
            stderr=log.open("wb"),
        )
        for i, log in enumerate(logs)
    ]
    wids = {f"{socket.gethostname()}:{w.pid}" for w in workers}
    eng = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        deadline = time.monotonic() + 600  # a safety net for a hung start, not what the test waits on
        while True:
            exited = [
                (w.pid, w.returncode, log.read_text(errors="replace")[-3000:])
                for w, log in zip(workers, logs, strict=True)
                if w.poll() is not None
            ]
            assert not exited, exited
            try:
                with eng.connect() as conn:
                    beating = set(conn.execute(text("SELECT id FROM worker_heartbeat")).scalars())
            except Exception:  # the schema is not there yet
                beating = set()
            if wids <= beating:
                break
            assert time.monotonic() < deadline, f"workers up: {beating & wids} of {wids}"
            time.sleep(0.1)
    finally:
        eng.dispose()
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
    assert _versions(pg_url) == [_head()]
