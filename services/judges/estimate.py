"""The dataset's consistency rate three ways: the judge's raw rate, the classical estimate from the labelled
items alone, and the prediction-powered estimate (PPI, Angelopoulos et al., Science 2023) from both.

PPI: theta_PP = mean(lambda * Yhat over the unlabelled items) + mean(Y - lambda * Yhat over the labelled
ones), where the second term (the rectifier) removes the judge's bias as measured on the labelled items. Its
interval is a normal one with variance lambda^2 Var(Yhat_unl)/N + Var(Y - lambda Yhat)/n. lambda = 1 is
the original PPI, lambda = 0 the classical estimate; PPI++ (Angelopoulos, Duchi and Zrnic 2023) picks the
lambda that minimises the variance from the data. Both estimators come from ppi-python (`ppi_py`); nothing
here re-implements them.

PPI never pretends: when the judge's predictions show no significant linear relation to the labels on the
labelled items (Pearson test at the interval's level), or are constant, lambda is 0 and the PPI interval is
the classical one. PPI++'s in-sample lambda would otherwise shave about 1/n off the variance of a pure-noise
judge.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

MIN_LABELLED = 2


@dataclass(frozen=True)
class Estimate:
    """A rate with its interval at level 1 - alpha, over n labelled (and N unlabelled) items."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    n_unlabelled: int = 0
    lam: float | None = None  # PPI's power-tuning parameter (None for the classical estimate)
    note: str | None = None

    @property
    def width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_high - self.ci_low

    def as_dict(self) -> dict:
        """{estimate, ci: [lo, hi], n, ...} for the CLI's JSON."""
        out = {"estimate": self.estimate, "ci": [self.ci_low, self.ci_high], "n": self.n, "width": self.width}
        if self.lam is not None:
            out |= {"lambda": self.lam, "n_unlabelled": self.n_unlabelled}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class RateEstimates:
    """The three rates of one judge over one dataset."""

    judge_rate: float | None  # the judge's rate over every item it judged
    n_judged: int
    classical: Estimate
    ppi: Estimate
    alpha: float


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def _finite(*xs: float) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def classical(y: np.ndarray, *, alpha: float = 0.05) -> Estimate:
    """The labelled items' mean with its normal (CLT) interval (ppi_py.classical_mean_ci)."""
    from ppi_py import classical_mean_ci

    y = np.asarray(y, dtype=float)
    n = int(y.size)
    if n < MIN_LABELLED:
        return Estimate(
            None, None, None, n, note=f"An interval needs at least {MIN_LABELLED} labelled items; there are {n}."
        )
    if np.ptp(y) == 0:
        return _unanimous(y, alpha)
    lo, hi = classical_mean_ci(y, alpha=alpha)
    lo, hi = float(np.squeeze(lo)), float(np.squeeze(hi))
    return Estimate(float(y.mean()), _clip(lo), _clip(hi), n)


def _unanimous(y: np.ndarray, alpha: float, n_unlabelled: int | None = None) -> Estimate:
    """Every label the same: the normal interval would have zero width. Binary labels get the exact
    (Clopper-Pearson) binomial interval instead (scipy); a constant score keeps the point, with a note."""
    n = int(y.size)
    lam = None if n_unlabelled is None else 0.0
    if set(np.unique(y)) <= {0.0, 1.0}:
        iv = sps.binomtest(int(y.sum()), n).proportion_ci(confidence_level=1 - alpha, method="exact")
        note = f"All {n} labels agree: the interval is the exact binomial one (a normal interval would have no width)."
        return Estimate(float(y.mean()), float(iv.low), float(iv.high), n, n_unlabelled or 0, lam, note)
    note = f"All {n} human scores are equal: there is no spread to build an interval from."
    return Estimate(float(y.mean()), None, None, n, n_unlabelled or 0, lam, note)


def informative(y: np.ndarray, yhat: np.ndarray, *, alpha: float) -> bool:
    """Whether the predictions relate to the labels on the labelled items (two-sided Pearson test at alpha)."""
    if y.size < 3 or np.ptp(yhat) == 0 or np.ptp(y) == 0:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.pearsonr(yhat, y)
    return bool(np.isfinite(res.pvalue) and res.pvalue < alpha and res.statistic > 0)


def ppi(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, *, alpha: float = 0.05, lam: float | None = None
) -> Estimate:
    """The prediction-powered estimate of the mean of y and its interval (ppi_py's mean estimators).

    lam None: PPI++ power tuning (ppi_py chooses lambda), made 0 when the judge is not informative (see the
    module docstring); lam 1: the original PPI.
    """
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    y, yhat, unl = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    n, big_n = int(y.size), int(unl.size)
    if y.size != yhat.size:
        raise ValueError(f"y and yhat must have the same length ({y.size} != {yhat.size})")
    if n < MIN_LABELLED:
        return Estimate(
            None, None, None, n, big_n, note=f"An interval needs at least {MIN_LABELLED} labelled items; there are {n}."
        )
    if big_n == 0:
        c = classical(y, alpha=alpha)
        note = "Every item is labelled: PPI is the classical mean."
        return Estimate(c.estimate, c.ci_low, c.ci_high, n, 0, 0.0, note)
    if np.ptp(y) == 0:  # PPI would lean on the judge alone here: keep to what the labels say
        return _unanimous(y, alpha, big_n)
    note = None
    if lam is None and not informative(y, yhat, alpha=alpha):
        lam = 0.0
        note = "The judge's scores show no significant relation to the labels: PPI falls back to the labels alone."
    if lam is None:  # PPI++: ppi_py picks lambda (the same one in the point estimate and the interval)
        point = float(np.squeeze(ppi_mean_pointestimate(y, yhat, unl, lam=None)))
        lo, hi = ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=None)
        gap = float(unl.mean() - yhat.mean())  # point = mean(y) + lambda * gap: read lambda back for display
        used = (point - float(y.mean())) / gap if abs(gap) > 1e-12 else None
        return _finished(point, lo, hi, n, big_n, used, note)
    point = float(np.squeeze(ppi_mean_pointestimate(y, yhat, unl, lam=lam)))
    lo, hi = ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=lam)
    return _finished(point, lo, hi, n, big_n, lam, note)


def _finished(point: float, lo, hi, n: int, big_n: int, lam: float | None, note: str | None) -> Estimate:
    lo, hi = float(np.squeeze(lo)), float(np.squeeze(hi))
    lam = None if lam is None or not math.isfinite(lam) else round(float(lam), 4)
    if not _finite(point, lo, hi):
        return Estimate(None, None, None, n, big_n, lam, "The estimate is not defined on these values.")
    return Estimate(point, _clip(lo), _clip(hi), n, big_n, lam, note)


def rates(
    y: np.ndarray,
    yhat_labelled: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    verdicts: np.ndarray | None = None,
    alpha: float = 0.05,
) -> RateEstimates:
    """Raw judge rate (mean verdict, else mean prediction, over every judged item), classical and PPI."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    allhat = np.concatenate([np.asarray(yhat_labelled, float), np.asarray(yhat_unlabelled, float)])
    judged = np.asarray(verdicts, float) if verdicts is not None else allhat
    judged = judged[np.isfinite(judged)]
    return RateEstimates(
        judge_rate=float(judged.mean()) if judged.size else None,
        n_judged=int(judged.size),
        classical=classical(np.asarray(y, float), alpha=alpha),
        ppi=ppi(y, yhat_labelled, yhat_unlabelled, alpha=alpha),
        alpha=alpha,
    )
