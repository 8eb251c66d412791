"""Statistics survivors of the whole-population run, killed against the functions' documented behaviour:
defaults, messages of bad input, boundaries of the notes, and the ends of the risk-coverage curve."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from services import stats
from services.stats import selective


def test_non_numeric_input_is_named_by_its_argument():
    with pytest.raises(ValueError, match=r"^scores must be numbers \(use NaN for a missing value\)$"):
        selective.reliability(["high"], [1])
    with pytest.raises(ValueError, match=r"^scores must be numbers \(use NaN for a missing value\)$"):
        stats.balanced_accuracy_interval(["high"], [1], 0.5)
    with pytest.raises(ValueError, match=r"^y must be numbers \(use NaN for a missing value\)$"):
        stats.correlation([1, 2, 3], ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"^labels must be 0 or 1 \(or NaN for missing\), got 2$"):
        selective.reliability([0.5], [2])
    with pytest.raises(ValueError, match=r"^labels must be numbers \(use NaN for a missing value\)$"):
        selective.reliability([0.5], ["yes"])
    with pytest.raises(ValueError, match=r"^ci must be between 0 and 1, got 1\.0$"):
        stats.correlation([1, 2, 3], [1, 3, 2], ci=1.0)


def test_defaults_are_1000_resamples_and_seed_0():
    x, y = [0.1, 0.4, 0.35, 0.8, 0.6, 0.2, 0.9], [0.0, 0.5, 0.2, 0.9, 0.4, 0.3, 0.7]
    assert stats.correlation(x, y) == stats.correlation(x, y, "pearson", n_boot=1000, seed=0)
    rng = np.random.default_rng(5)
    scores, labels = rng.uniform(size=60), rng.integers(0, 2, size=60)
    assert stats.auroc(scores, labels) == stats.auroc(scores, labels, n_boot=1000, seed=0)
    assert stats.correlation(x, y) != stats.correlation(x, y, "pearson", n_boot=1001, seed=0)
    few = stats.correlation([1.0, 2.0], [1.0, 2.0])
    assert few.method == "pearson" and few.r is None


def test_pearsons_interval_stays_within_minus_one_and_one_at_perfect_anticorrelation():
    x = [-0.65, -0.13, 0.78, 1.49, 0.2, -1.1]
    res = stats.correlation(x, [-5 * v + 0.3 for v in x], "pearson", n_boot=500, seed=0)
    assert res.r == pytest.approx(-1.0) and res.ci_low >= -1.0


def test_the_ece_uses_the_bins_asked_for():
    assert selective.expected_calibration_error([0.2, 0.8], [0, 1], n_bins=1) == pytest.approx(0.0)
    assert selective.expected_calibration_error([0.2, 0.8], [0, 1]) == pytest.approx(0.2)


def test_refused_scores_still_give_the_bins_columns():
    assert list(selective.reliability([1.5], [1]).bins.columns) == selective.BIN_COLUMNS


def test_distances_equal_to_nine_decimals_tie():
    rc = selective.risk_coverage([0.7000000003, 0.3], [1, 0])
    assert list(rc.curve["n_decided"]) == [2]


def test_the_area_counts_the_first_points_risk_from_coverage_zero():
    """The most confident item is wrong: risk 1 from coverage 0 to 1/2, then risk 1/2 to 1: AURC 0.5 + 0.25."""
    rc = selective.risk_coverage([0.9, 0.6], [0, 1])
    assert list(rc.curve["accuracy"]) == [0.0, 0.5]
    assert rc.aurc == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)


def test_at_coverage_allows_for_float_rounding():
    rc = selective.risk_coverage([0.9, 0.2, 0.3, 0.7, 0.55], [1, 0, 1, 0, 1])
    assert selective.at_coverage(rc, 0.8 - 1e-12)["n_decided"] == 4


def test_balanced_accuracy_interval_leaves_out_missing_pairs_and_needs_no_more_than_one_resample():
    scores, labels = [0.9, 0.1, 0.8, 0.3, 0.7, 0.2], [1, 0, 1, 0, 0, 1]
    base = stats.balanced_accuracy_interval(scores, labels, 0.5, n_boot=200, seed=3)
    with_nan = stats.balanced_accuracy_interval([*scores, np.nan], [*labels, 1], 0.5, n_boot=200, seed=3)
    assert with_nan == base
    low, high = stats.balanced_accuracy_interval(scores, labels, 0.5, n_boot=1, seed=3)
    assert low is not None and low == high


def test_the_note_on_same_ratings_reads_in_full():
    same = stats.krippendorff_alpha([[2.0, 2.0], [2.0, 2.0]], "interval", n_boot=0)
    assert same.note == (
        "Every rating of the pairable units is the same value (2): with no variation there is no disagreement "
        "expected by chance, so alpha is undefined (agreement is total but cannot be told apart from chance)."
    )


def test_the_rough_interval_note_is_for_fewer_than_ten_units_and_only_with_an_interval():
    def data(n_units: int) -> np.ndarray:
        a = np.arange(n_units, dtype=float) % 4
        return np.array([a, (a + (np.arange(n_units) % 3 == 0)) % 4])

    assert stats.krippendorff_alpha(data(9), "interval", n_boot=20).note == (
        "Only 9 pairable units: the interval is rough."
    )
    assert stats.krippendorff_alpha(data(10), "interval", n_boot=20).note is None
    assert stats.krippendorff_alpha(data(9), "interval", n_boot=0).note is None
    assert stats.krippendorff_alpha(data(9), "interval", n_boot=1).note == (
        "Only 9 pairable units: the interval is rough."
    )


def test_alpha_from_long_names_the_earliest_repeated_row_and_at_most_five_unknown_values():
    rows = pd.DataFrame({"unit": [1, 2, 2, 1], "rater": ["ann", "bo", "bo", "ann"], "value": [1.0, 2.0, 2.0, 1.0]})
    with pytest.raises(ValueError, match=r"^rater 'ann' rated unit 1 more than once$"):
        stats.alpha_from_long(rows)
    words = pd.DataFrame({"unit": range(7), "rater": ["r"] * 7, "value": list("abcdefg")})
    with pytest.raises(ValueError, match=r"^value\(s\) not in value_order: b, c, d, e, f$"):
        stats.alpha_from_long(words, "ordinal", value_order=["a"])


def test_interval_alpha_and_its_interval_do_not_depend_on_the_unit_of_the_scores():
    # Krippendorff's interval alpha compares squared differences with the expected ones: rescaling every value
    # rescales both alike, so alpha and each bootstrap resample's alpha stay (scores in [0, 1] as in [0, 10]).
    tenths = np.array([[0.1, 0.2, 0.3, 0.3, 0.5, 0.7, 0.8, 0.9], [0.1, 0.3, 0.3, 0.4, 0.5, 0.6, 0.9, 0.9]])
    small, large = (stats.krippendorff_alpha(tenths * f, "interval", n_boot=200, seed=3) for f in (1, 10))
    assert small.ci_low is not None and small.ci_high is not None
    assert (small.alpha, small.ci_low, small.ci_high) == pytest.approx((large.alpha, large.ci_low, large.ci_high))


def test_balanced_accuracy_has_no_interval_when_fewer_than_half_the_resamples_hold_both_classes():
    # Two items, one of each class: a resample of two holds both with probability 1/2, so the usable count is
    # Binomial(20, 1/2) and falls under half (9 or fewer) for about 41% of seeds (under a third for about 6%).
    none = sum(
        stats.balanced_accuracy_interval([0.2, 0.8], [0, 1], 0.5, n_boot=20, seed=s) == (None, None) for s in range(100)
    )
    assert 20 <= none <= 65, none


def test_a_correlation_that_cannot_be_computed_keeps_its_method():
    assert stats.correlation([1, 2], [1, 2], "spearman").method == "spearman"
    assert stats.correlation([3, 3, 3], [1, 2, 3], "kendall").method == "kendall"
    assert stats.correlation([1, 2, 3], [4, 4, 4], "pearson").method == "pearson"


def test_a_p_value_that_is_not_a_number_is_reported_missing():
    # Values at the edge of float range overflow Pearson's sums: no p-value to show, never NaN.
    with np.errstate(over="ignore", invalid="ignore"):
        res = stats.correlation([1.7e308, 1.7e308, -1.7e308, 0.0], [1, 2, 3, 4], "pearson", n_boot=0)
    assert res.p is None


def test_a_column_of_values_reads_as_a_list_of_values():
    column = np.array([[1.0], [2.0], [3.0], [5.0]])  # df[["score"]].to_numpy()
    assert stats.correlation(column, [1, 2, 4, 3]).r == pytest.approx(stats.correlation([1, 2, 3, 5], [1, 2, 4, 3]).r)


@pytest.mark.parametrize(("skipped", "noted"), [(95, False), (100, False), (101, True)])
def test_the_constant_side_note_is_for_more_than_a_tenth_of_the_resamples(monkeypatch, skipped, noted):
    module = importlib.import_module("services.stats.correlation")  # the package re-exports the function

    boots = np.linspace(-0.5, 0.9, 1000)
    boots[:skipped] = np.nan
    monkeypatch.setattr(module, "_boot_correlations", lambda *a, **k: boots.copy())
    note = stats.correlation([0.1, 0.4, 0.35, 0.8, 0.6], [0.0, 0.5, 0.2, 0.9, 0.4], n_boot=1000).note
    assert (note is not None) == noted, note
    if noted:
        assert note.startswith(f"{skipped} of 1000 bootstrap resamples had a constant side")


def test_a_resample_of_one_repeated_value_has_no_pearson_r_even_when_its_mean_is_inexact():
    from services.stats.correlation import _rowwise_pearson

    # mean([0.1] * 7) is not exactly 0.1: the centred values are float noise, not variation.
    r = _rowwise_pearson(np.full((1, 7), 0.1), np.array([[0.0, 1, 4, 9, 16, 25, 36]]))
    assert np.isnan(r).all(), r


# -- the large-n forms' survivors of the 2026-11-29 run --------------------------------------------------------
_classification = importlib.import_module("services.stats.classification")
_binomial = importlib.import_module("services.stats.binomial")
_common = importlib.import_module("services.stats.common")


@pytest.mark.parametrize(
    ("pos", "neg", "auc"),
    [
        # one positive: psi against the negatives 1, 1, 0; S10 of one value is 0, S01 = var(1, 1, 0) = 1/3
        ([0.7], [0.1, 0.5, 0.9], 2 / 3),
        # two positives: V10 = (2/3, 1/3), S10 = 1/18; V01 = (1, 1/2, 0), S01 = 1/4: 1/36 + 1/12
        ([0.7, 0.2], [0.1, 0.5, 0.9], 1 / 2),
        # one negative: V10 = (0, 0, 1), S10 = 1/3; S01 of one value is 0
        ([0.1, 0.5, 0.9], [0.7], 1 / 3),
        # two negatives: V10 = (0, 1/2, 1), S10 = 1/4; V01 = (1/3, 2/3), S01 = 1/18: 1/12 + 1/36
        ([0.1, 0.5, 0.9], [0.7, 0.2], 1 / 2),
    ],
)
def test_delongs_variance_by_hand_with_one_or_two_of_a_class(pos, neg, auc):
    """DeLong, DeLong & Clarke-Pearson (1988): var = S10 / m + S01 / n, a class of one adding no variance of its
    own (its sample variance is taken as 0, not undefined). Each case above comes to 1/9."""
    got_auc, var = _classification.delong(np.array(pos), np.array(neg))
    assert got_auc == pytest.approx(auc) and var == pytest.approx(1 / 9)


def test_the_binomial_intervals_name_their_bad_input_and_default_to_95_percent():
    for fn in (_binomial.wilson, _binomial.clopper_pearson):
        assert fn(3, 10) == fn(3, 10, 0.95)
        with pytest.raises(ValueError, match=r"^n must be at least 1 \(got 0\)$"):
            fn(0, 0)
        with pytest.raises(ValueError, match=r"^k must be between 0 and n = 5 \(got 6\)$"):
            fn(6, 5)
        for level in (0.0, 1.0, 1.5):
            with pytest.raises(ValueError, match=r"^the level must be strictly between 0 and 1 \(got "):
                fn(1, 5, level)


def test_blocks_of_resamples_add_up_to_the_resamples_asked_for():
    for n_boot, n in ((1000, 3000), (7, 1), (1, 10**7), (2500, 400)):
        chunks = _common.resample_chunks(n_boot, n)
        assert sum(chunks) == n_boot and all(c >= 1 for c in chunks)


def test_above_5000_pairs_the_points_only_request_has_no_interval_and_the_seed_fixes_the_groups():
    rng = np.random.default_rng(12)
    x = rng.normal(size=6000)
    y = x + rng.normal(size=6000)
    assert stats.correlation(x, y, "pearson", n_boot=0).ci_low is None
    first, again = (stats.correlation(x, y, "spearman", seed=4) for _ in range(2))
    assert first.ci_low is not None and (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilsons_interval_is_exactly_0_and_1_at_no_and_all_successes(level):
    """At k = 0 the lower end is 0 and at k = n the upper is 1: the formula's center -+ delta lands a few 1e-17
    off there in floating point (below 0, above 1), which an interval of a proportion must not."""
    for n in range(1, 301):
        assert _binomial.wilson(0, n, level)[0] == 0.0
        assert _binomial.wilson(n, n, level)[1] == 1.0
        for k in (0, 1, n // 2, n - 1, n):
            low, high = _binomial.wilson(k, n, level)
            assert 0.0 <= low <= k / n <= high <= 1.0


def test_balanced_accuracy_above_5000_items_with_no_item_predicted_positive():
    """Above 5,000 items the resamples are drawn as counts of the four (prediction, label) cells; with no item
    predicted positive two cells are empty and every resample's balanced accuracy is (0 + 1) / 2."""
    labels = np.arange(6000) % 2
    scores = np.full(6000, 0.1)
    assert stats.classification(scores, labels, 0.5).balanced_accuracy == 0.5
    assert stats.balanced_accuracy_interval(scores, labels, 0.5) == (0.5, 0.5)


