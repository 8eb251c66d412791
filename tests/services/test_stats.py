"""Correlations, AUROC, classification metrics, Krippendorff's alpha and majority votes."""

from __future__ import annotations

import dataclasses
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from services import stats
from services.stats import agreement

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", as in the krippendorff package's docstring:
# 3 raters (rows) x 15 units (columns), NaN where a rater did not rate the unit.
KRIPPENDORFF_2011 = [
    [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
    [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
    [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
]


@pytest.fixture
def xy() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    x = rng.normal(size=200)
    return x, 0.5 * x + rng.normal(size=200)


# -- correlation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "reference"), [("pearson", sps.pearsonr), ("spearman", sps.spearmanr), ("kendall", sps.kendalltau)]
)
def test_correlation_matches_scipy_and_ci_contains_r(xy, method, reference) -> None:
    x, y = xy
    res = stats.correlation(x, y, method, n_boot=500, seed=1)
    expected = reference(x, y)
    assert res.method == method and res.n == 200 and res.note is None
    assert res.r == pytest.approx(expected.statistic)
    assert res.p == pytest.approx(expected.pvalue)
    assert res.ci_low < res.r < res.ci_high


def test_correlation_is_a_frozen_dataclass(xy) -> None:
    res = stats.correlation(*xy, n_boot=0)
    assert dataclasses.is_dataclass(res)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.r = 0.0  # type: ignore[misc]
    assert res.ci_low is None and res.ci_high is None


def test_kendall_is_tau_b_with_ties() -> None:
    x, y = [1, 1, 2, 3, 3, 4], [1, 2, 2, 3, 4, 4]
    res = stats.correlation(x, y, "kendall", n_boot=0)
    assert res.r == pytest.approx(sps.kendalltau(x, y, variant="b").statistic)


def test_bootstrap_is_reproducible_with_the_seed_and_changes_with_another(xy) -> None:
    a = stats.correlation(*xy, "spearman", n_boot=300, seed=7)
    b = stats.correlation(*xy, "spearman", n_boot=300, seed=7)
    c = stats.correlation(*xy, "spearman", n_boot=300, seed=8)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.r == c.r


def test_pairs_with_nan_are_dropped_and_n_counts_the_rest() -> None:
    x = [1.0, 2.0, NAN, 4.0, 5.0, 6.0]
    y = [2.0, 1.0, 3.0, NAN, 6.0, 5.0]
    res = stats.correlation(x, y, "pearson", n_boot=0)
    assert res.n == 4
    assert res.r == pytest.approx(sps.pearsonr([1, 2, 5, 6], [2, 1, 6, 5]).statistic)


def test_pandas_series_with_none_are_accepted() -> None:
    res = stats.correlation(pd.Series([1, 2, None, 4]), pd.Series([1, 3, 2, 5]), "spearman", n_boot=0)
    assert res.n == 3 and res.r == pytest.approx(1.0)


@pytest.mark.parametrize("method", stats.METHODS)
def test_constant_input_gives_a_note_not_nan(method) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scipy ConstantInputWarning either
        res = stats.correlation([3, 3, 3, 3], [1, 2, 3, 4], method)
    assert res.r is None and res.p is None and res.n == 4
    assert "same" in res.note and "x" in res.note


def test_fewer_than_three_pairs_give_a_note() -> None:
    res = stats.correlation([1, 2, NAN], [1, 2, 3])
    assert res.r is None and res.n == 2
    assert "at least 3 pairs" in res.note and "1 left out" in res.note


def test_length_mismatch_and_unknown_method_raise() -> None:
    with pytest.raises(ValueError, match="same length"):
        stats.correlation([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="method"):
        stats.correlation([1, 2, 3], [1, 2, 3], "cosine")  # type: ignore[arg-type]


def test_perfect_correlation_has_a_degenerate_interval() -> None:
    res = stats.correlation([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], n_boot=200, seed=0)
    assert res.r == pytest.approx(1.0)
    assert res.ci_low == pytest.approx(1.0) and res.ci_high == pytest.approx(1.0)


# -- AUROC -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scores", "labels", "expected"),
    [
        ([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], 0.75),  # one of four pairs misordered
        ([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], 1.0),
        ([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1], 0.0),
        ([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1], 0.5),  # every pair tied: 0.5 each
        ([0.2, 0.5, 0.5, 0.9], [0, 0, 1, 1], 0.875),  # pairs: (0.5>0.2) 1, (0.5=0.5) .5, (0.9>0.2) 1, (0.9>0.5) 1
    ],
)
def test_auroc_hand_computed(scores, labels, expected) -> None:
    res = stats.auroc(scores, labels, n_boot=0)
    assert res.auc == pytest.approx(expected)
    assert (res.n_pos, res.n_neg) == (2, 2)


def test_auroc_bootstrap_interval_contains_the_auc_and_is_reproducible() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=150)
    scores = labels + rng.normal(scale=1.2, size=150)
    a = stats.auroc(scores, labels, n_boot=400, seed=5)
    b = stats.auroc(scores, labels, n_boot=400, seed=5)
    assert a == b
    assert a.ci_low < a.auc < a.ci_high
    assert 0.5 < a.auc < 1.0


def test_auroc_one_class_gives_a_note() -> None:
    res = stats.auroc([0.1, 0.5, 0.7], [1, 1, 1])
    assert res.auc is None and res.n_pos == 3 and res.n_neg == 0
    assert "both classes" in res.note and "only positive" in res.note


def test_auroc_drops_missing_and_rejects_non_binary_labels() -> None:
    res = stats.auroc([0.1, NAN, 0.4, 0.35, 0.8], [0, 1, 0, 1, 1], n_boot=0)
    assert res.auc == pytest.approx(0.75) and res.n_pos == 2
    with pytest.raises(ValueError, match="0 or 1"):
        stats.auroc([0.1, 0.2], [0, 2])


# -- classification ----------------------------------------------------------------------------
def test_classification_with_inconsistency_as_the_positive_class() -> None:
    # Labels 1 = consistent, 0 = inconsistent; score >= 0.5 predicts consistent.
    scores = [0.9, 0.8, 0.7, 0.2, 0.6, 0.1, 0.3, 0.4, 0.95, 0.05]
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]
    # predicted:  1  1  1  0  1  0  0  0  1  0
    # inconsistent (0) as positive: tp = 4 (idx 5,6,7,9), fp = 1 (idx 3), fn = 1 (idx 4), tn = 4
    res = stats.classification(scores, labels, 0.5)
    assert res.positive == 0
    assert (res.tp, res.fp, res.tn, res.fn, res.n) == (4, 1, 4, 1, 10)
    assert res.precision == pytest.approx(4 / 5)
    assert res.recall == pytest.approx(4 / 5)
    assert res.f1 == pytest.approx(0.8)
    assert res.balanced_accuracy == pytest.approx(0.8)


