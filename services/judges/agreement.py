"""A judge's agreement with the human labels: balanced accuracy, AUROC, Cohen's kappa and Pearson's r, each
with its n and an interval at the card's level.

Every measure needs at least MIN_PER_CLASS labelled items of each class (for balanced accuracy and kappa, among
the items the judge decided; for Pearson's r against human scores, a score of 0.5 or more is of the consistent
class); below that it gives no number and says so, since a handful of items can make any of them look perfect.
Their intervals:
- balanced accuracy (TPR + TNR) / 2: the exact (Clopper-Pearson) intervals of TPR and TNR, each at level
  sqrt(1 - alpha), averaged end by end. Given the labels, TPR and TNR are independent binomials, so both cover
  with probability 1 - alpha and then so does their mean: valid at every n, never of zero width.
- AUROC: Newcombe's score-type interval (Newcombe, Statistics in Medicine 2006, method 5): the Hanley-McNeil
  variance with both class sizes replaced by N* = (m + n)/2 - 1, inverted like Wilson's interval, so it stays
  inside [0, 1] and has width even at an AUROC of 1.
- kappa: statsmodels' `cohens_kappa`, kappa +- z * its asymptotic standard error (Fleiss, Cohen and Everitt
  1969), z the normal quantile at the card's level.
- Pearson's r: scipy's analytic interval (Fisher's z); none at r = +-1, where it has no width.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from services import stats
from services.stats import binomial

N_BOOT = 1000
MIN_PER_CLASS = 5  # labelled items of each class before any agreement measure is shown
PERFECT_R = 1e-12  # |r| this close to 1 is a straight line in floating point
# The name of balanced_accuracy wherever it is shown (card, page, reports, CLI): it rests on the judge's own
# verdicts, unlike the balanced accuracy of a thresholded score (services.metaeval.binary).
VERDICTS_NAME = "Balanced accuracy of the verdicts"


@dataclass(frozen=True)
class Metric:
    """One agreement number with its n and interval; value None with a note when it is not defined."""

    value: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    note: str | None = None

    def as_dict(self) -> dict:
        out = {"value": self.value, "ci": [self.ci_low, self.ci_high], "n": self.n}
        return out | ({"note": self.note} if self.note else {})


@dataclass(frozen=True)
class Agreement:
    balanced_accuracy: Metric
    auroc: Metric
    kappa: Metric
    pearson: Metric

    def as_dict(self) -> dict:
        return {k: getattr(self, k).as_dict() for k in ("balanced_accuracy", "auroc", "kappa", "pearson")}


def _kappa(verdicts: np.ndarray, labels: np.ndarray, *, ci: float) -> Metric:
    """Cohen's kappa with its asymptotic standard error (statsmodels' `cohens_kappa`): kappa +- z * ASE."""
    from statsmodels.stats.inter_rater import cohens_kappa, to_table

    n = int(labels.size)
    short = _too_few(labels, "Kappa", "decided ")
    if short:
        return Metric(None, n, note=short)
    table = to_table(np.c_[labels, verdicts], bins=[0, 1, 2])[0]
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore")
        res = cohens_kappa(table)
    value, se = float(res.kappa), float(res.std_kappa)
    if not np.isfinite(se) or se == 0:
        return Metric(value, n, note=_no_kappa_interval(verdicts, labels))
    z = float(sps.norm.ppf(0.5 + ci / 2))
    return Metric(value, n, max(-1.0, value - z * se), min(1.0, value + z * se))


def _no_kappa_interval(verdicts: np.ndarray, labels: np.ndarray) -> str:
    """Why kappa has no interval: its asymptotic standard error is 0 (the people give both classes here)."""
    if np.unique(verdicts).size == 1:
        why = f"the judge gives one verdict only ({'consistent' if verdicts[0] == 1 else 'inconsistent'})"
    elif bool(np.all(verdicts == labels)):
        why = "the judge agrees with every label"
    else:
        why = "the judge disagrees with every label"
    return f"No interval: {why}, where kappa's asymptotic standard error is 0."


def _too_few(labels: np.ndarray, what: str, kind: str = "") -> str | None:
    """Why a measure is not shown (fewer than MIN_PER_CLASS labelled items of a class), or None."""
    pos, neg = int((labels == 1).sum()), int((labels == 0).sum())
    if min(pos, neg) >= MIN_PER_CLASS:
        return None
    return (
        f"{what} needs at least {MIN_PER_CLASS} {kind}labelled items of each class; there are {pos} consistent and "
        f"{neg} inconsistent. Label more items to see it."
    )


def balanced_accuracy(verdicts: np.ndarray, labels: np.ndarray, *, ci: float) -> Metric:
    """(TPR + TNR) / 2 of the verdicts, with the average of TPR's and TNR's exact intervals at level sqrt(ci)."""
    n = int(labels.size)
    short = _too_few(labels, "Balanced accuracy", "decided ")
    if short:
        return Metric(None, n, note=short)
    each = float(np.sqrt(ci))
    ends = []
    for cls in (1, 0):
        hit = int(((verdicts == cls) & (labels == cls)).sum())
        lo, hi = binomial.clopper_pearson(hit, int((labels == cls).sum()), each)
        ends.append((hit / (labels == cls).sum(), lo, hi))
    (r1, lo1, hi1), (r0, lo0, hi0) = ends
    return Metric(float((r1 + r0) / 2), n, float((lo1 + lo0) / 2), float((hi1 + hi0) / 2))


def _newcombe_variance(theta: float, m: int, n: int) -> float:
    """Hanley and McNeil's variance of an AUROC theta with both class sizes set to N* = (m + n)/2 - 1."""
    big = (m + n) / 2.0 - 1.0
    return theta * (1 - theta) / (m * n) * (1 + (big - 1) * ((1 - theta) / (2 - theta) + theta / (1 + theta)))