def _jackknife_by_hand(x, y, fn, seed, level=0.95):
    """The grouped jackknife of Efron & Tibshirani (1993, ch. 11) over the app's 100 groups (a seeded permutation
    of the pairs, taken in turn): r_(k) = scipy's correlation without group k, se^2 = (g - 1) / g *
    sum_k (r_(k) - mean)^2 over the g groups whose r_(k) is defined, and r -+ z se cut to [-1, 1]."""
    group = np.random.default_rng(seed).permutation(x.size) % 100
    r = fn(x, y).statistic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sps.ConstantInputWarning)  # a group whose rest has a constant side
        rk = np.array([fn(x[group != k], y[group != k]).statistic for k in range(100)])
    rk = rk[np.isfinite(rk)]
    g = rk.size
    se = np.sqrt((g - 1) / g * ((rk - rk.mean()) ** 2).sum())
    half = sps.norm.ppf(0.5 + level / 2) * se
    return max(-1.0, r - half), min(1.0, r + half)


@pytest.mark.parametrize(
    ("method", "fn"), [("pearson", sps.pearsonr), ("spearman", sps.spearmanr), ("kendall", sps.kendalltau)]
)
def test_above_5000_pairs_the_interval_is_the_grouped_jackknifes_by_hand(method, fn):
    rng = np.random.default_rng(21)
    x = rng.integers(0, 6, 6000) / 5.0  # few values (Kendall's tables), tied on both sides
    y = np.round(x + rng.normal(scale=0.4, size=6000), 1)
    got = stats.correlation(x, y, method, seed=7, ci=0.9)
    assert (got.ci_low, got.ci_high) == pytest.approx(_jackknife_by_hand(x, y, fn, 7, 0.9), rel=0, abs=1e-10)


