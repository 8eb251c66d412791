"""AUROC with DeLong's interval, and classification metrics at a threshold (with a balanced-accuracy interval)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats as sps

from services.stats.common import (
    EXACT_RESAMPLE_MAX,
    as_float,
    as_labels,
    check_ci,
    percentile_ci,
    resample_chunks,
)
from services.stats.selective import wilson


# -- AUROC -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AurocResult:
    auc: float | None
    n_pos: int
    n_neg: int
    ci_low: float | None = None
    ci_high: float | None = None
    note: str | None = None


def delong(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """The AUC and DeLong's variance of it, by the fast algorithm of Sun & Xu (2014), O(n log n) and O(n) memory.

    DeLong, DeLong & Clarke-Pearson (1988): V10_i = mean_j psi(X_i, Y_j) over negatives, V01_j = mean_i
    psi(X_i, Y_j) over positives (psi = 1 above, 1/2 tie, 0 below); var = S10 / m + S01 / n with S the sample
    variances. Sun & Xu: V10_i = (rank of X_i among all - rank among positives) / n, and likewise for V01, with
    midranks, so no m x n matrix is ever built.
    """
    m, n = pos.size, neg.size
    tz = sps.rankdata(np.concatenate([pos, neg]))
    tx, ty = sps.rankdata(pos), sps.rankdata(neg)
    auc = float((tz[:m].sum() - m * (m + 1) / 2.0) / (m * n))
    v10 = (tz[:m] - tx) / n
    v01 = 1.0 - (tz[m:] - ty) / m
    s10 = float(v10.var(ddof=1)) if m > 1 else 0.0
    s01 = float(v01.var(ddof=1)) if n > 1 else 0.0
    return auc, s10 / m + s01 / n


def auroc(
    scores: Sequence[float] | np.ndarray | pd.Series,
    labels: Sequence[int] | np.ndarray | pd.Series,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> AurocResult:
    """Area under the ROC curve (label 1 = positive, higher score = more positive) with DeLong's interval.

    The AUC is the Mann-Whitney rank formula, so a tie between a positive and a negative counts 0.5. The
    interval is DeLong's (1988) normal interval, AUC +- z * se, cut to [0, 1] as pROC does, computed in
    O(n log n) time and O(n) memory (Sun & Xu, 2014); it replaces a stratified bootstrap whose interval it
    matches within Monte Carlo error (tests/services/test_stats_scale.py). n_boot=0 asks for the point only;
    `seed` is kept for callers and has no effect. Pairs with a missing score or label are left out.
    """
    check_ci(ci, n_boot)
    s, lab = as_float(scores, "scores"), as_labels(labels)
    if s.size != lab.size:
        raise ValueError(f"scores and labels must have the same length ({s.size} != {lab.size})")
    keep = np.isfinite(s) & np.isfinite(lab)
    s, lab = s[keep], lab[keep].astype(int)
    n_pos, n_neg = int((lab == 1).sum()), int((lab == 0).sum())
    if n_pos == 0 or n_neg == 0:
        present = "no items" if n_pos + n_neg == 0 else f"only {'positive (1)' if n_pos else 'negative (0)'} labels"
        return AurocResult(
            None, n_pos, n_neg, note=f"AUROC needs both classes (0 and 1) among the labels; there are {present}."
        )
    auc, var = delong(s[lab == 1], s[lab == 0])
    ci_low = ci_high = None
    if n_boot > 0:
        half = float(sps.norm.ppf(0.5 + ci / 2.0)) * float(np.sqrt(max(var, 0.0)))
        ci_low, ci_high = max(0.0, auc - half), min(1.0, auc + half)
    return AurocResult(auc, n_pos, n_neg, ci_low, ci_high)


# -- classification at a threshold -------------------------------------------------------------
@dataclass(frozen=True)
class ClassificationResult:
    threshold: float
    tp: int
    fp: int
    tn: int
    fn: int
    balanced_accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    n: int
    positive: int = 0
    note: str | None = None

    def precision_ci(self) -> tuple[float | None, float | None]:
        """The Wilson 95% interval of the precision: tp of the tp + fp items predicted positive."""
        return wilson(self.tp, self.tp + self.fp)

    def recall_ci(self) -> tuple[float | None, float | None]:
        """The Wilson 95% interval of the recall: tp of the tp + fn positive items."""
        return wilson(self.tp, self.tp + self.fn)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def classification(
    scores: Sequence[float] | np.ndarray | pd.Series,
    labels: Sequence[int] | np.ndarray | pd.Series,
    threshold: float,
    *,
    positive: Literal[0, 1] = 0,
) -> ClassificationResult:
    """Confusion counts and metrics when a score >= threshold predicts "consistent" (1), else "inconsistent" (0).

    `positive` names the class that precision, recall, F1 and tp/fp/tn/fn are about. The DCR paper reads its
    Figure 3 with *consistent* as that class (positive=1, what services.metaeval passes): "higher recall and
    lower precision implies that more candidates are incorrectly marked as consistent". positive=0 makes
    inconsistency the class to find. Balanced accuracy (mean recall of both classes) does not depend on it.
    A ratio whose denominator is 0 is None; F1 is 2tp / (2tp + fp + fn), None only when that is 0/0.
    Items with a missing score or label are left out; n counts the items used.
    """
    if positive not in (0, 1):
        raise ValueError(f"positive must be 0 or 1, got {positive!r}")
    s, lab = as_float(scores, "scores"), as_labels(labels)
    if s.size != lab.size:
        raise ValueError(f"scores and labels must have the same length ({s.size} != {lab.size})")
    keep = np.isfinite(s) & np.isfinite(lab)
    s, lab = s[keep], lab[keep].astype(int)
    pred = (s >= threshold).astype(int)
    tp = int(((pred == positive) & (lab == positive)).sum())
    fp = int(((pred == positive) & (lab != positive)).sum())
    tn = int(((pred != positive) & (lab != positive)).sum())
    fn = int(((pred != positive) & (lab == positive)).sum())
    recall_pos, recall_neg = _ratio(tp, tp + fn), _ratio(tn, tn + fp)
    balanced = (recall_pos + recall_neg) / 2 if recall_pos is not None and recall_neg is not None else None
    note = None
    if s.size == 0:
        note = "No item has both a score and a label."
    elif balanced is None:
        note = "Only one class among the labels: balanced accuracy needs both."
    return ClassificationResult(
        threshold=float(threshold),
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        balanced_accuracy=balanced,
        precision=_ratio(tp, tp + fp),
        recall=recall_pos,
        f1=_ratio(2 * tp, 2 * tp + fp + fn),
        n=int(s.size),
        positive=positive,
        note=note,
    )


def balanced_accuracy_interval(
    scores: Sequence[float] | np.ndarray | pd.Series,
    labels: Sequence[int] | np.ndarray | pd.Series,
    threshold: float,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of `classification(...).balanced_accuracy`, resampling items (O(n) memory).

    Resamples that lack a class have no balanced accuracy and are skipped; with fewer than half of the
    resamples usable, or without a value, there is no interval (None, None).
    """
    check_ci(ci, n_boot)
    s, lab = as_float(scores, "scores"), as_labels(labels)
    keep = np.isfinite(s) & np.isfinite(lab)
    pred, lab = (s[keep] >= threshold).astype(int), lab[keep].astype(int)
    n = lab.size
    if n_boot == 0 or n == 0 or lab.min() == lab.max():
        return None, None
    boots = _boot_balanced(pred, lab, n_boot, seed)
    if np.isfinite(boots).sum() < n_boot / 2:
        return None, None
    return percentile_ci(boots, ci)


