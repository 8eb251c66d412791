"""A judge's agreement with the human labels: balanced accuracy, AUROC, Cohen's kappa and Pearson's r, each
with its n and a 95% interval.

Balanced accuracy and AUROC reuse services.stats (a percentile bootstrap over items; AUROC's stratified by
class); kappa and its analytic interval (asymptotic standard error) come from statsmodels' `cohens_kappa`;
Pearson's interval is scipy's analytic one (Fisher's z).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from services import stats

N_BOOT = 1000


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
    if n < 2:
        return Metric(None, n, note="Kappa needs at least 2 labelled items.")
    table = to_table(np.c_[labels, verdicts], bins=[0, 1, 2])[0]
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore")
        res = cohens_kappa(table)
    value, se = float(res.kappa), float(res.std_kappa)
    if not np.isfinite(value):
        return Metric(None, n, note="Kappa is not defined: the judge and the people each give one class only.")
    if not np.isfinite(se) or se == 0:
        return Metric(value, n, note="No interval: the judge or the people give one class only.")
    z = float(sps.norm.ppf(0.5 + ci / 2))
    return Metric(value, n, max(-1.0, value - z * se), min(1.0, value + z * se))


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
    many remain). Pearson's r is with the human score when there is one, else with the label.
    """
    s, v, lab = (np.asarray(a, dtype=float) for a in (scores, verdicts, labels))
    keep = np.isfinite(v) & np.isfinite(lab)
    clf = stats.classification(v[keep], lab[keep], 0.5)
    lo, hi = stats.balanced_accuracy_interval(v[keep], lab[keep], 0.5, seed=seed, n_boot=n_boot, ci=ci)
    ba = Metric(clf.balanced_accuracy, int(keep.sum()), lo, hi, clf.note)
    keep_s = np.isfinite(s) & np.isfinite(lab)
    a = stats.auroc(s[keep_s], lab[keep_s], seed=seed, n_boot=n_boot, ci=ci)
    auc = Metric(a.auc, a.n_pos + a.n_neg, a.ci_low, a.ci_high, a.note)
    kappa = _kappa(v[keep].astype(int), lab[keep].astype(int), ci=ci)
    target = lab if human_scores is None else np.asarray(human_scores, dtype=float)
    keep_p = np.isfinite(s) & np.isfinite(target)
    pearson = _pearson(s[keep_p], target[keep_p], ci=ci)
    return Agreement(ba, auc, kappa, pearson)


def _pearson(x: np.ndarray, y: np.ndarray, *, ci: float) -> Metric:
    n = int(x.size)
    if n < 3:
        return Metric(None, n, note="Pearson's r needs at least 3 labelled items.")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        side = "judge's scores" if np.ptp(x) == 0 else "human judgments"
        return Metric(None, n, note=f"Pearson's r is not defined: the {side} are all the same.")
    res = sps.pearsonr(x, y)
    interval = res.confidence_interval(confidence_level=ci) if n > 3 else None
    if interval is None:
        return Metric(float(res.statistic), n)
    return Metric(float(res.statistic), n, float(interval.low), float(interval.high))
