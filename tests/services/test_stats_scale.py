"""The intervals' large-n forms give the numbers of the resample-by-item bootstrap they replace (within Monte
Carlo error), and hold memory linear in n."""

from __future__ import annotations

import importlib
import tracemalloc

import numpy as np
import pytest
from scipy import stats as sps

from services import stats

# the modules, not the functions of the same name that services.stats exports
agreement = importlib.import_module("services.stats.agreement")
classification = importlib.import_module("services.stats.classification")
correlation = importlib.import_module("services.stats.correlation")


def _stratified_boot_auc(pos, neg, n_boot, seed, ci=0.95):
    """The interval auroc() gave before DeLong: a stratified percentile bootstrap, one resample at a time."""
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        p, q = pos[rng.integers(0, pos.size, pos.size)], neg[rng.integers(0, neg.size, neg.size)]
        r = sps.rankdata(np.concatenate([p, q]))
        boots.append((r[: p.size].sum() - p.size * (p.size + 1) / 2) / (p.size * neg.size))
    tail = (1 - ci) / 2 * 100
    return np.percentile(boots, [tail, 100 - tail])


def _close(got, want, half_width, frac):
    """Both ends within `frac` of the interval's half width: Monte Carlo error of 1000-2000 resamples."""
    assert got[0] == pytest.approx(want[0], abs=frac * half_width)
    assert got[1] == pytest.approx(want[1], abs=frac * half_width)


@pytest.mark.parametrize("shift", [0.3, 1.0])
def test_delong_interval_matches_the_stratified_bootstrap(shift):
    rng = np.random.default_rng(11)
    pos, neg = rng.normal(shift, 1, 300), rng.normal(0, 1, 500)
    pos = np.round(pos, 1)  # ties between classes too
    res = stats.auroc(np.r_[pos, neg], np.r_[np.ones(300), np.zeros(500)])
    want = _stratified_boot_auc(pos, neg, 2000, 3)
    _close((res.ci_low, res.ci_high), want, (want[1] - want[0]) / 2, 0.12)


def test_balanced_accuracy_by_cell_counts_matches_resampling_items(monkeypatch):
    rng = np.random.default_rng(4)
    n = 6000
    labels = rng.integers(0, 2, n)
    scores = np.where(rng.random(n) < 0.8, labels, 1 - labels).astype(float)
    fast = stats.balanced_accuracy_interval(scores, labels, 0.5, n_boot=1000, seed=1)
    monkeypatch.setattr(classification, "EXACT_RESAMPLE_MAX", 10**9)
    exact = stats.balanced_accuracy_interval(scores, labels, 0.5, n_boot=1000, seed=1)
    assert fast != exact  # two different draws ...
    _close(fast, exact, (exact[1] - exact[0]) / 2, 0.15)  # ... of the same distribution


@pytest.mark.parametrize("method", stats.METHODS)
def test_jackknife_interval_matches_the_percentile_bootstrap(method, monkeypatch):
    rng = np.random.default_rng(8)
    n = 3000
    x = rng.exponential(size=n)  # skewed, so a normal-theory formula would not do
    y = x + rng.normal(0, 1.5, n) + 0.5 * rng.standard_t(3, n)
    boot = stats.correlation(x, y, method, n_boot=1000, seed=2)
    monkeypatch.setattr(correlation, "EXACT_RESAMPLE_MAX", 1000)
    jack = stats.correlation(x, y, method, n_boot=1000, seed=2)
    assert jack.r == boot.r and jack.ci_low != boot.ci_low
    _close((jack.ci_low, jack.ci_high), (boot.ci_low, boot.ci_high), (boot.ci_high - boot.ci_low) / 2, 0.2)


def test_alpha_over_distinct_units_matches_resampling_units(monkeypatch):
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, 6000)
    votes = np.where(rng.random((3, 6000)) < 0.85, truth, 1 - truth).astype(float)
    votes[2, rng.random(6000) < 0.3] = np.nan  # two or three raters a unit
    fast = stats.krippendorff_alpha(votes, "nominal", n_boot=600, seed=3)
    monkeypatch.setattr(agreement, "EXACT_RESAMPLE_MAX", 10**9)
    exact = stats.krippendorff_alpha(votes, "nominal", n_boot=600, seed=3)
    assert fast.alpha == exact.alpha and fast.ci_low != exact.ci_low
    _close((fast.ci_low, fast.ci_high), (exact.ci_low, exact.ci_high), (exact.ci_high - exact.ci_low) / 2, 0.2)


