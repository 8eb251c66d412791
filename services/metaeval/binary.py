"""The binary measures of a batch against the human labels, defined once for every surface: the Meta-evaluation
page, the Judges card, `cli.py report` (its text, JSON and --html), the HTML report and its share link.

Two balanced accuracies differ by design, and so carry different names, each saying what it rests on:

* **Balanced accuracy of the score at t** (`score_measure`): the item's score read as consistent when it is at
  least t. t is the method's own unless one is given (`default_threshold`): 1.0 for DCE, the paragraph-level
  evaluator and the NLI paradigms, whose score is the share of sentences (windows, questions) judged consistent,
  so that 1.0 is "every one consistent", the papers' verdict (DCR Eq. 3; paper 003, Eqs. 2 and 4); 0.5 for the
  offline evidence checker, whose score is its calibrated probability that the summary is consistent and never
  reaches 1 (at 1.0 every summary would read inconsistent).
* **Balanced accuracy of the verdicts** (`verdict_measure`): the judge's own verdicts, on the labelled items it
  decided. For DCE, the paragraph level and the NLI paradigms the verdict is "every unit consistent" (the score
  at 1.0, so both measures agree there); the evidence checker gives its own summary verdict and withholds it
  where the evidence is unclear, so its verdicts rest on the items it decided only. Its interval and its
  "too few of a class" rule are the card's (services.judges.agreement.balanced_accuracy).

Both are (TPR + TNR) / 2 with consistent as the positive class (DCR's Figure 3 reading).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from services import stats
from services.dcr.results import CONSISTENT_AT
from services.judges.agreement import VERDICTS_NAME, Metric, balanced_accuracy
from services.metaeval.common import DEFAULT_THRESHOLD, POSITIVE, numeric

PROBABILITY_THRESHOLD = 0.5  # a calibrated probability of "consistent": consistent at even odds or better
PROBABILITY_METHODS = ("evidence",)

_UNITS = {"sent-nli": "windows", "qg-qa": "questions"}


def default_threshold(method: str) -> float:
    """The threshold at which a method's score reads as consistent: 0.5 for a probability, else 1.0."""
    return PROBABILITY_THRESHOLD if method in PROBABILITY_METHODS else DEFAULT_THRESHOLD


def resolve_threshold(method: str, threshold: float | None) -> float:
    """The threshold given, or the method's own when none is."""
    return default_threshold(method) if threshold is None else float(threshold)


def score_meaning(method: str) -> str:
    """What a method's item score is, in words."""
    if method in PROBABILITY_METHODS:
        return "the checker's calibrated probability that the summary is consistent"
    if method == "summ-nli":
        return "the model's judgement of the whole summary (1 consistent, 0 not; a score mapped to 0-1)"
    return f"the share of {_UNITS.get(method, 'sentences')} judged consistent"


def score_name(threshold: float) -> str:
    """The name of the thresholded measure, its threshold in it."""
    return f"Balanced accuracy of the score at {threshold:g}"


def verdict_meaning(method: str) -> str:
    """What a method's verdict is, in words."""
    if method in PROBABILITY_METHODS:
        return "the checker's own summary verdict, withheld where the evidence is unclear"
    if method == "summ-nli":
        return "consistent when the model judges the whole summary consistent (its score at 1)"
    return f"consistent when every one of its {_UNITS.get(method, 'sentences')} is judged consistent"


def verdicts_of(method: str, items: pd.DataFrame) -> np.ndarray:
    """Each item's verdict (1, 0, NaN when it gave none) from the batch's items (status, score and, for the
    evidence checker, model_is_consistent): its own verdict for the checker, the score at 1.0 for the others."""
    done = (items["status"] == "done").to_numpy() if "status" in items else np.ones(len(items), bool)
    if method in PROBABILITY_METHODS and "model_is_consistent" in items:
        flags = items["model_is_consistent"].to_numpy(dtype=object)
        v = np.array([np.nan if f is None or f is pd.NA or f != f else float(bool(f)) for f in flags], dtype=float)
    else:
        s = numeric(items["score"])
        v = np.where(np.isfinite(s), (s >= CONSISTENT_AT).astype(float), np.nan)
    return np.where(done, v, np.nan)


@dataclass(frozen=True)
class ScoreMeasure:
    """The thresholded score's classification, named, with what it rests on."""

    name: str
    threshold: float
    rests_on: str
    classification: stats.ClassificationResult

    @property
    def value(self) -> float | None:
        return self.classification.balanced_accuracy

    def as_dict(self) -> dict:
        c = self.classification
        return {
            "name": self.name,
            "threshold": self.threshold,
            "rests_on": self.rests_on,
            "balanced_accuracy": c.balanced_accuracy,
            "f1": c.f1,
            "precision": c.precision,
            "recall": c.recall,
            "n": c.n,
            "positive_class": "consistent",
            **({"note": c.note} if c.note else {}),
        }


@dataclass(frozen=True)
class VerdictMeasure:
    """The balanced accuracy of the judge's own verdicts, named, with what it rests on."""

    name: str
    rests_on: str
    metric: Metric
    n_undecided: int  # labelled items with a score but no verdict (left out)

    @property
    def value(self) -> float | None:
        return self.metric.value

    def as_dict(self) -> dict:
        return {"name": self.name, "rests_on": self.rests_on, **self.metric.as_dict(), "undecided": self.n_undecided}


def score_measure(method: str, items: pd.DataFrame, threshold: float | None = None) -> ScoreMeasure:
    """Balanced accuracy (and F1, precision, recall) of the items' scores at the threshold (the method's own
    when None) against their human labels; items without a score or a label are left out."""
    t = resolve_threshold(method, threshold)
    d = items[items["status"] == "done"] if "status" in items else items
    d = d[d["score"].notna()]
    c = stats.classification(numeric(d["score"]), numeric(d["human_label"]), t, positive=POSITIVE)
    rests = f"consistent when the score, {score_meaning(method)}, is at least {t:g}; {c.n:,} labelled items"
    return ScoreMeasure(score_name(t), t, rests, c)


def verdict_measure(method: str, items: pd.DataFrame, labels: np.ndarray | None = None) -> VerdictMeasure:
    """Balanced accuracy of the judge's verdicts (verdicts_of) against the labels (the items' human_label when
    None), on the labelled items it decided, with the card's interval (95%)."""
    v = verdicts_of(method, items)
    lab = numeric(items["human_label"]) if labels is None else np.asarray(labels, dtype=float)
    scored = np.isfinite(numeric(items["score"])) if "score" in items else np.ones(len(items), bool)
    keep = np.isfinite(v) & np.isfinite(lab)
    undecided = int((~np.isfinite(v) & np.isfinite(lab) & scored).sum())
    metric = balanced_accuracy(v[keep], lab[keep], ci=0.95)
    left = f", {undecided:,} undecided left out" if undecided else ""
    rests = f"{verdict_meaning(method)}; {metric.n:,} labelled items decided{left}"
    return VerdictMeasure(VERDICTS_NAME, rests, metric, undecided)
