"""Optional stopping, simulated (tests/support/sequential_sim.py; the large version is
bench/compare_sequential.py): reading the live comparison after every label and stopping at the first decided
difference keeps false claims at most alpha, and each live interval covers its rate at every n at once."""

from __future__ import annotations

import numpy as np

from tests.support.sequential_sim import Setting, difference_limits, labels_paths, live_limits, stop_at_first


def test_reading_after_every_label_claims_a_false_difference_at_most_5_percent():
    """Equal rates near 0, in the middle and near 1, independent and paired systems, labels read one by one
    from 10 to 200: the share of runs that ever claim a difference."""
    rng = np.random.default_rng(11)
    looks = np.arange(10, 201)
    for rate in (0.02, 0.5, 0.97):
        for rho in (0.0, 0.5):
            ka, kb = labels_paths((rate, rate), 200, 200, rng, rho)
            lo, hi = difference_limits(ka[:, looks - 1], kb[:, looks - 1], looks[None, :], 0.05, live=True)
            assert ((lo > 0) | (hi < 0)).any(axis=1).mean() <= 0.05, (rate, rho)


def test_the_planned_reading_read_at_every_label_would_not_hold():
    """The reason for the live reading: the fixed-sample difference read at every label claims far more."""
    rng = np.random.default_rng(12)
    looks = np.arange(10, 201)
    ka, kb = labels_paths((0.5, 0.5), 200, 200, rng)
    lo, hi = difference_limits(ka[:, looks - 1], kb[:, looks - 1], looks[None, :], 0.05, live=False)
    assert ((lo > 0) | (hi < 0)).any(axis=1).mean() > 0.1


def test_each_live_rate_covers_at_every_n_at_once():
    rng = np.random.default_rng(13)
    n = np.arange(2, 201)
    for rate in (0.01, 0.3, 0.99):
        k = np.cumsum(rng.random((300, 200)) < rate, axis=1)[:, 1:]
        lo, hi = live_limits(k, n[None, :], 0.05)
        assert ((lo <= rate) & (rate <= hi)).all(axis=1).mean() >= 0.95


def test_the_live_comparison_stopped_at_its_first_decision_through_compare():
    """compare() itself, an informative judge (prediction-powered rates), equal rates, read every 35 labels
    from 10 to 150: no run claims a difference, and the live intervals cover at every look."""
    out = stop_at_first(Setting((0.6, 0.6), items=400), runs=8, looks=range(10, 151, 35), mode="live", seed=3)
    assert out["claims"] == 0
    assert out["covered"] >= 7 / 8
