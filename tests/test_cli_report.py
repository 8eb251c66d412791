"""`cli.py report`: the meta-evaluation of a batch as JSON, with the human alpha and its n."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

import cli
from db.models import DatasetItem
from services import datasets
from services.database import get_engine
from tests.metaeval_seed import Item, add_batch, seed
from tests.support.metaeval import HAND, LABELLED
from tests.support.qags import QAGS_FILE, qags_alpha

C, X = "consistent", "inconsistent"


def test_report_writes_every_table_with_the_human_alpha_and_its_n(tmp_path, capsys):
    _, bid = seed(get_engine(), LABELLED + HAND)
    out = tmp_path / "reports" / "r.json"
    assert cli.main(["report", "--run", str(bid), "--output", str(out), "--boot", "50", "--seed", "3"]) == 0
    rep = json.loads(out.read_text(encoding="utf-8"))
    h = rep["human_agreement"]
    assert h["alpha"] is not None and h["n_sentences"] == 8 and h["n_workers"] == 4
    assert h["ci_low"] <= h["alpha"] <= h["ci_high"]
    assert rep["settings"] == {
        "threshold": 1.0,
        "seed": 3,
        "bootstrap_resamples": 50,
        "other_batch_id": None,
        "positive_class": "consistent",
    }
    assert {r["statistic"] for r in rep["summary_level"]["correlations"]} == {"pearson", "spearman", "kendall", "auroc"}
    assert rep["sentence_level"]["n_compared"] == 6
    assert rep["bundle"]["batch"]["id"] == bid and rep["bundle"]["prompts"]
    sel = rep["selective"]  # risk-coverage and reliability, numbers included
    last = sel["risk_coverage"][-1]
    assert last["n_decided"] == sel["n_items"] == 8 and last["coverage"] == 1.0 and 0 <= sel["ece"] <= 1
    assert sum(b["n"] for b in sel["reliability"]) == sel["n_items"]
    assert f"human alpha {h['alpha']:.4f} over 8 sentences" in capsys.readouterr().err


def test_report_prints_to_stdout_and_takes_a_threshold(capsys):
    _, bid = seed(get_engine(), HAND)
    assert cli.main(["report", "--run", str(bid), "--threshold", "0.6", "--boot", "0"]) == 0
    rep = json.loads(capsys.readouterr().out)
    c = rep["summary_level"]["classification"]
    assert (c["threshold"], c["tp"], c["fp"], c["fn"], c["tn"]) == (0.6, 3, 2, 0, 3)  # consistent = positive
    assert rep["human_agreement"]["alpha"] is None and rep["human_agreement"]["n_sentences"] == 0
    assert rep["human_agreement"]["notes"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "99"], "Batch 99 does not exist"),
        (["--run", "1", "--threshold", "2"], "--threshold must be between 0 and 1"),
        (["--run", "1", "--boot", "-1"], "--boot must be 0 or more"),
    ],
)
def test_unknown_batch_or_bad_option_exits_2_with_a_message(argv, message, capsys):
    seed(get_engine(), HAND)
    assert cli.main(["report", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="../shared/data/qags_cnndm_mturk.jsonl is not present")
def test_report_on_qags_has_the_exact_human_alpha(tmp_path):
    engine = get_engine()
    data = Path(QAGS_FILE).read_bytes()
    saved = datasets.save_dataset(engine, name="QAGS-CNN/DM", data=data, result=datasets.read_qags(data))
    with Session(engine) as s:
        rows = s.exec(select(DatasetItem).where(DatasetItem.dataset_id == saved.id).order_by(DatasetItem.idx)).all()
        # A judge that flags the first sentence of every third summary.
        items = [
            Item([[X if i % 3 == 0 and j == 0 else C for j in range(len(r.sentences))]]) for i, r in enumerate(rows)
        ]
    bid = add_batch(engine, saved.id, items)
    out = tmp_path / "qags.json"
    assert cli.main(["report", "--run", str(bid), "--output", str(out), "--boot", "100"]) == 0
    h = json.loads(out.read_text(encoding="utf-8"))["human_agreement"]
    assert abs(h["alpha"] - qags_alpha()) < 1e-12
    assert (h["n_sentences"], h["n_items"]) == (714, 235)
