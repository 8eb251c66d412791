"""Confidence sequences: intervals valid at every number of labels at once, however often they are read.

A fixed-sample interval at level 1 - alpha covers the rate with probability 1 - alpha at the one n planned for
it; read after every label and acted on at the first that looks decided, it errs far more often (optional
stopping). A confidence sequence (C_t) holds at every t simultaneously: P(rate in C_t for all t) >= 1 - alpha
(Darling and Robbins 1967; Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic
confidence sequences", Annals of Statistics 2021). Both kinds here are tuned to be narrowest near a planned
number of labels (PLANNED_N), where they cost about 1.5 times the fixed-sample width.

- A rate from 1/0 labels: the beta-binomial mixture (`binary_cs`), exact at every n, also at 2 labels and near
  rates of 0 and 1.
- A prediction-powered rate or any other mean with a normal limit: the asymptotic confidence sequence
  (`critical_value`), whose critical value replaces the normal quantile of a fixed-sample interval.

`confseq` (the authors' package on PyPI) ships as a C++ source distribution that needs Boost to build, and
`expectation`/`savvi` neither have the beta-binomial mixture with a tuned prior nor the asymptotic sequence in a
form that takes a variance: the two boundaries are closed forms, written here, and tested against the papers'
definitions (tests/services/test_stats_sequential.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, ndtri, xlogy

PLANNED_N = 150  # the number of labels a system the boundaries are tuned for (narrowest there)
_EDGE = 1e-12
_STEPS = 42  # bisection steps: 2^-42 of the unit interval, below the printed digits


@dataclass(frozen=True)
class SequenceInterval:
    """A rate's confidence sequence at n labels: [low, high] at level 1 - alpha, valid at every n at once."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    alpha: float
    method: str  # "beta-binomial mixture" or "asymptotic"
    citation: str


BETA_BINOMIAL = (
    "Howard, Ramdas, McAuliffe and Sekhon, Time-uniform, nonparametric, nonasymptotic confidence sequences, "
    "Annals of Statistics 2021 (beta-binomial mixture)"
)
ASYMPTOTIC = (
    "Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas, Time-uniform central limit theory and asymptotic "
    "confidence sequences, Annals of Statistics 2024"
)


def mixture_constant(alpha: float) -> float:
    """-2 log alpha + log(1 - 2 log alpha): rho^2 t* for the normal mixture tightest at t* (Howard et al. 2021,
    eq. 3.7's optimum; Waudby-Smith et al. 2024, section 2.5)."""
    la = -2.0 * math.log(alpha)
    return la + math.log(1.0 + la)


def prior_size(alpha: float, planned_n: int = PLANNED_N) -> float:
    """The beta prior's size a + b for the mixture tightest near planned_n labels: planned_n over the normal
    mixture's constant (the beta's variance p(1-p)/(a+b+1) then matches the normal mixture's rho^2)."""
    return max(1.0, planned_n / mixture_constant(alpha))


def log_mixture(successes, n, p, size: float):
    """log M_n(p): the beta-binomial mixture martingale of the null rate p after n labels with `successes` 1s,
    the Bayes factor of a Beta(size p, size (1 - p)) mixture of rates against p (Robbins 1970; Howard et al.
    2021, section 3.2). Under the null it is a nonnegative martingale with mean 1, so by Ville's inequality it
    exceeds 1/alpha at some n with probability at most alpha."""
    s, n, p = np.asarray(successes, float), np.asarray(n, float), np.asarray(p, float)
    a, b = size * p, size * (1.0 - p)
    return betaln(a + s, b + n - s) - betaln(a, b) - xlogy(s, p) - xlogy(n - s, 1.0 - p)