def test_classification_positive_one_and_threshold_inclusive() -> None:
    scores = [1.0, 0.5, 0.5, 0.2, 0.0, 0.9]
    labels = [1, 1, 0, 0, 0, 0]
    # score >= 0.5 predicts 1: predictions 1 1 1 0 0 1
    res = stats.classification(scores, labels, 0.5, positive=1)
    assert (res.tp, res.fp, res.tn, res.fn) == (2, 2, 2, 0)
    assert res.precision == pytest.approx(0.5) and res.recall == pytest.approx(1.0)
    assert res.f1 == pytest.approx(2 / 3)
    assert res.balanced_accuracy == pytest.approx((1.0 + 0.5) / 2)
    flipped = stats.classification(scores, labels, 0.5, positive=0)
    assert flipped.balanced_accuracy == res.balanced_accuracy
    assert (flipped.tp, flipped.fp, flipped.tn, flipped.fn) == (2, 0, 2, 2)


def test_classification_zero_divisions_are_none_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Everything predicted consistent and everything is consistent: no inconsistency to find or flag.
        res = stats.classification([0.9, 0.8], [1, 1], 0.5)
    assert (res.tp, res.fp, res.tn, res.fn) == (0, 0, 2, 0)
    assert res.precision is None and res.recall is None and res.f1 is None
    assert res.balanced_accuracy is None and "one class" in res.note