def _boot_balanced(pred: np.ndarray, lab: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Balanced accuracy of n_boot resamples of the items (NaN where a resample lacks a class).

    A resample's balanced accuracy depends only on its four (prediction, label) counts, and drawing n items
    with replacement draws those counts from a multinomial over the four cells: above EXACT_RESAMPLE_MAX items
    the counts are drawn directly (same distribution, O(n_boot) memory); below, items are drawn in blocks.
    """
    rng = np.random.default_rng(seed)
    n = lab.size
    if n > EXACT_RESAMPLE_MAX:
        cells = np.bincount(pred * 2 + lab, minlength=4) / n
        c = rng.multinomial(n, cells, size=n_boot)  # columns: (0,0), (0,1), (1,0), (1,1) as (pred, label)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (c[:, 3] / (c[:, 1] + c[:, 3]) + c[:, 0] / (c[:, 0] + c[:, 2])) / 2
    out = []
    for rows in resample_chunks(n_boot, n):
        idx = rng.integers(0, n, size=(rows, n))
        pb, lb = pred[idx], lab[idx]
        with np.errstate(invalid="ignore", divide="ignore"):
            rec1 = ((pb == 1) & (lb == 1)).sum(axis=1) / (lb == 1).sum(axis=1)
            rec0 = ((pb == 0) & (lb == 0)).sum(axis=1) / (lb == 0).sum(axis=1)
        out.append((rec1 + rec0) / 2)
    return np.concatenate(out)
