"""`cli.py dhp run` and `cli.py dhp stats`."""

from __future__ import annotations

import csv
import json
import math
import re

import pytest
from scipy import stats as sps

import cli
from tests.fakes import last_user
from tests.support.dhp import rated_text

ROWS = [  # item, perturbation, level, metric, original, perturbed
    *[(f"i{i}", "typo:minor", "character", "Fluency", 5, 5 - (i % 3)) for i in range(12)],
    *[(f"i{i}", "typo:minor", "character", "Coherence", 4, 4) for i in range(12)],
    *[(f"i{i}", "reorder:major", "sentence", "Fluency", 4.2, 4.2 - 0.2 * (i % 2)) for i in range(12)],
    *[(f"i{i}", "reorder:major", "sentence", "Coherence", 5, 5 - (i % 4 > 0)) for i in range(12)],
]


def write_scores(path, rows=ROWS):
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "perturbation", "level", "metric", "original", "perturbed"])
        w.writerows(rows)
    return path


def test_stats_writes_p_per_metric_combined_p_and_d(tmp_path, capsys):
    scores = write_scores(tmp_path / "s.csv")
    ew = tmp_path / "ew.json"
    ew.write_text(json.dumps({"typo": {"Fluency": 0.8, "Coherence": 0.2}, "reorder:major": {"Coherence": 1}}))
    out = tmp_path / "o.json"
    assert cli.main(["dhp", "stats", "--scores", str(scores), "--weights", str(ew), "--output", str(out)]) == 0
    rep = json.loads(out.read_text())
    typo = rep["perturbations"][0]
    fl = [r for r in ROWS if r[1] == "typo:minor" and r[3] == "Fluency"]
    p_ref = float(sps.wilcoxon([r[4] for r in fl], [r[5] for r in fl], alternative="greater").pvalue)
    assert typo["p"]["Fluency"] == pytest.approx(p_ref) and typo["p"]["Coherence"] == 1.0
    assert typo["tests"][1]["n_ties"] == 12
    assert typo["p_hmp"] == pytest.approx(1 / (1 / p_ref + 1 / 1.0))  # the paper's 1 / sum_j (1/p_j)
    assert typo["p_wilson"] == pytest.approx(1 / (0.5 / p_ref + 0.5 / 1.0))
    assert typo["p_hmp_ew"] == pytest.approx(1 / (0.8 / p_ref + 0.2 / 1.0))
    assert typo["weights"] == pytest.approx({"Fluency": 0.8, "Coherence": 0.2})
    reorder = rep["perturbations"][1]
    # All the expert weight on Coherence: D_EW is log_0.05 of Coherence's own p.
    assert reorder["D_EW"] == pytest.approx(math.log(reorder["p"]["Coherence"]) / math.log(0.05))
    assert rep["D_avg"] == pytest.approx((typo["D"] + reorder["D"]) / 2)
    assert rep["D_min"] == pytest.approx(min(typo["D"], reorder["D"]))
    assert {"D_EW_avg", "D_EW_min", "formula"} <= set(rep)
    assert "D_avg" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("item_id,perturbation,metric,original,perturbed\n1,typo,F,5,4\n", "missing column(s) level"),
        ("item_id,perturbation,level,metric,original,perturbed\n1,typo,character,F,five,4\n", "s.csv:2: original"),
        ("item_id,perturbation,level,metric,original,perturbed\n", "no rows"),
    ],
)
def test_stats_says_what_is_wrong_with_the_scores(tmp_path, capsys, content, message):
    path = tmp_path / "s.csv"
    path.write_text(content)
    assert cli.main(["dhp", "stats", "--scores", str(path), "--output", str(tmp_path / "o.json")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "o.json").exists()


def test_stats_refuses_bad_weights(tmp_path, capsys):
    scores = write_scores(tmp_path / "s.csv")
    ew = tmp_path / "ew.json"
    ew.write_text(json.dumps({"typo": {"Fluency": -1}}))
    assert cli.main(["dhp", "stats", "--scores", str(scores), "--weights", str(ew), "--output", "o.json"]) == 2
    assert "0 or more" in capsys.readouterr().err
    assert cli.main(["dhp", "stats", "--scores", str(tmp_path / "none.csv"), "--output", "o.json"]) == 2
    assert "no such file" in capsys.readouterr().err


def two_evaluators(originals: dict[str, str]):
    """m-good rates 5 the original answer of the question asked and anything else 2; m-blind rates all 3."""

    def respond(body: dict) -> dict:
        if body["model"] == "m-blind":
            return "3"
        content = last_user(body)
        question = re.search(r"Question:\n\n(.*?)\n\n", content, re.S).group(1)
        text = rated_text(content, "Answer")
        return "5" if originals.get(question) == text else "2"

    return respond


def test_run_perturbs_scores_each_model_and_writes_discernment(tmp_path, fake, monkeypatch, capsys):
    text = "The answer to question {} is that the river Aire flows through Leeds and joins the Ouse near Airmyn."
    items = [{"id": f"q{i}", "source": f"Question {i}?", "text": text.format(i)} for i in range(10)]
    inp = tmp_path / "qa.jsonl"
    inp.write_text("\n".join(json.dumps(r) for r in items))
    fake.responder = two_evaluators({r["source"]: r["text"] for r in items})
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "m-good")
    out = tmp_path / "run.json"
    scores_out = tmp_path / "scores.csv"
    code = cli.main(
        [
            "dhp",
            "run",
            "--task",
            "qa",
            "--input",
            str(inp),
            "--models",
            "m-good",
            "m-blind",
            "--repeats",
            "2",
            "--seed",
            "4",
            "--output",
            str(out),
            "--rule-only",
            "--scores-out",
            str(scores_out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    rep = json.loads(out.read_text())
    good, blind = rep["models"]
    assert good["model"] == "m-good" and good["status"] == "done"
    assert [p["perturbation"] for p in good["perturbations"]] == [
        "char_deletion:minor",
        "char_deletion:major",
        "typo:minor",
        "typo:major",
        "random_answer",
    ]
    assert all(p["D"] > 1 for p in good["perturbations"]) and good["D_min"] > 1
    assert all(p["D"] == 0 for p in blind["perturbations"]) and blind["D_min"] == 0
    # --rule-only leaves out the word level of Table 1: D_avg is not comparable, so it is left empty
    assert blind["D_avg"] is None and "not comparable" in blind["D_avg_note"]
    assert all(p["tests"][0]["n_ties"] == 10 for p in blind["perturbations"])
    # 10 items x (1 original + 5 perturbations) x 1 metric x 2 repeats, per model
    assert len(fake.requests) == 2 * 10 * 6 * 2
    # The scores CSV feeds `dhp stats` and gives the same D.
    stats_out = tmp_path / "stats.json"
    import pandas as pd

    pd.read_csv(scores_out).query("model == 'm-good'").drop(columns="model").to_csv(tmp_path / "g.csv", index=False)
    assert cli.main(["dhp", "stats", "--scores", str(tmp_path / "g.csv"), "--output", str(stats_out)]) == 0
    stats = json.loads(stats_out.read_text())
    assert stats["D_min"] == pytest.approx(good["D_min"]) and stats["D_wilson_min"] == pytest.approx(
        good["D_wilson_min"]
    )
    assert stats["D_avg"] is not None  # no task named: nothing to compare the levels with
    args = ["dhp", "stats", "--scores", str(tmp_path / "g.csv"), "--task", "qa", "--output", str(stats_out)]
    assert cli.main(args) == 0 and json.loads(stats_out.read_text())["D_avg"] == good["D_avg"] is None


def test_run_refuses_unknown_tasks_and_perturbations(tmp_path, capsys):
    inp = tmp_path / "x.jsonl"
    inp.write_text(json.dumps({"id": "a", "text": "Hello there."}))
    assert cli.main(["dhp", "run", "--task", "poetry", "--input", str(inp), "--output", "o.json"]) == 2
    assert "unknown task 'poetry'" in capsys.readouterr().err
    assert (
        cli.main(
            [
                "dhp",
                "run",
                "--task",
                "qa",
                "--input",
                str(inp),
                "--output",
                "o.json",
                "--perturbations",
                "reorder:minor",
            ]
        )
        == 2
    )
    assert "has no perturbation reorder:minor" in capsys.readouterr().err
    inp.write_text('{"id": "a"}\n')
    assert cli.main(["dhp", "run", "--task", "qa", "--input", str(inp), "--output", "o.json"]) == 2
    assert "no text" in capsys.readouterr().err