def test_classification_nothing_flagged_has_f1_zero() -> None:
    res = stats.classification([0.9, 0.8, 0.7], [0, 1, 0], 0.5)
    assert res.precision is None and res.recall == 0.0 and res.f1 == 0.0


# -- Krippendorff's alpha ----------------------------------------------------------------------
@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.691358), ("interval", 0.810845)])
def test_alpha_on_the_documented_example(level, expected) -> None:
    res = stats.krippendorff_alpha(KRIPPENDORFF_2011, level, n_boot=500, seed=0)
    assert res.alpha == pytest.approx(expected, abs=1e-6)
    assert (res.n_raters, res.n_units, res.n_pairable) == (3, 13, 12)
    assert res.level == level
    assert res.ci_low <= res.alpha <= res.ci_high
    assert res == stats.krippendorff_alpha(KRIPPENDORFF_2011, level, n_boot=500, seed=0)


@pytest.mark.parametrize("level", stats.LEVELS)
def test_vectorised_alpha_with_unit_weights_equals_the_package(level) -> None:
    data = np.array(KRIPPENDORFF_2011)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    values = data[:, pairable]
    domain = np.unique(values[~np.isnan(values)])
    counts = (values.T[:, :, None] == domain).sum(axis=1)
    ours = agreement._weighted_alpha(agreement._unit_coincidences(counts), np.ones((1, counts.shape[0])), domain, level)
    assert ours[0] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def test_alpha_ordinal_and_ratio_match_the_package_second_example() -> None:
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
    assert stats.krippendorff_alpha(data, "ordinal", n_boot=0).alpha == pytest.approx(0.815, abs=5e-4)
    assert stats.krippendorff_alpha(data, "ratio", n_boot=0).alpha == pytest.approx(0.797, abs=5e-4)


def test_alpha_single_rater_is_explained() -> None:
    res = stats.krippendorff_alpha([[1, 2, 3, 1]], "nominal")
    assert res.alpha is None and res.n_raters == 1
    assert "at least two raters" in res.note


def test_alpha_identical_ratings_are_explained() -> None:
    res = stats.krippendorff_alpha([[1, 1, 1, NAN], [1, 1, 1, 2]], "nominal")
    assert res.alpha is None and res.n_pairable == 3
    assert "same value" in res.note and "undefined" in res.note


def test_alpha_too_few_pairable_units_is_explained() -> None:
    res = stats.krippendorff_alpha([[1, NAN, 2], [2, 1, NAN]], "interval")
    assert res.alpha is None and res.n_pairable == 1 and res.n_units == 3
    assert "rated by two or more raters" in res.note


def test_alpha_from_long_builds_the_matrix() -> None:
    rows = [
        {"unit": f"u{j}", "rater": f"r{i}", "value": v}
        for i, row in enumerate(KRIPPENDORFF_2011)
        for j, v in enumerate(row)
        if not np.isnan(v)
    ]
    res = stats.alpha_from_long(pd.DataFrame(rows), "nominal", n_boot=0)
    assert res.alpha == pytest.approx(0.691358, abs=1e-6)
    assert (res.n_units, res.n_raters) == (13, 3)