def auroc_interval(auc: float, m: int, n: int, *, ci: float) -> tuple[float, float]:
    """Newcombe's (2006) method 5: the thetas with (auc - theta)^2 <= z^2 V(theta), V Hanley-McNeil's at N*."""
    from scipy.optimize import brentq

    z2 = float(sps.norm.ppf(0.5 + ci / 2)) ** 2

    def gap(t: float) -> float:
        return (auc - t) ** 2 - z2 * _newcombe_variance(t, m, n)

    eps = 1e-12
    lo = 0.0 if auc <= eps else brentq(gap, 0.0, min(auc, 1.0 - eps))
    hi = 1.0 if auc >= 1.0 - eps else brentq(gap, max(auc, eps), 1.0)
    return float(lo), float(hi)


def _auroc(scores: np.ndarray, labels: np.ndarray, *, ci: float) -> Metric:
    n = int(labels.size)
    short = _too_few(labels, "AUROC")
    if short:
        return Metric(None, n, note=short)
    a = stats.auroc(scores, labels, n_boot=0)
    lo, hi = auroc_interval(float(a.auc), a.n_pos, a.n_neg, ci=ci)
    return Metric(a.auc, n, lo, hi, a.note)


def agreement(
    scores: np.ndarray,
    verdicts: np.ndarray,
    labels: np.ndarray,
    human_scores: np.ndarray | None = None,
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
) -> Agreement:
    """Agreement of a judge (scores in [0, 1], verdicts 0/1) with human labels (0/1) on the labelled items.

    Items where the judge has no score or the person no label are left out of each number (its n says how
    many remain). Pearson's r is with the human score when there is one, else with the label. `seed` and
    `n_boot` are kept for callers; every interval here is analytic.
    """
    s, v, lab = (np.asarray(a, dtype=float) for a in (scores, verdicts, labels))
    keep = np.isfinite(v) & np.isfinite(lab)
    ba = balanced_accuracy(v[keep], lab[keep], ci=ci)
    keep_s = np.isfinite(s) & np.isfinite(lab)
    auc = _auroc(s[keep_s], lab[keep_s], ci=ci)
    kappa = _kappa(v[keep].astype(int), lab[keep].astype(int), ci=ci)
    target = lab if human_scores is None else np.asarray(human_scores, dtype=float)
    keep_p = np.isfinite(s) & np.isfinite(target)
    pearson = _pearson(s[keep_p], target[keep_p], ci=ci)
    return Agreement(ba, auc, kappa, pearson)


def _pearson(x: np.ndarray, y: np.ndarray, *, ci: float) -> Metric:
    """Pearson's r of the judge's scores x and the human judgments y (labels, or scores in [0, 1] read as of
    the consistent class at 0.5 or more when counting the items of each class)."""
    n = int(x.size)
    short = _too_few((y >= 0.5).astype(float), "Pearson's r")
    if short:
        return Metric(None, n, note=short)
    if np.ptp(x) == 0:
        return Metric(None, n, note="Pearson's r is not defined: the judge's scores are all the same.")
    res = sps.pearsonr(x, y)
    r = float(res.statistic)
    if abs(r) > 1.0 - PERFECT_R:  # a straight line, up to rounding
        return Metric(
            math.copysign(1.0, r), n, note="No interval: r is 1 or -1 on these items, where Fisher's z has none."
        )
    interval = res.confidence_interval(confidence_level=ci)
    return Metric(r, n, float(interval.low), float(interval.high))
