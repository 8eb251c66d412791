"""The binary view: classification at a threshold, the sentence level, and Figure 3 (DCE with and without AMC)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from db.models import BatchPublic
from services import stats
from services.dcr import METHOD_LABELS
from services.metaeval.common import CONSISTENT_AT, DEFAULT_THRESHOLD, POSITIVE, numeric
from services.metaeval.loading import BatchData, load_batch, with_sentences


def at_threshold(
    df: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD, *, score: str = "score", positive: int = POSITIVE
) -> stats.ClassificationResult:
    """Confusion and metrics when score >= threshold predicts "consistent" (by default the positive class, as
    DCR's Fig. 3 reads it; the paradigms paper's recall is of the inconsistent class, positive=0)."""
    d = df[df[score].notna()]
    return stats.classification(numeric(d[score]), numeric(d["human_label"]), threshold, positive=positive)  # type: ignore[arg-type]


def classification_frame(c: stats.ClassificationResult) -> pd.DataFrame:
    """A classification result as one table row (consistent = positive)."""
    return pd.DataFrame(
        [
            {
                "threshold": c.threshold,
                "n": c.n,
                "tp": c.tp,
                "fp": c.fp,
                "fn": c.fn,
                "tn": c.tn,
                "balanced_accuracy": c.balanced_accuracy,
                "precision": c.precision,
                "recall": c.recall,
                "f1": c.f1,
                "note": c.note or "",
            }
        ]
    )


def confusion_frame(c: stats.ClassificationResult) -> pd.DataFrame:
    """The 2x2 confusion matrix with human labels as rows and predictions as columns."""
    # tp/fp/fn/tn are about c.positive: map them back to (human, predicted) cells.
    pos, neg = ("consistent", "inconsistent") if c.positive == 1 else ("inconsistent", "consistent")
    cells = {(pos, pos): c.tp, (neg, pos): c.fp, (pos, neg): c.fn, (neg, neg): c.tn}
    order = ("inconsistent", "consistent")
    return pd.DataFrame(
        {f"predicted {p}": [cells[(h, p)] for h in order] for p in order},
        index=pd.Index([f"human: {h}" for h in order], name="human label"),
    )


# -- sentence level ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SentenceLevel:
    """The model's round-0 sentence verdicts against the human majority of each sentence."""

    n_sentences: int  # round-0 sentences of done items
    n_labelled: int  # of those, with human votes
    n_compared: int
    n_unknown: int  # model said neither consistent nor inconsistent: left out
    n_ties: int  # the human votes tie: no majority, left out
    n_misaligned_items: int
    classification: stats.ClassificationResult | None
    notes: tuple[str, ...] = ()


def sentence_level(
    engine: Engine | None = None, batch_id: int | None = None, *, data: BatchData | None = None
) -> SentenceLevel:
    """Confusion, balanced accuracy and P/R/F1 (consistent = positive) of the model's sentence verdicts."""
    data = with_sentences(data or load_batch(engine, batch_id))  # type: ignore[arg-type]
    s = data.sentences
    notes = []
    if data.is_paragraph:
        notes.append(
            "This batch used the paragraph-level evaluator: it gives one verdict per summary, not per sentence."
        )
    labelled = s[s["n_votes"] > 0]
    ties = int(labelled["human"].isna().sum())
    unknown = int((labelled["verdict"] == "unknown").sum())
    usable = labelled[labelled["human"].notna() & labelled["verdict"].isin(("consistent", "inconsistent"))]
    if labelled.empty and not data.is_paragraph:
        notes.append(
            "No per-sentence human labels for these items (QAGS worker votes, or a sentence_labels column): "
            "nothing to compare the sentence verdicts with."
        )
    if data.n_misaligned:
        notes.append(
            f"{data.n_misaligned} item(s) were judged on a different number of sentences than their labels cover; "
            "they are left out."
        )
    if unknown:
        notes.append(f"{unknown:,} labelled sentence(s) had no verdict from the model (unknown) and are left out.")
    if ties:
        notes.append(f"{ties:,} labelled sentence(s) have tied human votes (no majority) and are left out.")
    cls = None
    if not usable.empty:
        pred = (usable["verdict"] == "consistent").astype(float).to_numpy()
        cls = stats.classification(pred, usable["human"].to_numpy(), 0.5, positive=POSITIVE)
    return SentenceLevel(len(s), len(labelled), len(usable), unknown, ties, data.n_misaligned, cls, tuple(notes))


# -- Figure 3 --------------------------------------------------------------------------------------
_LEVEL = {
    "dce-amc": "Sentence level (DCE)",
    "paragraph": "Paragraph level",
    "evidence": "Evidence checker",
    "summ-nli": "Summ-NLI",
    "sent-nli": "Sent-NLI",
    "qg-qa": "QG-QA",
}


