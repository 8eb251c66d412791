"""`cli.py distill` and `cli.py report --html`: files written from batches, Table 7 printed, exit 2 with a
message for what the user must fix."""

from __future__ import annotations

import json

import cli
from services import runs
from services.config import BackendConfig
from services.database import get_engine
from services.dcr import DCRConfig
from tests.app.helpers import CAND, REF
from tests.fakes import toy_judge
from tests.metaeval_seed import Item, add_batch, seed
from tests.support.distill import many
from tests.support.waiting import HEALTHY_TIMEOUT

C, X = "consistent", "inconsistent"


def test_distill_writes_train_test_and_manifest_and_prints_table7(tmp_path, capsys):
    _, bid, _ = many(get_engine(), n_docs=10)
    out = tmp_path / "set"
    assert (
        cli.main(
            [
                "distill",
                "--run",
                str(bid),
                "--split",
                "in-domain",
                "--format",
                "plain",
                "--output",
                str(out),
                "--seed",
                "5",
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    assert "R-Ratio" in printed.out and "50%" in printed.out
    train = [json.loads(x) for x in (out / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    test = [json.loads(x) for x in (out / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert (
        len(train) == manifest["table7"]["n_train"] == 2 * 8 * 3 and len(test) == 2 * 2 * 3
    )  # each test item asked with and without reasoning
    assert set(train[0]) == {"prompt", "completion"} and manifest["format"] == "plain" and manifest["seed"] == 5
    assert not set(manifest["train_document_ids"]) & set(manifest["test_document_ids"])
    assert "wrote" in printed.err


def test_distill_errors_exit_2_with_a_message(tmp_path, capsys):
    assert cli.main(["distill", "--run", "77", "--output", str(tmp_path)]) == 2
    assert "Batch 77 does not exist" in capsys.readouterr().err
    _, bid, _ = many(get_engine(), n_docs=4)
    assert cli.main(["distill", "--run", str(bid), "--split", "ood", "--output", str(tmp_path)]) == 2
    assert "at least two datasets" in capsys.readouterr().err


def test_report_html_for_a_batch_and_a_run(tmp_path, capsys, fake):
    _, bid = seed(
        get_engine(), [Item([[C, X]], human_score=0.5, human_label=0), Item([[C]], human_score=1.0, human_label=1)]
    )
    out = tmp_path / "r" / "batch.html"
    assert cli.main(["report", "--run", str(bid), "--html", str(out), "--boot", "50"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # only --html: no JSON printed
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and f"Batch #{bid}" in page and "Plotly.newPlot(" in page
    assert "wrote" in captured.err

    other = add_batch(get_engine(), 1, [Item([[C, C]]), Item([[X]])], method="paragraph")
    compared = tmp_path / "compared.html"
    assert cli.main(["report", "--run", str(bid), "--html", str(compared), "--compare", str(other), "--boot", "0"]) == 0
    assert "Paragraph level + AMC (rule)" in compared.read_text(encoding="utf-8")  # Figure 3's row of the other

    both = tmp_path / "both.json"
    assert cli.main(["report", "--run", str(bid), "--html", str(out), "--output", str(both), "--boot", "0"]) == 0
    assert json.loads(both.read_text(encoding="utf-8"))["batch_id"] == bid  # the JSON output is kept

    fake.responder = toy_judge(bad="1999", fix="1889")
    backend = BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=HEALTHY_TIMEOUT
    )
    rid = runs.start_run(get_engine(), backend, REF, CAND, DCRConfig())
    run_html = tmp_path / "run.html"
    assert cli.main(["report", "--kind", "run", "--run", str(rid), "--html", str(run_html)]) == 0
    assert f"Run #{rid}" in run_html.read_text(encoding="utf-8")

    assert cli.main(["report", "--kind", "run", "--run", "999", "--html", str(run_html)]) == 2
    assert "Run 999 does not exist" in capsys.readouterr().err
    assert cli.main(["report", "--kind", "run", "--run", str(rid)]) == 2
    assert "--kind needs --html" in capsys.readouterr().err
