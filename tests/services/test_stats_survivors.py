"""Statistics survivors of the whole-population run, killed against the functions' documented behaviour:
defaults, messages of bad input, boundaries of the notes, and the ends of the risk-coverage curve."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

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
