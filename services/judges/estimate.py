"""The dataset's consistency rate three ways: the judge's raw rate, the classical estimate from the labelled
items alone, and the prediction-powered estimate (PPI, Angelopoulos et al., Science 2023) from both.

Classical, binary labels: the Clopper-Pearson ("exact") binomial interval (scipy). Its coverage is at least
1 - alpha at every true rate and every n by construction, where the normal (Wald) and even the Wilson interval
fall short near a rate of 0 or 1 (Brown, Cai and DasGupta, Statistical Science 2001). Human scores in [0, 1]
(no labels): the normal interval of the mean (ppi_py.classical_mean_ci), valid as n grows.

PPI: theta_PP = mean(lambda * Yhat over the unlabelled items) + mean(Y - lambda * Yhat over the labelled
ones), where the second term (the rectifier) removes the judge's bias as measured on the labelled items. Its
interval is a normal one with variance lambda^2 Var(Yhat_unl)/N + Var(Y - lambda Yhat)/n. lambda = 1 is
the original PPI, lambda = 0 the classical estimate; PPI++ (Angelopoulos, Duchi and Zrnic 2023) picks the
lambda that minimises the variance from the data. The estimate, lambda and standard error come from
ppi-python (`ppi_py`); here the critical value is Student's t with n - 1 degrees of freedom instead of the
normal quantile (the usual small-sample correction: the rectifier's variance is estimated from n items).

PPI is used only where its normal interval holds (measured by simulation: bench/judges_coverage.py and
docs/judges.md). Otherwise lambda is 0 and the PPI interval is the classical one, with a note saying why:
- binary labels with fewer than MIN_CLASS of either class among them: the rectifier is then dominated by a
  few items of the rare class and its normal interval undercovers (85-87% at a stated 95% for a rate near 6%
  with 50 labels);
- the judge's predictions show no significant positive linear relation to the labels on the labelled items
  (Pearson test at the interval's level), or are constant: PPI++'s in-sample lambda would otherwise shave
  about 1/n off the variance of a pure-noise judge.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

from services.errors import InputError
from services.stats import binomial, sequential

MIN_LABELLED = 2
MIN_CLASS = 15  # PPI's normal interval needs at least this many labelled items of each class (binary labels)
# What a PPI estimate rests on, named wherever it is shown (page, report, share link, CLI JSON): the judge's scores
# with the labels, or the labels alone with the reason PPI was not used.
BASIS_PPI = "prediction-powered: labels and the judge's scores"
LABELS_ONLY = "labels only"
FEW_OF_A_CLASS = f"{LABELS_ONLY}: fewer than {MIN_CLASS} of each class"
ALL_LABELLED = f"{LABELS_ONLY}: every item is labelled"
NOT_INFORMATIVE = f"{LABELS_ONLY}: the judge's scores do not track the labels"
EQUAL_SCORES = f"{LABELS_ONLY}: the human scores are all equal"
LAMBDA_ZERO = f"{LABELS_ONLY}: lambda 0 asked for"
# Two readings of a rate (and of a comparison, services.judges.compare): live, a confidence sequence valid at every
# number of labels at once (services/stats/sequential.py), and planned, the fixed-sample interval valid when read
# once, at a number of labels fixed before labelling.
MODES = ("live", "planned")
READINGS = {
    "live": {
        "name": "live",
        "meaning": "valid at every number of labels at once: read it as often as labels arrive, stop when decided",
        "method": "confidence sequences: beta-binomial mixture (labels), asymptotic (prediction-powered)",
        "citation": f"{sequential.BETA_BINOMIAL}; {sequential.ASYMPTOTIC}",
    },
    "planned": {
        "name": "planned",
        "meaning": "valid once, at the number of labels a system planned before labelling (the label budget)",
        "method": "fixed-sample intervals: Clopper-Pearson (labels), PPI++ with Student's t (prediction-powered)",
        "citation": "Clopper and Pearson 1934; Angelopoulos, Duchi and Zrnic 2023 (PPI++)",
    },
}

LIVE_NAME = "live (valid at every look)"  # how the page and the report name the live reading


def planned_name(budget: int | None) -> str:
    """How the page and the report name the fixed-sample reading: planned at a budget, where one is set."""
    if budget:
        return f"planned (read once at {budget} labels)"
    return "fixed-sample (valid only if read once at a number of labels fixed in advance)"


def check_mode(mode: str) -> str:
    """The reading asked for, or InputError naming the two there are."""
    if mode not in MODES:
        raise InputError(f"The reading must be live or planned, got {mode!r}.")
    return mode


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
    method: str = ""  # how the interval was made: "exact" (Clopper-Pearson), "normal", "ppi++" (t critical value)
    basis: str = ""  # for a PPI estimate, what the number rests on (BASIS_PPI, or "labels only: <why>")

    @property
    def labels_only(self) -> bool:
        """A PPI estimate that fell back to the labelled items alone (lambda 0): the labels' own interval."""
        return self.basis.startswith(LABELS_ONLY)

    @property
    def width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_high - self.ci_low

    def as_dict(self) -> dict:
        """{estimate, ci: [lo, hi], n, ...} for the CLI's JSON."""
        out = {"estimate": self.estimate, "ci": [self.ci_low, self.ci_high], "n": self.n, "width": self.width}
        if self.method:
            out["method"] = self.method
        if self.lam is not None:
            out |= {"lambda": self.lam, "n_unlabelled": self.n_unlabelled}
        if self.basis:
            out["basis"] = self.basis
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class RateEstimates:
    """The three rates of one judge over one dataset."""

    judge_rate: float | None  # the judge's rate over every item it gave a verdict on
    n_judged: int
    classical: Estimate
    ppi: Estimate
    alpha: float
    n_abstained: int = 0  # items it finished without a verdict (a sentence left unknown)
    n_failed: int = 0  # items it could not score
    # The live reading of the same two rates (confidence sequences, valid at every number of labels at once);
    # `classical` and `ppi` above are the planned reading (fixed-sample, valid when read once).
    live_classical: Estimate | None = None
    live_ppi: Estimate | None = None
    budget: int | None = None  # labels planned before labelling, where one was set

    def read(self, mode: str = "live") -> tuple[Estimate, Estimate]:
        """(classical, ppi) in the reading asked for: "live" (the default) or "planned"."""
        if check_mode(mode) == "live" and self.live_classical is not None and self.live_ppi is not None:
            return self.live_classical, self.live_ppi
        return self.classical, self.ppi

    def reading(self, mode: str = "live") -> dict:
        """{name, meaning, method, citation, budget}: which reading `read(mode)` is (as `cli.py compare` writes)."""
        return READINGS[check_mode(mode)] | {"budget": self.budget if mode == "planned" else None}


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def _finite(*xs: float) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def is_binary(y: np.ndarray) -> bool:
    """Whether every value is 0 or 1."""
    return bool(np.isin(y, (0.0, 1.0)).all())


