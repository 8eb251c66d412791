"""The input limit (MAX_INPUT_CHARS, 200,000 characters by default) holds on the batch and CLI paths as on the
page: an item over it is refused before any call, with its id and the limit, and the pre-run estimate shows the
input tokens (the largest call's among them) and how many documents it refuses."""

from __future__ import annotations

import json

import pytest

import cli
from services.config import backend_from_settings
from services.jobs import batches
from tests.fakes import toy_judge
from tests.support.batches import BAD, EVAL, FIX, REF, make_dataset


@pytest.fixture
def env(tmp_path, fake, monkeypatch):
    fake.responder = toy_judge(BAD, FIX)
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    return fake


def _pairs(tmp_path, big_chars: int):
    rows = [{"id": f"d{i}", "reference": REF, "candidate": f"It cost {BAD} dollars on day {i}."} for i in range(3)]
    rows[1]["reference"] = "The council met." + " The council met." * (big_chars // 17)  # one long line
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_evaluate_refuses_an_item_over_the_default_limit_before_any_call(env, tmp_path, capsys):
    path, out = _pairs(tmp_path, 250_000), tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", str(path), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    lines = {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert lines["d0"]["error"] is None and lines["d2"]["error"] is None
    assert "the reference is 250,001 characters; the limit is 200,000" in lines["d1"]["error"]
    assert "d1: the reference is 250,001 characters" in err
    assert len(env.requests) == 2 and all(
        "The council met. The council met." not in json.dumps(r) for r in env.requests
    )
    assert "1 document over the 200,000-character limit refused, not sent" in err
    assert "about 2 calls" in err and "the largest call carries about" in err


def test_the_limit_comes_from_the_environment_on_the_cli_too(env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MAX_INPUT_CHARS", "500")
    path, out = _pairs(tmp_path, 600), tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", str(path), "--output", str(out)]) == 0
    errors = [json.loads(x)["error"] for x in out.read_text().splitlines()]
    assert errors[0] is None and "the limit is 500" in errors[1] and errors[2] is None
    assert len(env.requests) == 2


def test_a_worker_refuses_an_item_over_the_limit_set_where_it_runs(engine, fake, monkeypatch):
    """A batch made under a larger limit (or a failed item re-run) is still bounded where it is processed."""
    fake.responder = toy_judge(BAD, FIX)
    ds = make_dataset(engine, 3)
    backend = backend_from_settings().with_changes(kind="openai", base_url=fake.base_url, model="fake-model")
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=EVAL)
    monkeypatch.setenv("MAX_INPUT_CHARS", "40")  # every reference (85 characters) is now over it
    batches.process_batch(engine, bid, backend=backend)
    assert fake.requests == []
    failed = batches.failed_items(engine, bid)
    assert len(failed) == 3 and all("the reference is 85 characters; the limit is 40" in f.error for f in failed)


def test_an_item_over_the_limit_is_refused_when_the_batch_is_made(engine, fake, monkeypatch):
    monkeypatch.setenv("MAX_INPUT_CHARS", "40")
    ds = make_dataset(engine, 2)
    backend = backend_from_settings().with_changes(kind="openai", base_url=fake.base_url, model="fake-model")
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=EVAL)
    p = batches.progress(engine, bid)
    assert (p.failed, p.pending) == (2, 0)
    assert batches.reopen(engine, bid, failed_too=True) == 0  # a re-run of failed items refuses them again
    assert batches.progress(engine, bid).failed == 2


def test_cli_batch_prints_the_estimate_with_the_refused_documents(env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MAX_INPUT_CHARS", "500")
    path = _pairs(tmp_path, 600)
    assert cli.main(["batch", "--dataset", str(path), "--format", "jsonl"]) == 0
    err = capsys.readouterr().err
    assert "about 2 calls" in err and "1 document over the 500-character limit refused, not sent" in err
    assert len(env.requests) == 2