def _method_name(batch: BatchPublic) -> str:
    return _LEVEL.get(batch.method, METHOD_LABELS.get(batch.method, batch.method))


def _scored_name(batch: BatchPublic) -> str:
    """The row of a batch judged by its score: '... + AMC (rule)' for the model's methods."""
    if batch.method in ("dce-amc", "paragraph"):
        return f"{_method_name(batch)} + AMC ({batch.amc})"
    if batch.method == "evidence":
        return f"{_method_name(batch)} (its own verdicts; undecided left out)"
    return f"{_method_name(batch)} (score < 1)"


def _scored_prediction(batch: BatchPublic, items: pd.DataFrame) -> pd.Series:
    """1 consistent, 0 not, NaN undecided: the score at 1, or the evidence checker's own verdict (its score is a
    probability, and it abstains where its evidence cannot decide)."""
    if batch.method == "evidence":
        return items["model_is_consistent"].astype("Float64").astype(float)
    return (items["score"] >= CONSISTENT_AT).astype(float)


@dataclass(frozen=True)
class Figure3:
    """Precision, recall and F1 (consistent = positive) of each evaluator variant at summary level."""

    frame: pd.DataFrame  # evaluator, batch, n, tp, fp, fn, tn, precision, recall, f1, balanced_accuracy, note
    notes: tuple[str, ...] = ()


def _binary_row(name: str, batch_id: int, pred_consistent: pd.Series, labels: pd.Series) -> dict[str, Any]:
    keep = pred_consistent.notna() & labels.notna()
    c = stats.classification(
        pred_consistent[keep].astype(float).to_numpy(), labels[keep].astype(float).to_numpy(), 0.5, positive=POSITIVE
    )
    return {
        "evaluator": name,
        "batch": batch_id,
        "n": c.n,
        "tp": c.tp,
        "fp": c.fp,
        "fn": c.fn,
        "tn": c.tn,
        "precision": c.precision,
        "recall": c.recall,
        "f1": c.f1,
        "balanced_accuracy": c.balanced_accuracy,
        "note": c.note or "",
    }


def figure3(
    engine: Engine | None = None,
    dce_batch_id: int | None = None,
    other_batch_id: int | None = None,
    *,
    data: BatchData | None = None,
    other: BatchData | None = None,
) -> Figure3:
    """Figure 3: DCE + AMC (score < 1) vs DCE without AMC (is_consistent false) vs another batch (score < 1).

    Binary at summary level against the human label; "consistent" is the positive class. With a second
    batch over the same dataset, every row is computed on the items both batches finished.
    """
    data = data or load_batch(engine, dce_batch_id)  # type: ignore[arg-type]
    if other is None and other_batch_id is not None:
        other = load_batch(engine, other_batch_id)  # type: ignore[arg-type]
    notes: list[str] = []
    d = data.done.set_index("item_id")
    if other is not None and other.batch.dataset_id != data.batch.dataset_id:
        notes.append(
            f"Batch #{other.batch.id} ran over another dataset: Figure 3 compares evaluators on the same items."
        )
        other = None
    o = None
    if other is not None:
        o = other.done.set_index("item_id")
        common = d.index.intersection(o.index)
        if len(common) < len(d) or len(common) < len(o):
            notes.append(f"Compared on the {len(common):,} items both batches finished.")
        d, o = d.loc[common], o.loc[common]
    if d.empty:
        notes.append("No finished item with a score yet.")
    if d["human_label"].isna().all():
        notes.append("This dataset has no binary human labels: Figure 3 needs them.")
    rows = [_binary_row(_scored_name(data.batch), data.batch.id, _scored_prediction(data.batch, d), d["human_label"])]
    n_flag = int(d["model_is_consistent"].isna().sum())
    # The model's own is_consistent: DCE without AMC. Only the DCE methods have one (the evidence checker's and
    # the NLI methods' flag is their own verdict, not a model's answer without AMC).
    if n_flag < len(d) and data.batch.method in ("dce-amc", "paragraph"):
        rows.append(
            _binary_row(
                f"{_method_name(data.batch)} without AMC (model's is_consistent)",
                data.batch.id,
                d["model_is_consistent"].astype("Float64").astype(float),
                d["human_label"],
            )
        )
        if n_flag:
            notes.append(
                f"{n_flag:,} item(s) have no is_consistent from the model and are left out of the row without AMC."
            )
    if other is not None and o is not None:
        rows.append(
            _binary_row(_scored_name(other.batch), other.batch.id, _scored_prediction(other.batch, o), o["human_label"])
        )
    return Figure3(pd.DataFrame(rows), tuple(notes))
