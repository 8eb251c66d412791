"""`cli.py evaluate` at its limits: a full disk says which disk and leaves every item to resume; a rerun against
another endpoint never resumes a batch of the first one."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

import cli
from db import batches as db_batches
from db.cache import BufferedSqlCache
from services import headless
from services.config import backend_from_settings
from services.database import get_engine
from services.dcr import DCRConfig
from services.errors import is_disk_full
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.batches import BAD, FIX, REF

N = 6


@pytest.fixture
def pairs(tmp_path, fake, monkeypatch):
    fake.responder = toy_judge(BAD, FIX)
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": f"d{i}", "reference": REF, "candidate": f"It cost {BAD} dollars on day {i}."} for i in range(N)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _statuses(url: str) -> dict[str, int]:
    eng = create_engine(url)
    try:
        with eng.connect() as conn:
            rows = conn.execute(text("SELECT status, count(*) FROM batch_item GROUP BY status")).all()
    finally:
        eng.dispose()
    return {s: int(n) for s, n in rows}


def _sqlite_full() -> Exception:
    return OperationalError("UPDATE batch_item ...", {}, sqlite3.OperationalError("database or disk is full"))


def _no_space() -> Exception:
    return OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize(
    ("where", "error"),
    [("results", _sqlite_full), ("cache", _no_space)],
    ids=["sqlite-full-at-the-results", "enospc-at-the-cache"],
)
def test_a_full_disk_names_data_dir_and_every_item_can_be_resumed(pairs, tmp_path, monkeypatch, capsys, where, error):
    monkeypatch.delenv("DATABASE_URL", raising=False)  # the default: a SQLite file in DATA_DIR
    data_dir = tmp_path / "data"
    monkeypatch.setenv("DATA_DIR", str(data_dir))
    out = tmp_path / "out.jsonl"
    full = {"on": True}
    if where == "results":
        real = db_batches.write_results

        def write_results(**kw):
            if full["on"] and kw["rows"]:
                raise error()
            return real(**kw)

        monkeypatch.setattr(db_batches, "write_results", write_results)
    else:
        real_write = BufferedSqlCache.write

        def write(self, conn, taken):
            if full["on"] and taken[0]:
                raise error()
            return real_write(self, conn, taken)

        monkeypatch.setattr(BufferedSqlCache, "write", write)

    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"the disk holding DATA_DIR ({data_dir.resolve()}) is full" in err, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    url = f"sqlite:///{data_dir / 'consistency.db'}"
    states = _statuses(url)
    assert set(states) == {"pending"}, states  # nothing written, nothing left claimed

    full["on"] = False  # space freed
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    assert " resumed" in capsys.readouterr().err
    assert [json.loads(x)["error"] for x in out.read_text().splitlines()] == [None] * N
    assert _statuses(url) == {"done": N}


def test_disk_full_is_recognised_through_the_wrappers():
    assert is_disk_full(_sqlite_full()) and is_disk_full(_no_space())
    try:
        try:
            raise _no_space()
        except OSError as exc:
            raise RuntimeError("flush failed") from exc
    except RuntimeError as wrapped:
        assert is_disk_full(wrapped)
    assert not is_disk_full(OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked")))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))


def test_a_rerun_against_another_endpoint_starts_its_own_batch_and_says_why(pairs, tmp_path, fake, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    engine = get_engine()
    first = headless.prepare(engine, path=pairs, backend=backend_from_settings(), cfg=DCRConfig(max_rounds=0))
    assert first.pending == N  # an unfinished batch on the first server

    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as other:
        monkeypatch.setenv("LLM_BASE_URL", other.base_url + "/")
        out = tmp_path / "out.jsonl"
        assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
        err = capsys.readouterr().err
        assert f"batch {first.batch_id} over this file with the same settings used {fake.base_url}" in err
        assert f"this run uses {other.base_url}" in err
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert {line["batch"] for line in lines} != {first.batch_id}
        assert len(other.requests) == N and not fake.requests

    monkeypatch.setenv("LLM_BASE_URL", fake.base_url + "/")  # the first endpoint again (the same, written with /)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    assert f"batch {first.batch_id} resumed" in capsys.readouterr().err
    assert {json.loads(x)["batch"] for x in out.read_text().splitlines()} == {first.batch_id}


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://127.0.0.1:8o00/v1", "http://[::1/v1"])
def test_a_malformed_base_url_is_a_clear_message_and_leaves_no_batch_running(pairs, tmp_path, monkeypatch, capsys, url):
    db = tmp_path / "cli.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("LLM_BASE_URL", url)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: LLM_BASE_URL") and "not a valid URL" in err and "Traceback" not in err
    assert not db.exists() or _statuses(f"sqlite:///{db}") == {}


def test_a_batch_recorded_with_a_malformed_url_is_refused_before_it_is_marked_running(engine, fake):
    from services.config import BackendConfig
    from services.errors import InputError
    from services.jobs import batches
    from tests.support.batches import make_dataset

    ds = make_dataset(engine, 2)
    bad = BackendConfig(kind="openai", base_url="http://127.0.0.1:abc/v1", model="fake-model")
    bid = batches.create_batch(engine, dataset_id=ds, backend=bad, cfg=DCRConfig(max_rounds=0))
    with pytest.raises(InputError, match="port must be a number"):
        batches.process_batch(engine, bid)
    assert batches.progress(engine, bid).batch.status == "queued"


def test_an_output_disk_that_is_full_is_named_and_the_results_are_kept(pairs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    out = tmp_path / "out" / "o.jsonl"
    real_open = Path.open

    def full_open(self, *a, **kw):
        if self.parent == out.parent:  # the output, or the part file it is written through
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", full_open)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"the disk holding {out.parent.resolve()} is full" in err and "Traceback" not in err
    monkeypatch.setattr(Path, "open", real_open)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0  # answered: written now
    assert [json.loads(x)["error"] for x in out.read_text().splitlines()] == [None] * N
