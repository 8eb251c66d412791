"""Confidence sequences (services/stats/sequential.py) against their definitions: the beta-binomial mixture is
a martingale with mean 1 under its null (so Ville's inequality bounds its level), its set is the interval the
function returns, it covers at every n at once; the asymptotic sequence's critical value is the paper's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from services.stats import sequential


@pytest.mark.parametrize(("p", "n"), [(0.5, 10), (0.03, 40), (0.97, 25), (0.3, 150)])
def test_the_mixture_has_mean_one_under_its_null(p, n):
    """E[M_n(p)] = sum_k Binom(n, p)(k) M_n(p; k) = 1: the Bayes factor of a prior against the truth."""
    k = np.arange(n + 1)
    m = np.exp(sequential.log_mixture(k, n, p, sequential.prior_size(0.05)))
    assert float(sps.binom.pmf(k, n, p) @ m) == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(("k", "n"), [(0, 2), (2, 2), (1, 2), (3, 20), (75, 150), (499, 500)])
def test_the_sequence_is_the_set_where_the_mixture_stays_below_one_over_alpha(k, n):
    lo, hi = sequential.binary_cs(k, n, alpha=0.05)
    grid = np.linspace(1e-6, 1 - 1e-6, 40_001)
    inside = grid[sequential.log_mixture(k, n, grid, sequential.prior_size(0.05)) < math.log(20)]
    assert float(lo) == pytest.approx(max(inside.min(), 0.0) if inside.min() > 1e-5 else 0.0, abs=5e-5)
    assert float(hi) == pytest.approx(inside.max() if inside.max() < 1 - 1e-5 else 1.0, abs=5e-5)
    assert lo <= k / n <= hi


def test_the_sequence_covers_at_every_n_at_once():
    """300 runs of 200 labels at rates near 0, in the middle and near 1: every interval from n = 1 to 200
    covers the rate in at least 95% of the runs (the exact bound: Ville's inequality)."""
    rng = np.random.default_rng(7)
    n = np.arange(1, 201)
    for rate in (0.01, 0.5, 0.99):
        k = np.cumsum(rng.random((300, 200)) < rate, axis=1)
        lo, hi = sequential.binary_cs(k, n[None, :], alpha=0.05)
        assert ((lo <= rate) & (rate <= hi)).all(axis=1).mean() >= 0.95


def test_the_live_width_at_the_planned_labels_is_at_most_1_7_times_the_exact_interval():
    for k in (75, 15, 3):
        lo, hi = sequential.binary_cs(k, 150, alpha=0.05)
        iv = sps.binomtest(k, 150).proportion_ci(0.95, method="exact")
        assert (hi - lo) / (iv.high - iv.low) <= 1.7


def test_the_asymptotic_critical_value_is_the_papers_boundary():
    """Waudby-Smith et al. 2024, Theorem 2.2 with rho tuned for t* = 150: about 1.55 z at t*."""
    alpha, t_star, n = 0.05, 150, 80
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / t_star  # sd 1
    half = math.sqrt(2 * (n * rho2 + 1) / (n**2 * rho2) * math.log(math.sqrt(n * rho2 + 1) / alpha))
    assert float(sequential.critical_value(n, alpha=alpha)) / math.sqrt(n) == pytest.approx(half)
    assert float(sequential.critical_value(t_star, alpha=alpha)) / 1.959964 == pytest.approx(1.55, abs=0.005)


def test_labels_to_tell_a_difference_planned_is_the_textbook_sample_size():
    """n = 2 p (1 - p) (z_{1 - alpha/2} + z_power)^2 / d^2 a system."""
    assert sequential.labels_to_tell(0.1, 0.5, alpha=0.05, live=False) == math.ceil(
        2 * 0.25 * (1.959964 + 0.841621) ** 2 / 0.01
    )
    planned = sequential.labels_to_tell(0.1, 0.5, alpha=0.05, live=False)
    assert sequential.labels_to_tell(0.1, 0.5, alpha=0.05, live=True) > planned
    # a judge that keeps half the labels' variance halves the labels needed
    half = sequential.labels_to_tell(0.1, 0.5, alpha=0.05, live=False, variance_kept=0.5)
    assert half == pytest.approx(planned / 2, abs=1)
    assert sequential.labels_to_tell(0.0, 0.5, alpha=0.05, live=False) is None
