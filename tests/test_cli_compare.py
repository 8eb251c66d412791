"""`cli.py compare`: systems compared from a file of scores (or of pairs with --method), the output's exact
shape, and a one-line message with exit 2 for each kind of bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import cli
import services.embedded
from tests.support.judges import QAGS_FILE

SYSTEM_KEYS = {"reading", "system", "n", "n_labelled", "judge_rate", "classical", "ppi"}
DIFF_KEYS = {"reading", "a", "b", "estimate", "ci", "significant", "decided", "sentence"}


@pytest.fixture(autouse=True)
def _db(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")


def _rows(rates: dict[str, float], n: int = 300, labelled: int = 60, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for name, rate in rates.items():
        y = (rng.random(n) < rate).astype(int)
        score = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, n), 0, 1)
        for i in range(n):
            row = {"id": f"{name}-{i}", "system": name, "score": round(float(score[i]), 4), "reference": f"doc{i}"}
            if i < labelled:
                row["label"] = int(y[i])
            out.append(row)
    return out


def _write(tmp_path, rows, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_compare_writes_each_system_and_each_difference(tmp_path, capsys):
    path, out = _write(tmp_path, _rows({"old": 0.55, "new": 0.95, "mid": 0.75})), tmp_path / "out.json"
    assert cli.main(["compare", "--input", str(path), "--output", str(out), "--alpha", "0.1", "--mode", "planned"]) == 0
    got = json.loads(out.read_text(encoding="utf-8"))
    assert set(got) == {"reading", "systems", "differences"}
    assert got["reading"]["name"] == "planned" and got["reading"]["budget"] is None
    assert [s["system"] for s in got["systems"]] == ["old", "new", "mid"]
    for s in got["systems"]:
        assert set(s) == SYSTEM_KEYS and (s["n"], s["n_labelled"]) == (300, 60)
        assert set(s["classical"]) == {"estimate", "ci"} and set(s["ppi"]) == {"estimate", "ci", "basis"}
        for kind in ("classical", "ppi"):
            lo, hi = s[kind]["ci"]
            assert lo <= s[kind]["estimate"] <= hi
    assert [(d["a"], d["b"]) for d in got["differences"]] == [("old", "new"), ("old", "mid"), ("new", "mid")]
    for d in got["differences"]:
        assert set(d) == DIFF_KEYS
        lo, hi = d["ci"]
        assert lo <= d["estimate"] <= hi and d["significant"] == (lo > 0 or hi < 0)
    first = got["differences"][0]  # old minus new: about -0.4
    assert first["significant"] and first["ci"][1] < 0
    old, new = got["systems"][0], got["systems"][1]
    assert first["estimate"] == pytest.approx(old["ppi"]["estimate"] - new["ppi"]["estimate"])
    err = capsys.readouterr().err
    assert "new is more consistent than old by" in err and "Bonferroni over 3 pair(s)" in err
    # new, at 95%, has fewer than 15 inconsistent labels among its 60: its "ppi" is its labels' own interval,
    # and says so; old has both classes aplenty and an informative judge: prediction-powered.
    assert new["ppi"]["basis"] == "labels only: fewer than 15 of each class"
    assert new["ppi"]["estimate"] == new["classical"]["estimate"] and new["ppi"]["ci"] == new["classical"]["ci"]
    assert old["ppi"]["basis"] == "prediction-powered: labels and the judge's scores"
    assert "new: 60 labelled of 300; labels only: fewer than 15 of each class" in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("system"), 'line 1: no "system"'),
        (lambda r: r.update(label=2), "line 1: label 2 is not 0 or 1"),
        (lambda r: r.update(label="yes"), 'line 1: label "yes" is not 0 or 1'),
        (lambda r: r.update(score=1.5), "line 1: score 1.5 is outside [0, 1]"),
        (lambda r: r.update(score=-0.1), "line 1: score -0.1 is outside [0, 1]"),
        (lambda r: r.update(score=math.nan), "line 1: score NaN is not a finite number"),
        (lambda r: r.update(score=math.inf), "line 1: score Infinity is not a finite number"),
        (lambda r: r.update(score="0.5"), 'line 1: score "0.5" is not a finite number'),
        (lambda r: r.pop("score"), 'line 1: no "score"'),
        (lambda r: r.pop("id"), 'line 1: no "id"'),
        (lambda r: r.update(id="old-1"), 'line 1: id "old-1" repeats'),
    ],
)
def test_bad_lines_get_one_line_naming_the_line_and_the_fix(tmp_path, capsys, change, message):
    rows = _rows({"old": 0.5, "new": 0.8}, n=20, labelled=5)
    change(rows[0])
    if "repeats" in message:  # the repeat is the later line
        rows[0], rows[1] = rows[1], rows[0]
        message = message.replace("line 1", "line 2").replace("repeats", "repeats line 1")
    path = _write(tmp_path, rows)
    assert cli.main(["compare", "--input", str(path), "--output", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and message in err, err
    assert ";" in err  # the fix follows the problem
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (_rows({"only": 0.5}, n=20, labelled=5), 'only one system ("only")'),
        (
            [r for r in _rows({"a": 0.5, "b": 0.5}, n=20, labelled=5) if r["system"] == "a" or "label" not in r]
            + [{"id": "b-x", "system": "b", "score": 0.3, "label": 1}],
            'system "b" has 1 labelled line(s); label at least 2',
        ),
        (["{not json"], "line 1: not JSON"),
        (["[1, 2]"], "line 1: not a JSON object"),
        ([], "no lines"),
    ],
    ids=["one-system", "too-few-labels", "not-json", "not-object", "empty"],
)
def test_files_that_cannot_be_compared_get_one_line(tmp_path, capsys, rows, message):
    path = _write(tmp_path, rows)
    assert cli.main(["compare", "--input", str(path), "--output", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("alpha", ["0", "1", "-0.1"])
def test_alpha_outside_0_1_is_refused(tmp_path, capsys, alpha):
    path = _write(tmp_path, _rows({"a": 0.5, "b": 0.8}, n=20, labelled=5))
    assert cli.main(["compare", "--input", str(path), "--output", str(tmp_path / "o.json"), "--alpha", alpha]) == 2
    assert "--alpha must be between 0 and 1" in capsys.readouterr().err


def test_with_method_reference_and_candidate_are_required(tmp_path, capsys):
    rows = [{"id": "1", "system": "a", "reference": "The cat sat.", "label": 1}]
    path = _write(tmp_path, rows)
    assert (
        cli.main(["compare", "--input", str(path), "--output", str(tmp_path / "o.json"), "--method", "evidence"]) == 2
    )
    assert 'line 1: no "candidate" text' in capsys.readouterr().err


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="the QAGS file in ../shared/data is absent")
def test_compare_runs_the_offline_judge_first_with_method(tmp_path, monkeypatch):
    monkeypatch.setattr(services.embedded, "get_embedded_server", lambda: pytest.fail("no model may start"))
    rows = [json.loads(line) for line in QAGS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()][:40]
    lines = []
    for i, r in enumerate(rows):
        sents = r["summary_sentences"]
        votes = [sum(x["response"] == "yes" for x in s["responses"]) * 2 > len(s["responses"]) for s in sents]
        line = {
            "id": str(i),
            "system": "first half" if i < 20 else "second half",
            "reference": r["article"],
            "candidate": " ".join(s["sentence"] for s in sents),
        }
        if i % 2 == 0:
            line["label"] = int(all(votes))
        lines.append(line)
    path, out = _write(tmp_path, lines), tmp_path / "out.json"
    assert cli.main(["compare", "--input", str(path), "--output", str(out), "--method", "evidence"]) == 0
    got = json.loads(out.read_text(encoding="utf-8"))
    assert [(s["system"], s["n"], s["n_labelled"]) for s in got["systems"]] == [
        ("first half", 20, 10),
        ("second half", 20, 10),
    ]
    assert all(0 <= s["judge_rate"] <= 1 for s in got["systems"])
    (d,) = got["differences"]
    assert set(d) == DIFF_KEYS and d["ci"][0] <= d["estimate"] <= d["ci"][1]


def test_the_differences_level_is_printed_without_rounding_it_up(tmp_path, capsys):
    """Nine systems make 36 pairs, each difference at 1 - 0.05/36 = 99.861%: printed "99.86%", since "99.9%"
    would say an error rate of 0.1% where it is 0.139%."""
    rows = _rows({f"s{k}": 0.5 + 0.05 * k for k in range(9)}, n=20, labelled=10)
    path, out = _write(tmp_path, rows), tmp_path / "out.json"
    assert cli.main(["compare", "--input", str(path), "--output", str(out)]) == 0
    assert "differences at 99.86% each (Bonferroni over 36 pair(s)):" in capsys.readouterr().err


def test_the_gate_fails_when_a_system_is_decided_worse_than_the_baseline(tmp_path, capsys):
    path, out = _write(tmp_path, _rows({"old": 0.95, "new": 0.55}, labelled=120)), tmp_path / "out.json"
    args = ["compare", "--input", str(path), "--output", str(out), "--baseline", "old", "--fail-if-worse"]
    assert cli.main(args) == 1
    got = json.loads(out.read_text(encoding="utf-8"))
    assert got["reading"]["name"] == "live" and "Waudby-Smith" in got["reading"]["citation"]
    assert got["differences"][0]["decided"] is True
    err = capsys.readouterr().err
    assert "worse than old: You can stop labelling old and new: old is more consistent than new by" in err
    # the other way round, new is the baseline: nothing is worse than it
    args[args.index("old")] = "new"
    assert cli.main(args) == 0
    assert "no system is decided worse than new" in capsys.readouterr().err


def test_the_gate_passes_while_no_difference_is_decided(tmp_path, capsys):
    path, out = _write(tmp_path, _rows({"old": 0.7, "new": 0.68}, labelled=40)), tmp_path / "out.json"
    args = ["compare", "--input", str(path), "--output", str(out), "--baseline", "old", "--fail-if-worse"]
    assert cli.main(args) == 0
    assert "keep labelling" in capsys.readouterr().err


def test_planned_with_a_budget_says_when_reading_early_voids_the_level(tmp_path, capsys):
    path, out = _write(tmp_path, _rows({"old": 0.95, "new": 0.55}, labelled=60)), tmp_path / "out.json"
    args = ["compare", "--input", str(path), "--output", str(out), "--mode", "planned", "--budget", "100"]
    assert cli.main([*args, "--baseline", "old", "--fail-if-worse"]) == 0  # significant, but not decided yet
    got = json.loads(out.read_text(encoding="utf-8"))
    assert got["reading"]["name"] == "planned" and got["reading"]["budget"] == 100
    assert got["differences"][0]["significant"] and not got["differences"][0]["decided"]
    assert "voids its level" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--budget", "50"], "--budget goes with --mode planned"),
        (["--fail-if-worse"], "--fail-if-worse needs --baseline"),
        (["--baseline", "nobody"], 'no system "nobody" for --baseline'),
    ],
)
def test_bad_reading_options_are_refused_with_a_message(tmp_path, capsys, extra, message):
    path = _write(tmp_path, _rows({"old": 0.9, "new": 0.6}))
    assert cli.main(["compare", "--input", str(path), "--output", str(tmp_path / "o.json"), *extra]) == 2
    assert message in capsys.readouterr().err
