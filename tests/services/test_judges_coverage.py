"""The rate intervals keep their level at every true rate from 0.01 to 0.99 and 10 to 500 labels (issue 32).

A seeded simulation over the grid of services.judges.coverage (2,000 draws a cell, 500 unlabelled items), with
an informative, a useless and an adversarial judge: every cell covers the true rate in at least 93% of draws
at a stated 95%, for the classical and the PPI interval alike. The vectorised simulation is checked draw by
draw against the product's functions, so the grid measures what the card shows.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from services.judges import classical, coverage, ppi
from services.judges.estimate import MIN_CLASS

FLOOR = 0.93


@pytest.fixture(scope="module")
def grid() -> list[dict]:
    return coverage.coverage(draws=2000, big_n=500, seed=0)


def test_the_grid_is_the_one_the_issue_names(grid):
    assert {r["rate"] for r in grid} >= {0.01, 0.05, 0.5, 0.95, 0.99}
    assert min(r["n"] for r in grid) == 10 and max(r["n"] for r in grid) == 500
    assert {r["judge"] for r in grid} == {"informative", "useless", "adversarial"}


@pytest.mark.parametrize("kind", ["classical", "ppi"])
def test_every_cell_covers_at_least_93_percent(grid, kind):
    low = [(r["judge"], r["rate"], r["n"], r[kind]) for r in grid if r[kind] < FLOOR]
    assert not low, f"{kind} covers less than {FLOOR} in {low}"


def test_ppi_still_earns_its_keep_where_it_is_valid(grid):
    """With the informative judge and both classes well represented, PPI is used and narrower."""
    cells = [r for r in grid if r["judge"] == "informative" and r["n"] >= 100 and 0.3 <= r["rate"] <= 0.7]
    assert cells and all(r["ppi_used"] > 0.99 for r in cells)
    assert all(r["ppi_width"] < 0.85 * r["classical_width"] for r in cells)
    useless = [r for r in grid if r["judge"] != "informative"]
    assert max(r["ppi_used"] for r in useless) < 0.1  # the Pearson gate lets a noise judge through rarely


def _draws(judge: str, rate: float, n: int, seed: int, k: int = 15):
    return coverage.draw(np.random.default_rng(seed), rate=rate, n=n, big_n=300, judge=judge, draws=k)


@pytest.mark.parametrize("judge", coverage.JUDGES)
@pytest.mark.parametrize(("rate", "n"), [(0.05, 10), (0.3, 40), (0.5, 60), (0.9, 200)])
def test_the_vectorised_simulation_is_the_products_functions(judge, rate, n):
    y, yhat, unl = _draws(judge, rate, n, seed=n)
    est, lo, hi, used = coverage.ppi_intervals(y, yhat, unl, alpha=0.05)
    c_est, c_lo, c_hi = coverage.classical_intervals(y, alpha=0.05)
    for i in range(y.shape[0]):
        p, c = ppi(y[i], yhat[i], unl[i], alpha=0.05), classical(y[i], alpha=0.05)
        assert (p.estimate, p.ci_low, p.ci_high) == pytest.approx((est[i], lo[i], hi[i]), abs=1e-9)
        assert (c.estimate, c.ci_low, c.ci_high) == pytest.approx((c_est[i], c_lo[i], c_hi[i]), abs=1e-9)
        assert (p.method == "ppi++") == bool(used[i])


def test_the_comparison_above_reaches_both_branches():
    y, yhat, unl = _draws("informative", 0.5, 60, seed=60)
    assert coverage.ppi_intervals(y, yhat, unl, alpha=0.05)[3].any()
    y, yhat, unl = _draws("informative", 0.05, 10, seed=10)
    assert not coverage.ppi_intervals(y, yhat, unl, alpha=0.05)[3].any()


def test_the_classical_interval_is_clopper_pearson():
    """The exact interval's ends are Beta quantiles (Clopper and Pearson 1934): 3 of 20 at 95%."""
    e = classical(np.r_[np.ones(3), np.zeros(17)], alpha=0.05)
    assert e.ci_low == pytest.approx(sps.beta.ppf(0.025, 3, 18)) and e.ci_high == pytest.approx(
        sps.beta.ppf(0.975, 4, 17)
    )
    assert (e.ci_low, e.ci_high) == pytest.approx((0.0321, 0.3789), abs=1e-4)


def test_the_issue_case_a_rare_class_among_50_labels_keeps_the_level():
    """A rate near 6% with 50 labels: the normal PPI interval covered 85-87%; 400 draws of the product's ppi."""
    rate, hits = 0.06, 0
    for seed in range(400):
        y, yhat, unl = coverage.draw(
            np.random.default_rng(seed), rate=rate, n=50, big_n=1000, judge="informative", draws=1
        )
        e = ppi(y[0], yhat[0], unl[0], alpha=0.05)
        hits += e.ci_low <= rate <= e.ci_high
    assert hits / 400 >= FLOOR


def test_the_ppi_interval_uses_students_t():
    """With 15 labels of each class the critical value is t(29), not z: the interval is wider by their ratio."""
    y, yhat, unl = _draws("informative", 0.5, 30, seed=3, k=200)
    i = next(
        i for i in range(200) if y[i].sum() == MIN_CLASS and coverage.ppi_intervals(y, yhat, unl, alpha=0.05)[3][i]
    )
    from ppi_py import ppi_mean_ci

    e = ppi(y[i], yhat[i], unl[i], alpha=0.05)
    lo, hi = ppi_mean_ci(y[i], yhat[i], unl[i], alpha=0.05, lam=e.lam)
    ratio = sps.t.ppf(0.975, 29) / sps.norm.ppf(0.975)
    assert e.width == pytest.approx(float(np.squeeze(hi - lo)) * ratio, rel=1e-3)
