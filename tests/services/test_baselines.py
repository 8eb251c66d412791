"""ROUGE and embedding-similarity baselines."""

from __future__ import annotations

import math

import pytest

from services import baselines


def test_rouge_on_hand_checkable_strings() -> None:
    ref = "the cat sat on the mat"
    cand = "the cat sat"
    (row,) = baselines.rouge_scores([ref], [cand])
    # Bigrams: the candidate's 2 ("the cat", "cat sat") are both in the reference's 5.
    assert row["rouge2_precision"] == pytest.approx(1.0)
    assert row["rouge2_recall"] == pytest.approx(2 / 5)
    assert row["rouge2_f"] == pytest.approx(2 * 1.0 * 0.4 / 1.4)
    # Longest common subsequence: 3 tokens of the candidate's 3 and the reference's 6.
    assert row["rougeL_precision"] == pytest.approx(1.0)
    assert row["rougeL_recall"] == pytest.approx(0.5)
    assert row["rougeL_f"] == pytest.approx(2 / 3)


def test_rouge_stems_and_scores_each_pair() -> None:
    rows = baselines.rouge_scores(["The dogs were running", "a b c"], ["the dog runs", "x y z"])
    assert rows[0]["rouge2_precision"] == pytest.approx(0.5)  # "the dog" matches after stemming, "dog run" does not
    assert rows[1] == {key: 0.0 for key in rows[1]}
    assert baselines.DEFAULT_ROUGE_KEY in rows[0]


def test_rouge_empty_and_mismatched_inputs() -> None:
    (row,) = baselines.rouge_scores([""], ["something"])
    assert row["rouge2_f"] == 0.0
    with pytest.raises(ValueError, match="same length"):
        baselines.rouge_scores(["a"], [])


def test_embeddings_available_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = baselines.importlib.util.find_spec
    monkeypatch.setattr(baselines.importlib.util, "find_spec", lambda name: None if name == "torch" else real(name))
    ok, message = baselines.embeddings_available()
    assert not ok and "torch" in message and "make install-embeddings" in message
    assert baselines.embedding_similarity(["a"], ["b"]) is None


@pytest.fixture(scope="module")
def needs_embeddings() -> None:
    ok, message = baselines.embeddings_available()
    if not ok:
        pytest.skip(message)


@pytest.mark.parametrize("mode", ["sentence", "whole"])
def test_embedding_similarity_prefers_a_paraphrase(needs_embeddings, mode) -> None:
    ref = "The company reported a sharp rise in profits last year. Its chief executive will retire in May."
    paraphrase = "Profits at the firm rose steeply last year."
    unrelated = "Heavy snow closed several mountain roads overnight."
    sims = baselines.embedding_similarity([ref, ref], [paraphrase, unrelated], mode=mode)
    assert sims is not None and len(sims) == 2
    assert sims[0] > sims[1] + 0.2
    assert all(-1.0 <= s <= 1.0 for s in sims)


def test_embedding_similarity_empty_side_is_nan(needs_embeddings) -> None:
    (sim,) = baselines.embedding_similarity(["Some reference text."], [""])
    assert math.isnan(sim)