def binary_cs(successes, n, *, alpha: float, planned_n: int = PLANNED_N) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the beta-binomial mixture confidence sequence {p : M_n(p) < 1/alpha} of a rate from n 1/0
    labels with `successes` 1s (Howard et al. 2021, section 3.2, with the prior sized for planned_n): valid at
    every n at once, exact (no approximation), at any rate and from the first label. Vectorised: successes and
    n broadcast; the ends are found by bisection on either side of the observed rate (M_n(p) grows as p moves
    away from it), so the set is the interval between them."""
    s, n = np.broadcast_arrays(np.asarray(successes, float), np.asarray(n, float))
    if (n < 1).any() or (s < 0).any() or (s > n).any():
        raise ValueError("a confidence sequence needs n >= 1 and 0 <= successes <= n")
    size = prior_size(alpha, planned_n)
    bound = math.log(1.0 / alpha)
    phat = np.clip(s / n, _EDGE, 1.0 - _EDGE)

    def _end(inside: np.ndarray, edge: np.ndarray) -> np.ndarray:
        lo, hi = inside.copy(), edge.copy()  # lo: in the set; hi: out of it (or the edge)
        for _ in range(_STEPS):
            mid = (lo + hi) / 2.0
            ok = log_mixture(s, n, mid, size) < bound
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        return np.where(log_mixture(s, n, edge, size) < bound, edge, lo)

    low = _end(phat, np.full(phat.shape, _EDGE))
    high = _end(phat, np.full(phat.shape, 1.0 - _EDGE))
    low = np.where(low <= _EDGE, 0.0, low)
    high = np.where(high >= 1.0 - _EDGE, 1.0, high)
    return low, high


def binary_rate(successes: int, n: int, *, alpha: float, planned_n: int = PLANNED_N) -> SequenceInterval:
    """A rate's confidence sequence from 1/0 labels (`binary_cs`) at n labels."""
    if n < 1:
        return SequenceInterval(None, None, None, int(n), alpha, "beta-binomial mixture", BETA_BINOMIAL)
    lo, hi = binary_cs(successes, n, alpha=alpha, planned_n=planned_n)
    return SequenceInterval(successes / n, float(lo), float(hi), int(n), alpha, "beta-binomial mixture", BETA_BINOMIAL)


def critical_value(n, *, alpha: float, planned_n: int = PLANNED_N):
    """The asymptotic confidence sequence's multiplier of the standard error at n observations: the half-width
    is critical_value * sd / sqrt(n) where a fixed-sample interval has z_{1 - alpha/2} * sd / sqrt(n).

    Waudby-Smith et al. 2024, Theorem 2.2 (the Robbins normal mixture, two-sided):
        half-width = sqrt( 2 (n sd^2 rho^2 + 1) / (n^2 rho^2) * log( sqrt(n sd^2 rho^2 + 1) / alpha ) ),
    with rho^2 sd^2 = mixture_constant(alpha) / planned_n, the rho that makes it narrowest at planned_n
    (their section 2.5), so that the multiplier is a function of n / planned_n alone; about 3.03 at
    planned_n for alpha 0.05, 1.55 times 1.96. Valid as n grows (the CLT's regime): where its variance rests on
    few labels of a class, the exact sequences above are used instead."""
    t = np.asarray(n, float) * mixture_constant(alpha) / planned_n
    return np.sqrt(2.0 * (1.0 + 1.0 / t) * np.log(np.sqrt(t + 1.0) / alpha))


def z_value(alpha: float) -> float:
    """The fixed-sample two-sided normal quantile z_{1 - alpha/2}."""
    return float(ndtri(1.0 - alpha / 2.0))


def labels_to_tell(
    difference: float,
    rate: float,
    *,
    alpha: float,
    live: bool,
    power: float = 0.8,
    variance_kept: float = 1.0,
    correlation: float = 0.0,
    planned_n: int = PLANNED_N,
    max_n: int = 100_000,
) -> int | None:
    """About how many labels a system tell a difference of `difference` between two systems near `rate` with
    probability `power`: the n where the difference is (critical value + z_power) standard errors, the standard
    error sqrt(2 p (1 - p) variance_kept (1 - correlation) / n) (variance_kept < 1: the share of the labels'
    variance a prediction-powered estimate keeps, 1 - R^2 of the judge's predictions on the labels). Live: the
    critical value of the asymptotic sequence at that n; planned: z_{1 - alpha/2}. None past max_n."""
    d = abs(float(difference))
    p = min(max(float(rate), 1e-6), 1 - 1e-6)
    if d <= 0:
        return None
    var = 2.0 * p * (1.0 - p) * max(variance_kept, 1e-6) * max(1.0 - correlation, 1e-6)
    zp = float(ndtri(power))
    if not live:
        n = math.ceil(var * (z_value(alpha) + zp) ** 2 / d**2)
        return n if n <= max_n else None
    ns = np.arange(2, max_n + 1)
    ok = (critical_value(ns, alpha=alpha, planned_n=planned_n) + zp) * np.sqrt(var / ns) <= d
    return int(ns[ok.argmax()]) if ok.any() else None