def clopper_pearson(k: int, n: int, *, alpha: float) -> tuple[float, float]:
    """The exact binomial interval of k successes in n at level 1 - alpha (services/stats/binomial.py)."""
    return binomial.clopper_pearson(k, n, 1 - alpha)


def classical(y: np.ndarray, *, alpha: float = 0.05) -> Estimate:
    """The labelled items' mean with its interval: exact (Clopper-Pearson) for 0/1 labels, else normal (CLT)."""
    from ppi_py import classical_mean_ci

    y = np.asarray(y, dtype=float)
    n = int(y.size)
    if n < MIN_LABELLED:
        return Estimate(
            None, None, None, n, note=f"An interval needs at least {MIN_LABELLED} labelled items; there are {n}."
        )
    if is_binary(y):
        lo, hi = clopper_pearson(int(y.sum()), n, alpha=alpha)
        return Estimate(float(y.mean()), lo, hi, n, method="exact")
    if np.ptp(y) == 0:
        note = f"All {n} human scores are equal: there is no spread to build an interval from."
        return Estimate(float(y.mean()), None, None, n, note=note)
    lo, hi = classical_mean_ci(y, alpha=alpha)
    lo, hi = float(np.squeeze(lo)), float(np.squeeze(hi))
    note = "Human scores, not labels: a normal interval, which holds as the number of labelled items grows."
    return Estimate(float(y.mean()), _clip(lo), _clip(hi), n, note=note, method="normal")


def informative(y: np.ndarray, yhat: np.ndarray, *, alpha: float) -> bool:
    """Whether the predictions relate to the labels on the labelled items (two-sided Pearson test at alpha)."""
    if y.size < 3 or np.ptp(yhat) == 0 or np.ptp(y) == 0:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.pearsonr(yhat, y)
    return bool(np.isfinite(res.pvalue) and res.pvalue < alpha and res.statistic > 0)


