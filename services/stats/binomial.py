"""Intervals of a binomial proportion, k successes in n trials, in closed form.

The same intervals as `scipy.stats.binomtest(k, n).proportion_ci(...)` (two-sided), without its cost: binomtest
first works out the two-sided p-value of the test of p = 0.5, which nothing here reads, and finds the exact
interval's ends by root-finding on the binomial CDF (some 40 evaluations each).

- Wilson score interval (Wilson 1927), as Newcombe (1998, method 3) writes it, without continuity correction:
  scipy's own arithmetic, so the same floating-point numbers.
- Clopper-Pearson exact interval (Clopper and Pearson 1934), through the beta quantile: the lower end is the
  alpha/2 quantile of Beta(k, n - k + 1), the upper the 1 - alpha/2 quantile of Beta(k + 1, n - k) (Brown, Cai and
  DasGupta 2001, eq. 4), 0 at k = 0 and 1 at k = n. The roots scipy finds numerically; they agree to about 1e-12.
"""

from __future__ import annotations

from math import sqrt

from scipy.special import betaincinv, ndtri


def _check(k: int, n: int, level: float) -> None:
    if n < 1:
        raise ValueError(f"n must be at least 1 (got {n})")
    if not 0 <= k <= n:
        raise ValueError(f"k must be between 0 and n = {n} (got {k})")
    if not 0 < level < 1:
        raise ValueError(f"the level must be strictly between 0 and 1 (got {level})")


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval of k in n at this level."""
    k, n = int(k), int(n)
    _check(k, n, level)
    p = k / n
    z = ndtri(0.5 + 0.5 * level)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * sqrt(4 * n * p * (1 - p) + z**2)
    lo = 0.0 if k == 0 else center - delta
    hi = 1.0 if k == n else center + delta
    return float(lo), float(hi)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided Clopper-Pearson (exact) interval of k in n at this level."""
    k, n = int(k), int(n)
    _check(k, n, level)
    alpha = (1 - level) / 2
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, alpha))
    hi = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1 - alpha))
    return lo, hi