@pytest.mark.parametrize("digits", [None, 0])  # many values (each resample ranked), few (counted into tables)
def test_blocks_of_resamples_give_the_numbers_of_one_draw(monkeypatch, digits):
    rng = np.random.default_rng(1)
    x = rng.normal(size=300)
    y = x + rng.normal(size=300)
    if digits is not None:
        x, y = np.round(x, digits), np.round(y, digits)
    assert correlation.tabulated(x, y) == (digits is not None)
    whole = stats.correlation(x, y, "spearman", n_boot=200, seed=4)
    monkeypatch.setattr(correlation, "resample_chunks", lambda n_boot, n: [7] * (n_boot // 7) + [n_boot % 7])
    assert stats.correlation(x, y, "spearman", n_boot=200, seed=4) == whole


def _scipy_statistic(x: np.ndarray, y: np.ndarray, method: str) -> float:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan
    return float({"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[method](x, y)[0])


@pytest.mark.parametrize("method", stats.METHODS)
@pytest.mark.parametrize(("n", "kx", "ky"), [(4, 2, 2), (40, 3, 5), (400, 6, 4), (2000, 21, 4)])
def test_resamples_counted_into_tables_have_scipys_statistics(method, n, kx, ky):
    """Few-valued scores: each resample's statistic, taken from its contingency table, is scipy's on the pairs
    it draws, resample by resample (tiny samples draw constant sides too: NaN, as scipy's undefined value)."""
    rng = np.random.default_rng(n + kx)
    x = rng.integers(0, kx, n) / (kx - 1)
    y = np.clip(np.round((x + rng.normal(0, 0.4, n)) * (ky - 1)), 0, ky - 1) / 3
    assert correlation.tabulated(x, y)
    n_boot = 300
    got = correlation._boot_correlations(x, y, method, n_boot, seed=5)
    idx = np.random.default_rng(5).integers(0, n, size=(n_boot, n))  # the draw: one block at these sizes
    want = np.array([_scipy_statistic(x[i], y[i], method) for i in idx])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.nanmax(np.abs(got - want)) < 1e-12 if np.isfinite(want).any() else True
    if n <= 5:
        assert np.isnan(want).any()  # the constant resamples were exercised


@pytest.mark.parametrize("method", stats.METHODS)
def test_intervals_are_the_same_whether_or_not_resamples_are_tabulated(method, monkeypatch):
    rng = np.random.default_rng(6)
    human = rng.integers(0, 4, 1500) / 3  # a majority of three raters
    judge = np.clip(np.round(human * 5 + rng.normal(0, 1.5, 1500)), 0, 5) / 5  # a share of five sentences
    tables = stats.correlation(judge, human, method, n_boot=400, seed=9)
    monkeypatch.setattr(correlation, "TABLE_CELLS_MIN", 0)
    monkeypatch.setattr(correlation, "TABLE_CELLS_PER_PAIR", 0.0)
    assert not correlation.tabulated(judge, human)
    ranked = stats.correlation(judge, human, method, n_boot=400, seed=9)
    assert tables.r == ranked.r and tables.n == ranked.n and tables.note == ranked.note
    assert tables.ci_low == pytest.approx(ranked.ci_low, abs=1e-12)
    assert tables.ci_high == pytest.approx(ranked.ci_high, abs=1e-12)


@pytest.mark.parametrize("method", stats.METHODS)
def test_a_resample_with_a_constant_side_has_no_statistic_even_when_its_mean_is_inexact(method):
    """Three times 0.1 over three is not 0.1 in floating point: the deviations of a constant side come out tiny
    but not 0, and the statistic is still undefined (NaN), not a ratio of rounding errors."""
    x, y = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.1, 0.1, 0.1, 0.5])
    assert (3 * 0.1) / 3 != 0.1 and correlation.tabulated(x, y)
    idx = np.array([[0, 1, 2], [0, 1, 3], [3, 3, 3]])
    got = correlation._Table.of(x, y).resampled(idx, method)
    assert (
        np.isnan(got[0])
        and np.isnan(got[2])
        and got[1] == pytest.approx(_scipy_statistic(x[idx[1]], y[idx[1]], method))
    )


def test_tables_in_several_blocks_give_every_resample(monkeypatch):
    """More resamples than one block of tables holds: every one of them is computed, in order."""
    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 6, 40) / 5, rng.integers(0, 4, 40) / 3
    one = correlation._boot_correlations(x, y, "kendall", 300, seed=2)
    monkeypatch.setattr(correlation, "CHUNK_CELLS", 1000)  # 24 cells a table: blocks of 41 resamples
    assert np.array_equal(correlation._boot_correlations(x, y, "kendall", 300, seed=2), one, equal_nan=True)
    monkeypatch.setattr(correlation, "TABLE_CELLS_MIN", 0)
    monkeypatch.setattr(correlation, "TABLE_CELLS_PER_PAIR", 0.0)
    ranked = correlation._boot_correlations(x, y, "kendall", 300, seed=2)  # scipy's, resample by resample
    assert np.allclose(ranked, one, atol=1e-12, equal_nan=True)


def test_few_valued_scores_are_resampled_through_their_tables(monkeypatch):
    """The tables are the fast path: a few-valued sample takes it for every method, a many-valued one never."""
    counted = []
    real = correlation._Table.resampled
    monkeypatch.setattr(correlation._Table, "resampled", lambda self, idx, m: counted.append(m) or real(self, idx, m))
    rng = np.random.default_rng(3)
    few = rng.integers(0, 5, 500) / 4
    for method in stats.METHODS:
        stats.correlation(few, np.round(few + rng.normal(0, 0.3, 500)), method, n_boot=50, seed=1)
    assert counted == list(stats.METHODS)
    stats.correlation(rng.normal(size=500), rng.normal(size=500), "kendall", n_boot=50, seed=1)
    assert counted == list(stats.METHODS)


def test_many_valued_scores_are_not_tabulated():
    rng = np.random.default_rng(2)
    x = rng.normal(size=3000)
    assert not correlation.tabulated(x, np.round(x, 1))  # about 70 by 3000 cells
    assert correlation.tabulated(np.round(x), np.round(x, 1))  # about 8 by 70
    # pairs with a missing side are left out, as correlation() leaves them out: their many values do not count
    missing = np.full(3000, np.nan)
    assert correlation.tabulated(np.r_[np.round(x), missing, x], np.r_[np.round(x, 1), x, missing])


def _peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_intervals_at_fifty_thousand_items_hold_memory_linear_in_n():
    """The resample-by-item forms held 1000 x n arrays (400 MB each at n = 50,000); now a few n-long arrays."""
    rng = np.random.default_rng(0)
    n = 50_000
    x = rng.random(n)
    y = x + rng.normal(0, 0.5, n)
    labels = (y > 0.5).astype(int)
    votes = np.where(rng.random((3, n)) < 0.9, labels, 1 - labels).astype(float)
    assert _peak_mb(lambda: stats.auroc(x, labels)) < 20
    assert _peak_mb(lambda: stats.balanced_accuracy_interval(x, labels, 0.5)) < 20
    assert _peak_mb(lambda: stats.correlation(x, y, "spearman")) < 40
    assert _peak_mb(lambda: stats.krippendorff_alpha(votes, "nominal")) < 40


@pytest.mark.parametrize("method", stats.METHODS)
def test_each_leave_group_out_value_is_the_correlation_of_the_rest(method):
    """The fast forms (group sums for Pearson, midranks corrected for Spearman) against scipy on the rest."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 8, 200).astype(float)  # ties on both sides
    y = x + rng.integers(-3, 4, 200)
    group = rng.permutation(200) % 7
    fn = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[method]
    want = [fn(x[group != k], y[group != k]).statistic for k in range(7)]
    assert correlation._leave_group_out(x, y, method, group, 7) == pytest.approx(want, rel=1e-12)
