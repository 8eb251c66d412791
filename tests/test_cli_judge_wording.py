"""`cli.py evaluate` with default settings against a judge that words its reasons in many real ways and leaves
some sentences unjudged: no stated inconsistency comes out consistent, no unjudged sentence is scored, and no
document with an inconsistent sentence scores 1.0 (DCR paper, Eq. 2-3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import cli
from services.text import split_sentences
from tests.fakes import last_user

REF = (
    "The Eiffel Tower stands in Paris. It was completed in 1889 for the World's Fair. "
    "The tower is made of wrought iron and is 330 metres tall."
)
GOOD = "The Eiffel Tower is in Paris."
BAD = "It was completed in 1999."
SKIPPED = "It is made of wrought iron."
CORPUS = [json.loads(line) for line in (Path(__file__).parent / "corpora" / "verdict_phrasings.jsonl").open()]
NEGATIVE = [r["reason"] for r in CORPUS if r["verdict"] == "inconsistent"]
POSITIVE = [r["reason"] for r in CORPUS if r["verdict"] == "consistent"]
HEDGED = [r["reason"] for r in CORPUS if r["verdict"] == "unknown" and r["reason"].strip()]


def varied_judge(doc_of: dict[str, int]):
    """Answers Table 8 prompts: the 1999 sentence gets the n-th negative wording (its quote paraphrased every
    third document), the Paris one a positive wording, the wrought-iron one no reason or a hedge."""

    def respond(body: dict):
        prompt = last_user(body)
        summary = re.search(r"\nSummary\n\n(.*)\n\nTask\n", prompt, re.S).group(1)
        n = doc_of[summary]
        reasons = []
        for s in split_sentences(summary):
            if s == BAD:
                quote = "The tower was finished in 1999" if n % 3 == 0 else s
                reasons.append({"sentence": quote, "reason": NEGATIVE[n % len(NEGATIVE)]})
            elif s == GOOD:
                reasons.append({"sentence": s, "reason": POSITIVE[n % len(POSITIVE)]})
            elif n % 2 == 0:  # the wrought-iron sentence: a hedge, or (odd documents) no entry at all
                reasons.append({"sentence": s, "reason": HEDGED[n % len(HEDGED)]})
        return {"reason": reasons, "is_consistent": n % 5 == 0}

    return respond


@pytest.fixture
def run_cli(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")

    def run(candidates: list[str], *options: str) -> list[dict]:
        fake.responder = varied_judge({c: i for i, c in enumerate(candidates)})
        pairs, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
        pairs.write_text(
            "".join(
                json.dumps({"id": str(i), "reference": REF, "candidate": c}) + "\n" for i, c in enumerate(candidates)
            ),
            encoding="utf-8",
        )
        cli.main(["evaluate", "--input", str(pairs), "--output", str(out), "--concurrency", "2", *options])
        return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]

    return run


def test_no_stated_inconsistency_comes_out_consistent(run_cli):
    # One document per negative wording: a consistent sentence and an inconsistent one.
    lines = run_cli([f"{GOOD} {BAD}" + " " * i for i in range(len(NEGATIVE))])
    assert len(lines) == len(NEGATIVE)
    for line in lines:
        bad = next(s for s in line["sentences"] if s["text"] == BAD)
        assert bad["verdict"] != "consistent" and bad["mark"] != 1, bad
        assert line["score"] != 1.0 and (line["score"] is None or line["score"] < 1.0), line
    # every negative wording of the corpus is read as such: the documents score 0.5 (one of two sentences)
    assert all(line["score"] == 0.5 for line in lines)


def test_an_unjudged_sentence_leaves_the_document_without_a_score(run_cli):
    lines = run_cli([f"{GOOD} {SKIPPED}" + " " * i for i in range(12)])
    for line in lines:
        skipped = next(s for s in line["sentences"] if s["text"] == SKIPPED)
        assert skipped["verdict"] == "unknown" and skipped["mark"] is None
        assert line["score"] is None and line["n_unknown"] == 1 and line["n_judged"] == 1
        assert line["partial_score"] == 1.0 and line["error"]


def test_mixed_documents_never_score_one_when_a_sentence_is_inconsistent(run_cli):
    lines = run_cli([f"{GOOD} {BAD} {SKIPPED}" + " " * i for i in range(20)])
    for line in lines:
        assert line["score"] is None  # the wrought-iron sentence is never judged plainly
        assert line["partial_score"] is not None and line["partial_score"] < 1.0


def test_alpha_and_beta_reach_the_score_through_the_batch_engine(run_cli):
    # Eq. 3: Z = (sum z + alpha) / (k + beta); one +1 and one -1 with alpha = 1, beta = 1: Z = 1/3, Z^ = 2/3.
    (plain,) = run_cli([f"{GOOD} {BAD}"])
    assert plain["score"] == 0.5 and plain["alpha"] == 0.0
    (line,) = run_cli([f"{GOOD} {BAD} "], "--alpha", "1", "--beta", "1")
    assert line["alpha"] == 1.0 and line["beta"] == 1.0
    assert line["score"] == pytest.approx(2 / 3)
