"""`cli.py evaluate` and `cli.py batch` with --method summ-nli|sent-nli|qg-qa and --window."""

from __future__ import annotations

import json

import pytest

import cli
from services.database import get_engine
from services.jobs import batches
from tests.app.helpers import CAND, REF
from tests.nli_fakes import nli_judge


@pytest.fixture
def env(fake, monkeypatch, tmp_path):
    fake.responder = nli_judge()
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    return fake


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": "a", "reference": REF, "candidate": CAND}, {"id": "b", "reference": REF, "candidate": "Paris."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_evaluate_sent_nli_lines_carry_the_windows(env, pairs, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    args = ["evaluate", "--input", str(pairs), "--output", str(out), "--method", "sent-nli", "--window", "2"]
    assert cli.main(args) == 0
    a, b = (json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())
    assert (a["method"], a["window"], a["label"]) == ("sent-nli", 2, "inconsistent")
    assert [(w["start"], w["end"], w["label"]) for w in a["windows"]] == [(0, 2, "inconsistent"), (2, 3, "consistent")]
    assert "1999" in a["windows"][0]["reasoning"] and a["usage"]["calls"] == 2
    assert [s["verdict"] for s in a["sentences"]] == ["inconsistent", "inconsistent", "consistent"]
    assert b["label"] == "consistent"
    assert a["batch"] == b["batch"] and batches.progress(get_engine(), a["batch"]).batch.method == "sent-nli"
    assert "window 2" in capsys.readouterr().err


def test_evaluate_qg_qa_lines_carry_the_question_answer_pairs(env, pairs, tmp_path):
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out), "--method", "qg-qa"]) == 0
    a = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert [(p["question"], p["expected_answer"], p["judgement"]) for p in a["pairs"]][1] == (
        "What is said in: It was completed in 1999.",
        "1999",
        "inconsistent",
    )
    assert {"answer", "reasoning", "error", "context"} <= set(a["pairs"][0])


def test_evaluate_refuses_window_0(env, pairs, tmp_path, capsys):
    args = ["evaluate", "--input", str(pairs), "--output", str(tmp_path / "o.jsonl"), "--method", "qg-qa"]
    assert cli.main([*args, "--window", "0"]) == 2
    assert "--window" in capsys.readouterr().err


def test_batch_with_repeats_and_output(env, pairs, tmp_path, capsys):
    out = tmp_path / "items.jsonl"
    args = ["batch", "--dataset", str(pairs), "--format", "jsonl", "--method", "summ-nli", "--repeats", "2"]
    assert cli.main([*args, "--output", str(out)]) == 0
    ids = [int(x) for x in capsys.readouterr().out.split()]
    assert len(ids) == 2
    assert [batches.options(get_engine(), b).sample for b in ids] == [0, 1]
    assert [batches.progress(get_engine(), b).calls for b in ids] == [2, 2]  # the repeat is not read from the cache
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(x["batch"], x["id"], x["label"]) for x in lines] == [
        (ids[0], "a", "inconsistent"),
        (ids[0], "b", "consistent"),
        (ids[1], "a", "inconsistent"),
        (ids[1], "b", "consistent"),
    ]
    assert lines[0]["summary"]["reasoning"]


def test_report_on_an_nli_batch_names_its_method_and_prompts(env, pairs, tmp_path, capsys):
    args = ["batch", "--dataset", str(pairs), "--format", "jsonl", "--method", "sent-nli", "--window", "2"]
    assert cli.main(args) == 0
    bid = int(capsys.readouterr().out.strip())
    out = tmp_path / "r.json"
    assert cli.main(["report", "--run", str(bid), "--output", str(out), "--boot", "0"]) == 0
    rep = json.loads(out.read_text(encoding="utf-8"))
    prompts = {p["role"]: p for p in rep["bundle"]["prompts"]}
    assert prompts["evaluator"]["id"] == "sent-nli@1" and prompts["evaluator"]["sha256"]
    assert prompts["window"]["id"] == "2"