def test_above_5000_pairs_the_jackknife_interval_is_cut_to_minus_one_and_one():
    """One far pair turns a near-perfect correlation negative; without the group that holds it r is near 1, so
    the jackknife's standard error is large and r -+ z se reaches past both ends."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=6000)
    y = x + rng.normal(scale=0.05, size=6000)
    x[0], y[0] = 200.0, -200.0
    got = stats.correlation(x, y, "pearson")
    assert -1.0 < got.r < 0.0
    assert (got.ci_low, got.ci_high) == (-1.0, 1.0)
    assert _jackknife_by_hand(x, y, sps.pearsonr, 0) == (-1.0, 1.0)


def test_kendalls_jackknife_with_an_empty_cell_at_the_tables_far_corner():
    """Binary scores with no pair at (1, 1): each group's contingency table ends in an empty cell."""
    rng = np.random.default_rng(8)
    cell = rng.integers(0, 3, 6000)  # (0, 0), (0, 1), (1, 0)
    x, y = (cell == 2).astype(float), (cell == 1).astype(float)
    got = stats.correlation(x, y, "kendall", seed=2)
    assert got.r < 0
    assert (got.ci_low, got.ci_high) == pytest.approx(_jackknife_by_hand(x, y, sps.kendalltau, 2), abs=1e-10)


