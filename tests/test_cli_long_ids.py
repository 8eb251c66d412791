"""Ids longer than 200 characters are kept whole wherever rows are keyed by id: `cli.py card`, `compare --method`
and `evaluate` store the items and read them back by their whole id (two ids that differ only after their 200th
character stay two items, with their own labels)."""

from __future__ import annotations

import json

import pytest

import cli

REF = "The council approved 40 million dollars on Tuesday."
CANDIDATES = ["The council approved 40 million dollars.", "The council approved 90 million dollars on Monday."]


def long_id(i: int) -> str:
    return "x" * 200 + f"-{i:09d}"  # 210 characters, equal up to the 200th


@pytest.fixture(autouse=True)
def _db(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")


def _write(tmp_path, rows) -> str:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _rows(**extra) -> list[dict]:
    return [
        {"id": long_id(i), "reference": REF, "candidate": CANDIDATES[i % 2], "label": 1 - i % 2, **extra}
        for i in range(6)
    ]


def test_card_counts_every_labelled_row_of_long_ids(tmp_path):
    out = tmp_path / "card.json"
    assert cli.main(["card", "--input", _write(tmp_path, _rows()), "--method", "evidence", "--output", str(out)]) == 0
    card = json.loads(out.read_text(encoding="utf-8"))
    assert (card["n"], card["n_labelled"]) == (6, 6)


def test_compare_with_a_method_gives_each_system_its_judge_rate_over_long_ids(tmp_path):
    rows = [{**r, "system": "a" if i < 3 else "b"} for i, r in enumerate(_rows())]
    out = tmp_path / "compare.json"
    code = cli.main(["compare", "--input", _write(tmp_path, rows), "--output", str(out), "--method", "evidence"])
    assert code == 0
    systems = json.loads(out.read_text(encoding="utf-8"))["systems"]
    assert [(s["system"], s["n"], s["n_labelled"]) for s in systems] == [("a", 3, 3), ("b", 3, 3)]
    assert all(s["judge_rate"] is not None for s in systems)


def test_evaluate_writes_each_long_id_whole(tmp_path):
    out = tmp_path / "out.jsonl"
    rows = [{k: v for k, v in r.items() if k != "label"} for r in _rows()]
    assert cli.main(["evaluate", "--input", _write(tmp_path, rows), "--output", str(out), "--method", "evidence"]) == 0
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [g["id"] for g in got] == [long_id(i) for i in range(6)]
    assert all(g["error"] is None and g["score"] is not None for g in got)