def _fallback(y: np.ndarray, big_n: int, alpha: float, note: str, basis: str) -> Estimate:
    """PPI with lambda 0: the classical estimate and interval, with the reason and what it rests on."""
    c = classical(y, alpha=alpha)
    note = " ".join(filter(None, (note, c.note)))
    return Estimate(c.estimate, c.ci_low, c.ci_high, c.n, big_n, 0.0, note, c.method, basis)


def ppi(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, *, alpha: float = 0.05, lam: float | None = None
) -> Estimate:
    """The prediction-powered estimate of the mean of y and its interval (ppi_py's mean estimators).

    lam None: PPI++ power tuning (ppi_py chooses lambda); lam 1: the original PPI. Either way lambda is 0 (the
    classical estimate) where PPI's interval would not hold (see the module docstring), with a note.
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
        return _fallback(y, 0, alpha, "Every item is labelled: PPI is the classical mean.", ALL_LABELLED)
    if is_binary(y):
        k = int(y.sum())
        rare = min(k, n - k)
        if rare < MIN_CLASS:
            which = "consistent" if k <= n - k else "inconsistent"
            note = (
                f"Only {rare} of the {n} labels say {which} (PPI needs at least {MIN_CLASS} of each to hold its "
                "level): the interval is the labels' exact one."
            )
            return _fallback(y, big_n, alpha, note, FEW_OF_A_CLASS)
    elif np.ptp(y) == 0:
        return _fallback(y, big_n, alpha, "", EQUAL_SCORES)
    if lam == 0:
        return _fallback(y, big_n, alpha, "", LAMBDA_ZERO)
    if lam is None and not informative(y, yhat, alpha=alpha):
        note = "The judge's scores show no significant relation to the labels: PPI falls back to the labels alone."
        return _fallback(y, big_n, alpha, note, NOT_INFORMATIVE)
    point = float(np.squeeze(ppi_mean_pointestimate(y, yhat, unl, lam=lam)))
    if lam is None:  # PPI++: read back the lambda ppi_py picked (point = mean(y) + lambda * gap)
        gap = float(unl.mean() - yhat.mean())
        lam = (point - float(y.mean())) / gap if abs(gap) > 1e-12 else None
        if lam is None:  # the point does not depend on lambda; its interval does: let ppi_py tune it
            lo, hi = ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=None)
            return _finished(point, lo, hi, n, big_n, None, alpha)
    lo, hi = ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=lam)
    return _finished(point, lo, hi, n, big_n, lam, alpha)


def _finished(point: float, lo, hi, n: int, big_n: int, lam: float | None, alpha: float) -> Estimate:
    """ppi_py's normal interval widened to Student's t with n - 1 degrees of freedom, clipped to [0, 1]."""
    lo, hi = float(np.squeeze(lo)), float(np.squeeze(hi))
    lam = None if lam is None or not math.isfinite(lam) else round(float(lam), 4)
    if not _finite(point, lo, hi):
        return Estimate(None, None, None, n, big_n, lam, "The estimate is not defined on these values.")
    half = (hi - lo) / 2.0 * float(sps.t.ppf(1 - alpha / 2, n - 1) / sps.norm.ppf(1 - alpha / 2))
    return Estimate(point, _clip(point - half), _clip(point + half), n, big_n, lam, None, "ppi++", BASIS_PPI)


def lam_of(e: Estimate) -> float:
    """An estimate's lambda as a number: 0 where it has none (the classical estimate) or it is not finite."""
    return 0.0 if e.lam is None or not math.isfinite(e.lam) else float(e.lam)


def live_mean(y: np.ndarray, *, alpha: float) -> tuple[float, float]:
    """(low, high) of a mean of values in [0, 1]'s confidence sequence: exact for 1/0 (the beta-binomial
    mixture, sequential.binary_cs), else the asymptotic sequence (sequential.critical_value)."""
    y = np.asarray(y, float)
    n = int(y.size)
    if set(np.unique(y)) <= {0.0, 1.0}:
        lo, hi = sequential.binary_cs(int(y.sum()), n, alpha=alpha)
        return float(lo), float(hi)
    half = float(sequential.critical_value(n, alpha=alpha)) * float(np.std(y, ddof=1)) / math.sqrt(n)
    return max(0.0, float(y.mean()) - half), min(1.0, float(y.mean()) + half)


