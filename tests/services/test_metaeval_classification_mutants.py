"""The binary view of services.metaeval.classification, on batch data built in memory (no database), with every
count worked by hand: Figure 3's rows, the sentence level, the confusion matrix and the threshold table."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from services import stats
from services.metaeval import classification as mc
from services.metaeval.loading import BatchData

# Eight summaries: human label 1 = consistent. Scores 1.0 = every sentence consistent (Eq. 3).
LABELS = [1, 0, 0, 1, 1, 1, 0, 1]
SCORES = [1.0, 0.5, 1.0, 0.75, 1.0, 1.0, 0.0, 1.0]
FLAGS = [True, False, True, True, False, True, False, None]  # the model's own is_consistent (DCE without AMC)


def _batch(method: str = "dce-amc", *, batch_id: int = 7, dataset_id: int = 1, **cols) -> BatchData:
    items = pd.DataFrame(
        {
            "item_id": list(range(1, 9)),
            "status": ["done"] * 8,
            "score": SCORES,
            "human_label": LABELS,
            "model_is_consistent": pd.array(FLAGS, dtype="boolean"),
        }
        | cols
    )
    sentences = pd.DataFrame(
        {
            "item_id": [1, 1, 2, 2, 3, 3, 4, 5],
            "idx": [0, 1, 0, 1, 0, 1, 0, 0],
            "verdict": [
                "consistent",
                "consistent",
                "inconsistent",
                "consistent",
                "unknown",
                "consistent",
                "inconsistent",
                "inconsistent",
            ],
            "human": [1.0, 1.0, 0.0, np.nan, 1.0, 0.0, 1.0, 0.0],
            "n_votes": [3, 3, 3, 2, 3, 3, 0, 1],
        }
    )
    batch = SimpleNamespace(id=batch_id, method=method, dataset_id=dataset_id, amc="rule")
    return BatchData(batch, None, items, sentences, np.empty((0, 0)), 3, 3, 0)  # type: ignore[arg-type]


def test_figure_3_rows_with_amc_without_amc_and_another_batch_counted_by_hand():
    """DCR Figure 3, consistent = positive: AMC's row predicts consistent at score 1; the row without AMC takes
    the model's is_consistent (an item without it is left out, with a note); a second batch its score."""
    para = _batch("paragraph", batch_id=9, score=[1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    fig = mc.figure3(data=_batch(), other=para)
    amc, flag, other = (fig.frame.iloc[i] for i in range(3))
    # AMC: predicted consistent = items 1, 3, 5, 6, 8 -> tp 1, 5, 6, 8 = 4; fp item 3; fn item 4; tn 2, 7
    assert (amc["tp"], amc["fp"], amc["fn"], amc["tn"], amc["n"]) == (4, 1, 1, 2, 8)
    assert amc["precision"] == pytest.approx(0.8) and amc["recall"] == pytest.approx(0.8)
    assert amc["f1"] == pytest.approx(0.8) and amc["balanced_accuracy"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert amc["evaluator"] == "Sentence level (DCE) + AMC (rule)" and amc["batch"] == 7 and amc["note"] == ""
    # Without AMC, items 1-7: consistent flags on 1, 3, 4, 6 -> tp 1, 4, 6 = 3; fp 3; fn 5; tn 2, 7
    assert (flag["tp"], flag["fp"], flag["fn"], flag["tn"], flag["n"]) == (3, 1, 1, 2, 7)
    assert flag["evaluator"] == "Sentence level (DCE) without AMC (model's is_consistent)"
    # The paragraph batch: consistent on 1, 2, 4, 5, 7, 8 -> tp 1, 4, 5, 8 = 4; fp 2, 7; fn 6; tn 3
    assert (other["tp"], other["fp"], other["fn"], other["tn"]) == (4, 2, 1, 1)
    assert other["evaluator"] == "Paragraph level + AMC (rule)" and other["batch"] == 9
    assert fig.notes == ("1 item(s) have no is_consistent from the model and are left out of the row without AMC.",)
    assert list(fig.frame.columns) == [
        "evaluator",
        "batch",
        "n",
        "tp",
        "fp",
        "fn",
        "tn",
        "precision",
        "recall",
        "f1",
        "balanced_accuracy",
        "note",
    ]


def test_figure_3_compares_on_the_items_both_batches_finished():
    other = _batch("summ-nli", batch_id=9, status=["done"] * 6 + ["failed"] * 2)
    fig = mc.figure3(data=_batch(), other=other)
    assert list(fig.frame["n"]) == [6, 6, 6]
    assert fig.notes[0] == "Compared on the 6 items both batches finished."
    assert fig.frame.iloc[2]["evaluator"] == "Summ-NLI (score < 1)"


def test_figure_3_refuses_another_dataset_and_has_no_flag_row_for_other_methods():
    fig = mc.figure3(data=_batch(), other=_batch("paragraph", batch_id=9, dataset_id=2))
    assert len(fig.frame) == 2
    assert fig.notes[0] == "Batch #9 ran over another dataset: Figure 3 compares evaluators on the same items."
    evidence = mc.figure3(data=_batch("evidence"))
    assert list(evidence.frame["evaluator"]) == ["Evidence checker (its own verdicts; undecided left out)"]
    assert mc.figure3(data=_batch("qg-qa")).frame.iloc[0]["evaluator"] == "QG-QA (score < 1)"
    para = mc.figure3(data=_batch("paragraph")).frame
    assert list(para["evaluator"]) == [
        "Paragraph level + AMC (rule)",
        "Paragraph level without AMC (model's is_consistent)",
    ]
    assert mc.figure3(data=_batch("other")).frame.iloc[0]["evaluator"] == "other (score < 1)"
    no_flags = mc.figure3(data=_batch(model_is_consistent=pd.array([None] * 8, dtype="boolean")))
    assert len(no_flags.frame) == 1 and no_flags.notes == ()


def test_figure_3_says_when_there_is_nothing_to_compare():
    empty = mc.figure3(data=_batch(status=["running"] * 8))
    assert "No finished item with a score yet." in empty.notes
    unlabelled = mc.figure3(data=_batch(human_label=[np.nan] * 8))
    assert "This dataset has no binary human labels: Figure 3 needs them." in unlabelled.notes
    assert unlabelled.frame.iloc[0]["n"] == 0


def test_sentence_level_compares_verdicts_with_the_human_majority_and_counts_what_is_left_out():
    """Round-0 sentence verdicts against the human majority (consistent = positive): a tie (no majority) and an
    unknown verdict are left out and counted; a sentence without votes is not labelled."""
    s = mc.sentence_level(data=_batch())
    assert (s.n_sentences, s.n_labelled, s.n_compared, s.n_unknown, s.n_ties) == (8, 7, 5, 1, 1)
    c = s.classification
    # (model, human): (C,1) (C,1) (X,0) (C,0) (X,0), the last with one vote: tp 2, fp 1, fn 0, tn 2
    assert (c.tp, c.fp, c.fn, c.tn, c.positive, c.threshold) == (2, 1, 0, 2, 1, 0.5)
    assert s.notes == (
        "1 labelled sentence(s) had no verdict from the model (unknown) and are left out.",
        "1 labelled sentence(s) have tied human votes (no majority) and are left out.",
    )
    assert s.n_misaligned_items == 0


def test_sentence_level_notes_for_paragraph_batches_and_missing_labels():
    para = _batch("paragraph")
    para.sentences["n_votes"] = 0
    s = mc.sentence_level(data=para)
    assert s.classification is None and s.n_labelled == 0
    assert s.notes == (
        "This batch used the paragraph-level evaluator: it gives one verdict per summary, not per sentence.",
    )
    plain = _batch()
    plain.sentences["n_votes"] = 0
    assert mc.sentence_level(data=plain).notes[0].startswith("No per-sentence human labels for these items")
    mis = _batch()
    mis = BatchData(mis.batch, None, mis.items, mis.sentences, mis.votes, 3, 3, 2)
    assert (
        "2 item(s) were judged on a different number of sentences than their labels cover"
        in mc.sentence_level(data=mis).notes[0]
    )
    with pytest.raises(ValueError, match="load the batch with sentences=True"):
        mc.sentence_level(data=BatchData(mis.batch, None, mis.items, mis.sentences, mis.votes, 0, 0, 0, (), False))


def test_at_threshold_counts_scores_at_or_above_as_consistent_and_skips_missing_scores():
    df = pd.DataFrame({"score": [1.0, 0.9, np.nan, 0.2, 1.0], "human_label": [1, 1, 0, 0, 0], "x": [0.1, 1, 1, 1, 1]})
    c = mc.at_threshold(df)
    assert (c.threshold, c.n, c.positive) == (1.0, 4, 1)
    assert (c.tp, c.fp, c.fn, c.tn) == (1, 1, 1, 1)
    low = mc.at_threshold(df, 0.5)
    assert (low.tp, low.fp, low.fn, low.tn) == (2, 1, 0, 1)
    inconsistent = mc.at_threshold(df, 0.5, positive=0)
    assert (inconsistent.tp, inconsistent.fp, inconsistent.fn, inconsistent.tn) == (1, 0, 1, 2)
    by_x = mc.at_threshold(df, 0.5, score="x")
    assert by_x.n == 5 and (by_x.tp, by_x.fn) == (1, 1)


def test_classification_frame_and_confusion_frame_lay_out_the_counts():
    c = stats.classification([1.0, 1.0, 0.0, 0.0, 1.0], [1, 0, 0, 1, 1], 0.5, positive=1)
    row = mc.classification_frame(c).iloc[0]
    assert (row["tp"], row["fp"], row["fn"], row["tn"], row["n"], row["threshold"]) == (2, 1, 1, 1, 5, 0.5)
    assert row["precision"] == pytest.approx(2 / 3) and row["recall"] == pytest.approx(2 / 3)
    assert row["f1"] == pytest.approx(2 / 3) and row["balanced_accuracy"] == pytest.approx((2 / 3 + 0.5) / 2)
    assert row["note"] == ""
    assert list(mc.classification_frame(c).columns) == [
        "threshold",
        "n",
        "tp",
        "fp",
        "fn",
        "tn",
        "balanced_accuracy",
        "precision",
        "recall",
        "f1",
        "note",
    ]
    m = mc.confusion_frame(c)
    assert list(m.columns) == ["predicted inconsistent", "predicted consistent"]
    assert list(m.index) == ["human: inconsistent", "human: consistent"] and m.index.name == "human label"
    assert m.to_numpy().tolist() == [[1, 1], [1, 2]]  # rows: human 0, human 1; columns: predicted 0, 1
    inc = stats.classification([1.0, 1.0, 0.0, 0.0, 1.0], [1, 0, 0, 1, 1], 0.5, positive=0)
    assert mc.confusion_frame(inc).to_numpy().tolist() == [[1, 1], [1, 2]]  # the same cells either way
    one = stats.classification([1.0], [1], 0.5)
    assert (
        mc.classification_frame(one).iloc[0]["note"] == "Only one class among the labels: balanced accuracy needs both."
    )


def test_the_batches_are_read_from_the_database_when_not_given(monkeypatch):
    """sentence_level and figure3 read their batches by id through load_batch when no data is passed."""
    batches = {("engine", 7): _batch(), ("engine", 9): _batch("paragraph", batch_id=9)}
    monkeypatch.setattr(mc, "load_batch", lambda engine, batch_id: batches[(engine, batch_id)])
    assert mc.sentence_level("engine", 7).n_compared == 5  # type: ignore[arg-type]
    fig = mc.figure3("engine", 7, 9)  # type: ignore[arg-type]
    assert list(fig.frame["batch"]) == [7, 7, 9]