def test_pearsons_jackknife_interval_does_not_move_with_the_scores_origin():
    """r is shift-free, and so is its interval: scores around a million give the interval of the same scores
    around zero (the per-group sums are taken of centred values, which keeps their precision)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=6000)
    y = x + rng.normal(size=6000)
    near = stats.correlation(x, y, "pearson")
    far = stats.correlation(x + 1e6, y - 1e6, "pearson")
    assert far.r == pytest.approx(near.r, abs=1e-9)
    assert (far.ci_low, far.ci_high) == pytest.approx((near.ci_low, near.ci_high), abs=1e-7)


def test_spearmans_jackknife_when_one_side_varies_in_a_single_pair():
    """Without the group of the one differing pair a side is constant: that group's correlation is undefined and
    left out of the standard error, which the other 99 give."""
    rng = np.random.default_rng(6)
    x = np.zeros(6000)
    x[17] = 1.0
    y = rng.normal(size=6000)
    got = stats.correlation(x, y, "spearman", seed=1)
    assert got.ci_low is not None and got.ci_low <= got.r <= got.ci_high
    group = np.random.default_rng(1).permutation(6000) % 100
    assert np.ptp(x[group != group[17]]) == 0  # the case meant: one group's rest is constant
    assert (got.ci_low, got.ci_high) == pytest.approx(_jackknife_by_hand(x, y, sps.spearmanr, 1), abs=1e-10)


def test_the_interval_method_changes_above_5000_pairs_not_at_it():
    """Up to 5,000 pairs the interval is a percentile bootstrap, which depends on how many resamples are drawn;
    above, the jackknife, which takes any positive n_boot alike (1 included)."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=5001)
    y = x + rng.normal(size=5001)
    at = [stats.correlation(x[:5000], y[:5000], n_boot=b) for b in (200, 300)]
    assert (at[0].ci_low, at[0].ci_high) != (at[1].ci_low, at[1].ci_high)
    above = [stats.correlation(x, y, n_boot=b) for b in (1, 300, 1000)]
    assert len({(a.ci_low, a.ci_high) for a in above}) == 1
