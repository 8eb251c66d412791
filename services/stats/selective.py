"""Calibration and selective prediction: reliability bins with the expected calibration error, and risk-coverage.

A score in [0, 1] is read as the probability that the item is consistent (label 1). The reliability diagram
bins the scores into equal-width bins and compares each bin's mean score with the share of its items that
are consistent (Wilson 95% interval); the expected calibration error (ECE) is the mean gap between the two,
weighted by the bins' sizes (Naeini et al., 2015; Guo et al., 2017, Eq. 3). The risk-coverage curve
(Geifman & El-Yaniv, 2017) decides the items whose scores are farthest from the decision point first
(consistent when the score is at least `center`) and gives, at each share decided, the accuracy and
balanced accuracy on the decided items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from services.stats import binomial
from services.stats.common import as_float, as_labels

N_BINS = 10


@dataclass(frozen=True)
class ReliabilityResult:
    """`bins`: one row per non-empty bin (lo, hi, n, mean_score, observed, ci_low, ci_high); `ece` over n items."""

    bins: pd.DataFrame
    ece: float | None
    n: int
    note: str | None = None


@dataclass(frozen=True)
class RiskCoverageResult:
    """`curve`: one row per share decided (coverage, n_decided, accuracy with its Wilson interval, balanced
    accuracy, min_confidence: the distance from `center` at which items are decided); `aurc`: the area under
    the risk (1 - accuracy) against coverage, lower is better."""

    curve: pd.DataFrame
    aurc: float | None
    n: int
    center: float
    note: str | None = None


BIN_COLUMNS = ["lo", "hi", "n", "mean_score", "observed", "ci_low", "ci_high"]
CURVE_COLUMNS = ["coverage", "n_decided", "accuracy", "ci_low", "ci_high", "balanced_accuracy", "min_confidence"]


def _pairs(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    s = as_float(scores, "scores")
    y = as_labels(labels)
    if len(s) != len(y):
        raise ValueError(f"scores and labels must have the same length ({len(s)} != {len(y)})")
    keep = ~np.isnan(s) & ~np.isnan(y)
    return s[keep], y[keep]


def wilson(k: int, n: int) -> tuple[float | None, float | None]:
    """The Wilson 95% interval of k successes in n trials (None, None without trials)."""
    if n == 0:
        return None, None
    return binomial.wilson(k, n, 0.95)


def reliability(scores, labels, n_bins: int = N_BINS) -> ReliabilityResult:
    """Reliability bins of scores in [0, 1] against binary labels, and the expected calibration error."""
    s, y = _pairs(scores, labels)
    if len(s) == 0:
        return ReliabilityResult(pd.DataFrame(columns=BIN_COLUMNS), None, 0, "No item has both a score and a label.")
    if (s < 0).any() or (s > 1).any():
        return ReliabilityResult(
            pd.DataFrame(columns=BIN_COLUMNS), None, len(s), "The scores are not in [0, 1]: they are no probabilities."
        )
    edges = np.arange(n_bins + 1) / n_bins  # k / n_bins, so a score of 0.7 opens [0.7, 0.8) (linspace: 0.70..01)
    idx = np.clip(np.digitize(s, edges[1:-1], right=False), 0, n_bins - 1)
    rows = []
    gap = 0.0
    for b in range(n_bins):
        m = idx == b
        n = int(m.sum())
        if not n:
            continue
        k = int(y[m].sum())
        low, high = wilson(k, n)
        mean_s, obs = float(s[m].mean()), k / n
        gap += n * abs(mean_s - obs)
        # Edges rounded: 0.3, not linspace's 0.30000000000000004, in the table and its CSV.
        rows.append((round(float(edges[b]), 10), round(float(edges[b + 1]), 10), n, mean_s, obs, low, high))
    return ReliabilityResult(pd.DataFrame(rows, columns=BIN_COLUMNS), gap / len(s), len(s))


def expected_calibration_error(scores, labels, n_bins: int = N_BINS) -> float | None:
    """The ECE of `reliability`: the size-weighted mean gap between each bin's mean score and its share of 1s."""
    return reliability(scores, labels, n_bins).ece


def risk_coverage(scores, labels, center: float = 0.5) -> RiskCoverageResult:
    """Accuracy on the decided items as items are decided from the most confident (farthest from center) down.

    Items with the same distance from center are decided together, so each point is a share one could set.
    """
    s, y = _pairs(scores, labels)
    if len(s) == 0:
        return RiskCoverageResult(
            pd.DataFrame(columns=CURVE_COLUMNS), None, 0, center, "No item has a score and a label."
        )
    conf = np.round(np.abs(s - center), 9)  # equally far from center ties, whatever the float rounding
    pred = (s >= center).astype(float)
    order = np.argsort(-conf, kind="stable")
    conf, pred, y = conf[order], pred[order], y[order]
    right = np.cumsum(pred == y)
    ends = np.flatnonzero(np.r_[conf[1:] != conf[:-1], True])  # the last item of each group of equal confidence
    # Balanced accuracy of every prefix from running counts (the mean recall of the two classes, as _balanced
    # gives it): a calibrated probability has a group per item, and recounting each prefix was O(n^2).
    pos, neg = np.cumsum(y == 1), np.cumsum(y == 0)
    tp, tn = np.cumsum((y == 1) & (pred == 1)), np.cumsum((y == 0) & (pred == 0))
    rows = []
    for e in ends:
        n = int(e + 1)
        low, high = wilson(int(right[e]), n)
        both = pos[e] > 0 and neg[e] > 0
        ba = float(np.mean([tn[e] / neg[e], tp[e] / pos[e]])) if both else None
        rows.append((n / len(s), n, right[e] / n, low, high, ba, float(conf[e])))
    curve = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    risk = 1.0 - curve["accuracy"].to_numpy()
    cov = curve["coverage"].to_numpy()
    # Each point holds from the previous coverage to its own (a step function): the area is exact for the points.
    aurc = float(np.sum(risk * np.diff(np.r_[0.0, cov])))
    return RiskCoverageResult(curve, aurc, len(s), center)


def at_coverage(result: RiskCoverageResult, coverage: float) -> pd.Series | None:
    """The curve's point with the largest coverage not above `coverage` (None when there is none)."""
    c = result.curve
    ok = c[c["coverage"] <= coverage + 1e-12]
    return None if ok.empty else ok.iloc[-1]
