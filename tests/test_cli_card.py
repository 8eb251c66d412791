"""`cli.py card`: a judge card from a labelled file, offline with the evidence checker and through a scripted
endpoint; bad input gives a message and exit 2."""

from __future__ import annotations

import json
import random

import pytest

import cli
import services.embedded
from tests.nli_fakes import nli_judge
from tests.support.judges import QAGS_FILE

KEYS = {"judge", "n", "n_labelled", "judge_rate", "ppi", "classical", "agreement", "cost"}


@pytest.fixture(autouse=True)
def _db(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")


def _qags_rows(n: int, n_labelled: int, seed: int = 0) -> list[dict]:
    rows = [json.loads(line) for line in QAGS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
    keep = set(random.Random(seed).sample(range(len(rows)), n_labelled))
    out = []
    for i, r in enumerate(rows):
        sents = r["summary_sentences"]
        votes = [sum(x["response"] == "yes" for x in s["responses"]) * 2 > len(s["responses"]) for s in sents]
        row = {"id": str(i), "reference": r["article"], "candidate": " ".join(s["sentence"] for s in sents)}
        if i in keep:
            row["label"] = int(all(votes))
        out.append(row)
    return out


def _write(tmp_path, rows, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="the QAGS file in ../shared/data is absent")
def test_card_of_the_evidence_checker_on_qags_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(services.embedded, "get_embedded_server", lambda: pytest.fail("no model may start"))
    path, out = _write(tmp_path, _qags_rows(60, 30)), tmp_path / "card.json"
    assert cli.main(["card", "--input", str(path), "--method", "evidence", "--output", str(out)]) == 0
    card = json.loads(out.read_text(encoding="utf-8"))
    assert KEYS <= set(card)
    assert (card["n"], card["n_labelled"]) == (60, 30)
    lo, hi = card["ppi"]["ci"]
    assert lo <= card["ppi"]["estimate"] <= hi
    assert set(card["agreement"]) >= {"balanced_accuracy", "auroc", "kappa"}
    assert all(set(v) >= {"value", "ci"} for v in card["agreement"].values())
    assert card["cost"]["calls"] == 0
    assert "PPI" in capsys.readouterr().err


def test_card_through_a_scripted_endpoint_with_prices_and_alpha(tmp_path, fake, monkeypatch):
    fake.responder = nli_judge(bad="47")
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    ref = "The council approved 40 million dollars on Tuesday."
    rows = [
        {"id": f"r{i}", "reference": ref, "candidate": f"It approved {'47' if i % 3 == 0 else '40'} million dollars."}
        | ({"label": int(i % 3 != 0)} if i < 48 else {})  # 16 inconsistent labels: PPI needs 15 of each class
        for i in range(60)
    ]
    path, out = _write(tmp_path, rows), tmp_path / "card.json"
    args = ["card", "--input", str(path), "--method", "summ-nli", "--alpha", "0.1", "--output", str(out)]
    assert cli.main([*args, "--price-input", "2", "--price-output", "8"]) == 0
    card = json.loads(out.read_text(encoding="utf-8"))
    assert card["alpha"] == 0.1 and card["n_labelled"] == 48
    assert card["agreement"]["balanced_accuracy"]["value"] == 1.0
    assert card["judge_rate"] == pytest.approx(40 / 60)
    assert (card["n_judged"], card["n_abstained"], card["n_failed"]) == (60, 0, 0)
    assert card["label_origins"] == {"imported": 48} and card["n_not_random"] == 0
    assert card["cost"]["calls"] + card["cost"]["cache_hits"] >= 60  # equal candidates come from the cache
    assert card["cost"]["per_1000_documents"]["usd"] > 0
    live = card  # the default reading: confidence sequences, named in the JSON
    assert live["reading"]["name"] == "live" and "every number of labels" in live["reading"]["meaning"]
    assert "Howard" in live["reading"]["citation"]
    assert live["classical"]["method"] == "beta-binomial mixture"
    assert cli.main([*args, "--mode", "planned"]) == 0
    planned = json.loads(out.read_text(encoding="utf-8"))
    assert planned["reading"]["name"] == "planned" and "once" in planned["reading"]["meaning"]
    assert planned["ppi"]["estimate"] == pytest.approx(40 / 60, abs=0.02) and planned["ppi"]["method"] == "ppi++"
    assert planned["ppi"]["width"] < planned["classical"]["width"]
    for rate in ("classical", "ppi"):  # the same point; the live interval holds it and is wider at the same n
        assert live[rate]["estimate"] == pytest.approx(planned[rate]["estimate"])
        assert live[rate]["n"] == planned[rate]["n"] == 48
        lo, hi = live[rate]["ci"]
        assert lo <= planned[rate]["estimate"] <= hi
        assert live[rate]["width"] > planned[rate]["width"]


@pytest.mark.parametrize(
    ("row", "args", "message"),
    [
        ({"label": 2}, [], "label must be 1"),
        ({"score": 1.5}, [], "score must be a number in [0, 1]"),
        ({}, ["--alpha", "1.5"], "--alpha must be between 0 and 1"),
        ({}, ["--price-input", "-1"], "--price-input must be 0 or more"),
    ],
)
def test_bad_input_gives_a_message_and_exit_2(tmp_path, capsys, row, args, message):
    path = _write(tmp_path, [{"id": "a", "reference": "R.", "candidate": "C."} | row])
    assert cli.main(["card", "--input", str(path), "--output", str(tmp_path / "c.json"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_unknown_reading_is_a_message_and_exit_2(tmp_path, capsys):
    path = _write(tmp_path, [{"id": "a", "reference": "R.", "candidate": "C.", "label": 1}])
    with pytest.raises(SystemExit) as exc:  # argparse refuses it before anything runs
        cli.main(["card", "--input", str(path), "--output", str(tmp_path / "c.json"), "--mode", "often"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--mode" in err and "live" in err and "planned" in err and "Traceback" not in err
    assert not (tmp_path / "c.json").exists()


def test_a_missing_file_is_a_message(tmp_path, capsys):
    assert cli.main(["card", "--input", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "c.json")]) == 2
    assert "no such file" in capsys.readouterr().err
