"""`cli.py` on the rows it is given: repeated ids are an error naming the lines, every row is used or refused
with its line and reason, and option values out of range are refused with a message."""

from __future__ import annotations

import json

import pytest

import cli


@pytest.fixture(autouse=True)
def _db(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")


def _write(tmp_path, rows, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _card(tmp_path, path, *args):
    out = tmp_path / "card.json"
    code = cli.main(["card", "--input", str(path), "--method", "evidence", "--output", str(out), *args])
    return code, (json.loads(out.read_text(encoding="utf-8")) if out.exists() else None)


REF = "The council approved 40 million dollars on Tuesday."


def test_card_refuses_repeated_ids_naming_their_lines(tmp_path, capsys):
    rows = [{"id": "same", "reference": REF, "candidate": f"It met on day {i}.", "label": i % 2} for i in range(6)]
    code, card = _card(tmp_path, _write(tmp_path, rows))
    err = capsys.readouterr().err
    assert code == 2 and card is None
    assert "id 'same' on lines 1, 2, 3, 4, 5, 6" in err and "Traceback" not in err


def test_card_in_csv_refuses_repeated_ids_too(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text(f"id,reference,candidate,label\na,{REF},It met.,1\nb,{REF},It met.,0\na,{REF},It sat.,0\n")
    code, _ = _card(tmp_path, path)
    assert code == 2 and "id 'a' on lines 2, 4" in capsys.readouterr().err


def test_card_counts_and_lists_the_rows_it_refuses(tmp_path, capsys):
    rows = [
        {"id": "a", "reference": REF, "candidate": "It approved 40 million dollars.", "label": 1},
        {"id": "b", "reference": REF, "candidate": "It approved 41 million dollars.", "label": 0},
        {"id": "c", "candidate": "It approved 40 million dollars.", "label": 1},
        {"id": "d", "reference": REF, "candidate": "  ", "label": 0},
    ]
    code, card = _card(tmp_path, _write(tmp_path, rows))
    err = capsys.readouterr().err
    assert code == 0
    assert (card["rows"], card["refused"], card["n"], card["n_labelled"]) == (4, 2, 2, 2)
    assert [r["line"] for r in card["refused_rows"]] == [3, 4]
    assert "no reference" in card["refused_rows"][0]["reason"]
    assert "no candidate" in card["refused_rows"][1]["reason"]
    assert "from 4 row(s), 2 refused" in err and "refused line 3: no reference" in err


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_card_refuses_a_non_finite_score_alike(tmp_path, capsys, value):
    rows = [f'{{"id": "a", "reference": "{REF}", "candidate": "It met.", "score": {value}}}']
    code, _ = _card(tmp_path, _write(tmp_path, rows))
    err = capsys.readouterr().err
    assert code == 2 and "line 1: score must be a number in [0, 1]" in err


@pytest.mark.parametrize("command", ["evaluate", "batch", "card", "conseval", "compare"])
@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_concurrency_below_one_is_refused_with_a_message(tmp_path, capsys, command, value):
    path = _write(tmp_path, [{"id": "a", "reference": REF, "candidate": "It met."}])
    args = {
        "evaluate": ["--input", str(path), "--output", str(tmp_path / "o.jsonl")],
        "batch": ["--dataset", str(path), "--format", "jsonl"],
        "card": ["--input", str(path), "--output", str(tmp_path / "c.json")],
        "compare": ["--input", str(path), "--output", str(tmp_path / "c.json"), "--method", "evidence"],
        "conseval": [],  # the option is refused before the missing required ones are named
    }[command]
    with pytest.raises(SystemExit) as exc:
        cli.main([command, *args, "--concurrency", value])
    assert exc.value.code == 2
    assert "argument --concurrency" in capsys.readouterr().err
    assert not (tmp_path / "cli.db").exists()  # refused before anything is made
