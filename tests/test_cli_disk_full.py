"""A full disk loses no paid answer: what arrived is written in the room the reserve kept (db/reserve.py), no
item is left "running", and the run after space is freed asks only for what was never answered.

Two ways: a real full disk (a small tmpfs; only where the tests run as root and may mount) and, everywhere, a
simulated one (ENOSPC raised at the write seam until the reserve is freed)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import threading
import time

import pytest
from sqlalchemy import create_engine, text

import cli
import db.reserve as reserve
from db import batches as db_batches
from tests.fakes import FakeOpenAIServer
from tests.support.batches import BAD, REF
from tests.test_cli_interrupt import WAIT, HoldingServer

N = 8


def _statuses(url: str) -> dict[str, int]:
    eng = create_engine(url)
    try:
        with eng.connect() as conn:
            rows = conn.execute(text("SELECT status, count(*) FROM batch_item GROUP BY status")).all()
    finally:
        eng.dispose()
    return {s: int(n) for s, n in rows}


def _pairs(where):
    path = where / "pairs.jsonl"
    rows = [{"id": f"d{i}", "reference": REF, "candidate": f"It cost {BAD} dollars on day {i}."} for i in range(N)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def held(monkeypatch):
    server = HoldingServer(free=2)
    with FakeOpenAIServer(responder=server) as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_MODEL", "fake-model")
        monkeypatch.setenv("LLM_MAX_RETRIES", "0")
        yield server
        server.release.set()


def _run_until_held(server: HoldingServer, args: list[str], then) -> tuple[int, str]:
    """Run cli.main(args) on a thread; once its requests are held (3 in flight), call `then()` and let them go."""
    got: dict[str, int] = {}
    t = threading.Thread(target=lambda: got.setdefault("code", cli.main(args)))
    t.start()
    assert server.holding.wait(WAIT), "the run never reached the model"
    deadline = time.monotonic() + WAIT
    while server.seen < server.free + 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    then()
    server.free = 10**9
    server.release.set()
    t.join(WAIT)
    assert not t.is_alive()
    return got["code"], str(server.seen)


def _check_nothing_lost(server, url, out, pairs, capsys, code):
    err = capsys.readouterr().err
    assert "is full: free space there" in err and "Traceback" not in err, err
    answered = server.seen
    states = _statuses(url)
    assert "running" not in states, states  # every claim returned
    assert states.get("done", 0) == answered, (states, answered)  # every answer received is stored
    assert code == (0 if answered == N else 1), err
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out), "--concurrency", "3"]) == 0
    assert server.seen == N, "after space is freed, only the items never answered are asked for: none twice"
    assert _statuses(url) == {"done": N}


def test_a_simulated_full_disk_keeps_the_answers_in_flight(tmp_path, held, monkeypatch, capsys):
    """ENOSPC at the write of results until the reserve is freed: the freed room takes the answers."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    url = f"sqlite:///{tmp_path / 'data' / 'consistency.db'}"
    pairs, out = _pairs(tmp_path), tmp_path / "out.jsonl"
    full = {"on": False}
    real_write, real_release = db_batches.write_results, reserve.release

    def write_results(**kw):
        if full["on"] and kw["rows"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(**kw)

    def release(engine):
        freed = real_release(engine)
        full["on"] = full["on"] and not freed  # the reserve's room is what the write needed
        return freed

    monkeypatch.setattr(db_batches, "write_results", write_results)
    monkeypatch.setattr(reserve, "release", release)
    args = ["evaluate", "--input", str(pairs), "--output", str(out), "--concurrency", "3"]
    code, _ = _run_until_held(held, args, lambda: full.update(on=True))
    _check_nothing_lost(held, url, out, pairs, capsys, code)


def _can_mount() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.fixture
def small_disk(tmp_path):
    """A 6 MB tmpfs, unmounted after the test."""
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.skipif(not _can_mount(), reason="a real full disk needs root and mount (the simulated test runs)")
def test_a_real_full_tmpfs_keeps_the_answers_in_flight(tmp_path, small_disk, held, monkeypatch, capsys):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("DATA_DIR", str(small_disk))
    monkeypatch.setattr(reserve, "RESERVE_BYTES", 1024 * 1024)
    url = f"sqlite:///{small_disk / 'consistency.db'}"
    pairs, out = _pairs(tmp_path), tmp_path / "out.jsonl"
    filler = small_disk / "filler"

    def fill() -> None:
        with filler.open("wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    args = ["evaluate", "--input", str(pairs), "--output", str(out), "--concurrency", "3"]
    code, _ = _run_until_held(held, args, fill)
    assert not (small_disk / "consistency.db.reserve").exists(), "the reserve was spent"
    filler.unlink()  # space freed
    _check_nothing_lost(held, url, out, pairs, capsys, code)
    assert (small_disk / "consistency.db.reserve").exists(), "the next run made the reserve again"


@pytest.mark.skipif(not _can_mount(), reason="a real full disk needs root and mount (the simulated tests run)")
def test_a_full_disk_with_no_room_for_a_reserve_loses_no_answer(tmp_path, small_disk, held, monkeypatch, capsys):
    """An 8 MB disk had no room for the 8 MB reserve, and the answers in flight were dropped when the disk filled:
    a later run asked for them again. Now they are held, set aside off the full disk, and written by the next run."""
    from services.jobs.batches import work

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("DATA_DIR", str(small_disk))
    monkeypatch.setattr(reserve, "RESERVE_BYTES", 64 * 1024 * 1024)  # larger than the disk, at every size tried
    monkeypatch.setattr(reserve, "SMALLEST_BYTES", 32 * 1024 * 1024)
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setattr(reserve, "spill_dirs", lambda: [elsewhere])
    monkeypatch.setattr(work, "HELD_RETRY_EVERY", 0.05)
    monkeypatch.setattr(work, "HOLD_SECONDS", 0.5)  # no room for that long: the run leaves, the answers set aside
    url = f"sqlite:///{small_disk / 'consistency.db'}"
    pairs, out = _pairs(tmp_path), tmp_path / "out.jsonl"
    filler = small_disk / "filler"

    def fill() -> None:
        with filler.open("wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    args = ["evaluate", "--input", str(pairs), "--output", str(out), "--concurrency", "3"]
    code, _ = _run_until_held(held, args, fill)
    err = capsys.readouterr().err
    assert code == 1 and "is full: free space there" in err and "Traceback" not in err, err
    assert not (small_disk / "consistency.db.reserve").exists(), "no reserve could be made"
    assert len(list(elsewhere.glob("consistency-held-*.json"))) == 1, "the answers were set aside off the full disk"
    answered = held.seen
    assert answered < N
    filler.unlink()  # space freed
    assert cli.main(args) == 0
    assert held.seen == N, "the answers set aside were written: none asked for twice"
    assert _statuses(url) == {"done": N}
    assert not list(elsewhere.glob("consistency-held-*.json"))