def live_classical(y: np.ndarray, *, alpha: float, planned: Estimate | None = None) -> Estimate:
    """The labels' rate with its confidence sequence (valid at every number of labels at once): the
    beta-binomial mixture for 1/0 labels, the asymptotic sequence for human scores. `planned`: classical(y)
    when the caller has it already."""
    c = planned if planned is not None else classical(y, alpha=alpha)
    if c.estimate is None or c.ci_low is None:
        return c
    lo, hi = live_mean(np.asarray(y, float), alpha=alpha)
    method = "beta-binomial mixture" if c.method == "exact" else "asymptotic"
    return Estimate(c.estimate, lo, hi, c.n, c.n_unlabelled, c.lam, c.note, method, c.basis)


def live_ppi(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, *, alpha: float, planned: Estimate | None = None
) -> Estimate:
    """The prediction-powered rate with its confidence sequence: where PPI applies (the same rules as the
    fixed-sample reading), the PPI++ estimate with the asymptotic sequence's critical value times its standard
    error (Waudby-Smith et al. 2024, Theorem 2.2; for PPI, Kilian, Cortinovis and Caron 2025); where it falls back
    to the labels alone, the labels' own sequence. `planned`: ppi(...) when the caller has it already."""
    e = planned if planned is not None else ppi(y, yhat, yhat_unlabelled, alpha=alpha)
    if e.estimate is None:
        return e
    lam = lam_of(e)
    y, yhat, unl = (np.asarray(a, float) for a in (y, yhat, yhat_unlabelled))
    n = int(y.size)
    if lam == 0.0 or e.lam is None and unl.size == 0:
        if e.ci_low is None:
            return e
        lo, hi = live_mean(y, alpha=alpha)
        method = "beta-binomial mixture" if set(np.unique(y)) <= {0.0, 1.0} else "asymptotic"
        return Estimate(e.estimate, lo, hi, e.n, e.n_unlabelled, e.lam, e.note, method, e.basis)
    var = float(np.var(y - lam * yhat, ddof=1)) / n
    if unl.size > 1:
        var += lam**2 * float(np.var(unl, ddof=1)) / unl.size
    half = float(sequential.critical_value(n, alpha=alpha)) * math.sqrt(var)
    lo, hi = max(0.0, e.estimate - half), min(1.0, e.estimate + half)
    return Estimate(e.estimate, lo, hi, e.n, e.n_unlabelled, e.lam, e.note, "asymptotic", e.basis)


def rates(
    y: np.ndarray,
    yhat_labelled: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    verdicts: np.ndarray | None = None,
    alpha: float = 0.05,
) -> RateEstimates:
    """Raw judge rate (mean verdict, else mean prediction, over every judged item), classical and PPI, each in
    both readings (planned: fixed-sample; live: a confidence sequence)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    allhat = np.concatenate([np.asarray(yhat_labelled, float), np.asarray(yhat_unlabelled, float)])
    judged = np.asarray(verdicts, float) if verdicts is not None else allhat
    judged = judged[np.isfinite(judged)]
    y = np.asarray(y, float)
    c, p = classical(y, alpha=alpha), ppi(y, yhat_labelled, yhat_unlabelled, alpha=alpha)
    return RateEstimates(
        judge_rate=float(judged.mean()) if judged.size else None,
        n_judged=int(judged.size),
        classical=c,
        ppi=p,
        alpha=alpha,
        live_classical=live_classical(y, alpha=alpha, planned=c),
        live_ppi=live_ppi(y, yhat_labelled, yhat_unlabelled, alpha=alpha, planned=p),
    )


def with_known_values(e: Estimate, known: np.ndarray, n_total: int) -> Estimate:
    """The dataset's rate when some items' values are known without sampling (labels not drawn at random).

    Those items form a take-all stratum (Cochran, Sampling Techniques, 1977, ch. 5; Sarndal, Swensson and
    Wretman 1992): rate = (sum of the known values + R * rate of the rest) / n_total, R = n_total - len(known),
    where `e` estimates the rest from its random labels. Its interval maps the same way, so it keeps e's level.
    """
    known = np.asarray(known, dtype=float)
    k = int(known.size)
    if k == 0:
        return e
    rest = n_total - k
    if rest <= 0:
        value = float(known.mean())
        note = f"Every one of the {n_total} items is labelled: the rate is the labels' mean, with no sampling error."
        return Estimate(value, value, value, k, 0, None, note, "census", ALL_LABELLED)
    if e.estimate is None:
        return e
    shift, scale = float(known.sum()) / n_total, rest / n_total
    lo = None if e.ci_low is None else shift + scale * e.ci_low
    hi = None if e.ci_high is None else shift + scale * e.ci_high
    return replace(e, estimate=shift + scale * e.estimate, ci_low=lo, ci_high=hi)
