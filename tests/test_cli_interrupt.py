"""`cli.py evaluate` stopped part way: Ctrl-C or SIGTERM gives its items back and exits 130; a run killed outright
leaves items that the next run takes back at once; no run exits 0 with items left unevaluated.

The model server holds requests until the test lets them go, so the process is stopped with items in flight
on any machine, however fast or slow.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

import cli
from services.database import get_engine
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.batches import BAD, FIX, REF

ROOT = Path(__file__).resolve().parents[1]
N = 8
WAIT = 300  # seconds: only a safety net for a hung process, never what the test waits on


class HoldingServer:
    """Answers the first `free` requests; holds every later one until `release` is set."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.answer = toy_judge(BAD, FIX)
        self.lock = threading.Lock()
        self.seen = 0
        self.holding = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict):
        with self.lock:
            self.seen += 1
            hold = self.seen > self.free
        if hold:
            self.holding.set()
            self.release.wait(WAIT)
        return self.answer(body)


@pytest.fixture
def run_env(tmp_path, monkeypatch):
    pairs = tmp_path / "pairs.jsonl"
    rows = [{"id": f"d{i}", "reference": REF, "candidate": f"It cost {BAD} dollars on day {i}."} for i in range(N)]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "cli.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    return pairs, db


def _start(pairs: Path, out: Path, base_url: str) -> subprocess.Popen:
    env = os.environ | {"LLM_BASE_URL": base_url, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "cli.py", "evaluate", "--input", str(pairs), "--output", str(out), "--concurrency", "3"]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _statuses(db: Path) -> dict[str, int]:
    eng = create_engine(f"sqlite:///{db}")
    try:
        with eng.connect() as conn:
            rows = conn.execute(text("SELECT status, count(*) FROM batch_item GROUP BY status")).all()
    finally:
        eng.dispose()
    return {s: int(n) for s, n in rows}


@pytest.fixture
def held():
    """The model server, holding requests after the first two until the test lets them go."""
    server = HoldingServer(free=2)
    with FakeOpenAIServer(responder=server) as fake:
        yield server, fake
        server.release.set()


def _interrupt_with_items_in_flight(pairs: Path, out: Path, sig: int, held) -> tuple[subprocess.Popen, str]:
    server, fake = held
    proc = _start(pairs, out, fake.base_url)
    try:
        assert server.holding.wait(WAIT), "the run never reached the model"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    server.free = 10**9  # from now on every request is answered
    server.release.set()
    return proc, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_gives_the_items_back_and_exits_130_and_the_rerun_finishes(
    run_env, tmp_path, sig, held, monkeypatch
):
    pairs, db = run_env
    out = tmp_path / "out.jsonl"
    proc, err = _interrupt_with_items_in_flight(pairs, out, sig, held)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "database is locked" not in err, err
    assert "run the same command again to resume" in err
    states = _statuses(db)
    assert "running" not in states and states.get("pending", 0) > 0, states

    monkeypatch.setenv("LLM_BASE_URL", held[1].base_url)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == N and all(line["error"] is None for line in lines)
    assert _statuses(db) == {"done": N}


def test_the_rerun_takes_back_at_once_the_items_of_a_killed_run(run_env, tmp_path, held, monkeypatch, capsys):
    pairs, db = run_env
    out = tmp_path / "out.jsonl"
    proc, _ = _interrupt_with_items_in_flight(pairs, out, signal.SIGKILL, held)
    assert proc.returncode == -signal.SIGKILL
    assert _statuses(db).get("running", 0) > 0  # killed: nothing was given back

    # The killed process's heartbeat is fresh and the stale limit far away: only its pid says it is gone.
    monkeypatch.setenv("WORKER_STALE_AFTER", "3600")
    monkeypatch.setenv("LLM_BASE_URL", held[1].base_url)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    assert " resumed" in capsys.readouterr().err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [line["error"] for line in lines] == [None] * N
    assert _statuses(db) == {"done": N}


def test_items_held_by_a_live_process_elsewhere_make_the_run_exit_nonzero(run_env, tmp_path, fake, monkeypatch, capsys):
    pairs, db = run_env
    fake.responder = toy_judge(BAD, FIX)
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("WORKER_STALE_AFTER", "3600")
    out = tmp_path / "out.jsonl"
    engine = get_engine()
    from services import headless
    from services.config import backend_from_settings
    from services.dcr import DCRConfig

    prep = headless.prepare(engine, path=pairs, backend=backend_from_settings(), cfg=DCRConfig(max_rounds=0))
    other = f"other-{socket.gethostname()}:4242"  # another machine, alive (fresh heartbeat)
    batches.heartbeat(engine, other)
    assert len(batches.claim(engine, prep.batch_id, other, 2)) == 2
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "2 item(s) not evaluated" in err and "run the same command again" in err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sum(line["error"] is None for line in lines) == N - 2


def test_answers_in_flight_at_the_signal_are_kept_and_the_output_is_written(run_env, tmp_path, held, monkeypatch):
    """SIGINT with calls in flight: nothing more is sent, the answers that arrive during the shutdown are
    written with the finished results, the output file holds them, and the rerun asks only for the rest."""
    pairs, db = run_env
    server, fake = held
    out = tmp_path / "out.jsonl"
    proc = _start(pairs, out, fake.base_url)
    try:
        assert server.holding.wait(WAIT), "the run never reached the model"
        deadline = time.monotonic() + WAIT
        while server.seen < server.free + 3 and time.monotonic() < deadline:  # --concurrency 3 in flight, held
            time.sleep(0.01)
        in_flight_at_signal = server.seen
        proc.send_signal(signal.SIGINT)
        seen = []
        for line in proc.stderr:  # the answers in flight are let go once the run has begun to stop
            seen.append(line)
            if "stopping" in line:
                break
        server.free = 10**9
        server.release.set()
        _, rest = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert server.seen == in_flight_at_signal, "nothing was sent after the signal"
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == N
    finished = [x for x in lines if x["error"] is None]
    assert len(finished) == in_flight_at_signal, "every answer paid for is written"
    assert all(x["error"] == "not evaluated (pending)" for x in lines if x["error"] is not None)
    left = N - len(finished)
    assert f"interrupted: {len(finished)} of {N} item(s) finished and written, {left} left" in err, err
    assert _statuses(db) == {"done": len(finished), "pending": left}

    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    assert server.seen == N, "the rerun asked only for the items not answered: none twice"
    assert [json.loads(x)["error"] for x in out.read_text().splitlines()] == [None] * N


def test_a_changed_model_starts_a_new_batch_and_says_why(run_env, tmp_path, fake, monkeypatch, capsys):
    pairs, _ = run_env
    fake.responder = toy_judge(BAD, FIX)
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    engine = get_engine()
    from services import headless
    from services.config import backend_from_settings
    from services.dcr import DCRConfig

    first = headless.prepare(engine, path=pairs, backend=backend_from_settings(), cfg=DCRConfig(max_rounds=0))
    monkeypatch.setenv("LLM_MODEL", "another-model")
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"batch {first.batch_id} over this file with the same settings used the model 'fake-model'" in err, err
    assert "this run uses 'another-model', so it starts a new batch" in err
    assert f"LLM_MODEL=fake-model resumes batch {first.batch_id}" in err
    assert " resumed" not in err
