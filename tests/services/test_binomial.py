"""The closed-form binomial intervals (services/stats/binomial.py) against scipy's binomtest, which works them out by
another route (the exact interval by root-finding on the binomial CDF), over every k of small n, the edges and
large n, at the levels the pages use."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from services.stats.binomial import clopper_pearson, wilson

LEVELS = (0.5, 0.9, 0.95, 0.95**0.5, 0.99)  # 0.95 ** 0.5: balanced accuracy's level for each class
CASES = [(k, n) for n in range(1, 41) for k in range(n + 1)] + [
    (k, n) for n in (100, 1000, 50_000) for k in (0, 1, 2, n // 3, n // 2, n - 2, n - 1, n)
]


@pytest.mark.parametrize("level", LEVELS)
def test_wilson_is_scipys_to_the_last_bit(level):
    for k, n in CASES:
        iv = sps.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        assert wilson(k, n, level) == (iv.low, iv.high), (k, n)


@pytest.mark.parametrize("level", LEVELS)
def test_clopper_pearson_is_scipys_exact_interval(level):
    for k, n in CASES:
        iv = sps.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
        lo, hi = clopper_pearson(k, n, level)
        assert lo == pytest.approx(iv.low, abs=1e-10) and hi == pytest.approx(iv.high, abs=1e-10), (k, n)
        assert (lo == 0.0) == (k == 0) and (hi == 1.0) == (k == n), (k, n)


def test_the_exact_interval_holds_its_tail_probabilities():
    # by definition: at the lower end P(X >= k) = alpha/2, at the upper end P(X <= k) = alpha/2
    for k, n in [(1, 10), (3, 40), (37, 40), (500, 1000)]:
        lo, hi = clopper_pearson(k, n, 0.95)
        assert sps.binom.sf(k - 1, n, lo) == pytest.approx(0.025, rel=1e-9)
        assert sps.binom.cdf(k, n, hi) == pytest.approx(0.025, rel=1e-9)


@pytest.mark.parametrize("interval", [wilson, clopper_pearson])
@pytest.mark.parametrize(("k", "n", "level"), [(0, 0, 0.95), (3, 2, 0.95), (-1, 5, 0.95), (1, 5, 1.0), (1, 5, 0)])
def test_what_has_no_interval_is_refused(interval, k, n, level):
    with pytest.raises(ValueError):
        interval(k, n, level)