def test_alpha_from_long_codes_labels_and_checks_input() -> None:
    df = pd.DataFrame(
        {
            "unit": [1, 1, 2, 2, 3, 3, 4, 4],
            "rater": ["a", "b"] * 4,
            "value": ["yes", "yes", "no", "no", "yes", "no", "no", "no"],
        }
    )
    coded = stats.alpha_from_long(df.assign(value=(df["value"] == "yes").astype(int)), "nominal", n_boot=0)
    assert stats.alpha_from_long(df, "nominal", n_boot=0).alpha == pytest.approx(coded.alpha)
    with pytest.raises(ValueError, match="numeric"):
        stats.alpha_from_long(df, "interval")
    with pytest.raises(ValueError, match="more than once"):
        stats.alpha_from_long(pd.concat([df, df.iloc[:1]]), "nominal")
    with pytest.raises(ValueError, match="missing column"):
        stats.alpha_from_long(df.drop(columns="rater"), "nominal")
    ordered = stats.alpha_from_long(df, "ordinal", value_order=["no", "yes"], n_boot=0)
    assert ordered.alpha == pytest.approx(coded.alpha)


def test_nominal_alpha_on_rating_slots_equals_alpha_on_raters() -> None:
    # Four raters, each rating some of five units: the slots matrix forgets who rated, alpha does not change.
    raters = np.array([[1, 0, NAN, 1, 0], [1, 1, 0, NAN, 0], [NAN, 0, 0, 1, NAN], [1, NAN, 1, 1, NAN]], dtype=float)
    units = [[v for v in raters[:, j] if not np.isnan(v)] for j in range(raters.shape[1])]
    slots = stats.slot_matrix(units)
    assert slots.shape == (3, 5)
    assert np.isnan(slots[2, 4]) and slots[:2, 4].tolist() == [0, 0]
    expected = stats.krippendorff_alpha(raters, "nominal", n_boot=0).alpha
    assert stats.krippendorff_alpha(slots, "nominal", n_boot=0).alpha == pytest.approx(expected)


def test_binary_slot_matrix_puts_the_yes_votes_first() -> None:
    m = stats.binary_slot_matrix(np.array([2, 0, 1]), np.array([3, 1, 1]))
    np.testing.assert_array_equal(m, [[1, 0, 1], [1, NAN, NAN], [0, NAN, NAN]])
    assert stats.slot_matrix([]).shape == (0, 0) == stats.binary_slot_matrix(np.array([]), np.array([])).shape


# -- majority ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ({"w1": 1, "w2": 1, "w3": 0}, 1),
        ({"w1": 0, "w2": 1, "w3": 0}, 0),
        ({"w1": 0, "w2": 1}, None),
        ({"w1": 2, "w2": 2, "w3": 1, "w4": 1}, None),
        ({"w1": 2, "w2": 2, "w3": 1, "w4": 0}, 2),
        ({}, None),
    ],
)
def test_majority(votes, expected) -> None:
    assert stats.majority(votes) == expected


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        ([[NAN, NAN, NAN], [NAN, NAN, NAN]], "No rater has given ratings yet"),
        ([[1, 2, 3, 1]], "Only one rater has given ratings"),
        ([[1, NAN, 2], [NAN, 1, NAN]], "No unit is rated by two or more raters yet"),
        ([[1, NAN, 2], [2, 1, NAN]], "Only one unit rated by two or more raters"),
    ],
)
def test_too_few_raters_or_units_reads_as_english(rows, says):
    res = stats.krippendorff_alpha(rows, "nominal")
    assert res.alpha is None and res.note.startswith(says), res.note
    assert "Only 0" not in res.note and "Only 1 " not in res.note


def test_precision_and_recall_carry_wilson_intervals():
    """The intervals are Wilson's, as statsmodels computes them, of tp over the predicted and the true positives."""
    from statsmodels.stats.proportion import proportion_confint

    from services.stats.classification import classification

    r = classification([0.9, 0.8, 0.7, 0.2, 0.6, 0.1], [1, 1, 0, 1, 0, 0], 0.5, positive=1)
    assert (r.tp, r.fp, r.fn) == (2, 2, 1)
    assert r.precision_ci() == pytest.approx(proportion_confint(2, 4, method="wilson"))
    assert r.recall_ci() == pytest.approx(proportion_confint(2, 3, method="wilson"))
    assert classification([0.1], [0], 0.5, positive=1).precision_ci() == (None, None)
