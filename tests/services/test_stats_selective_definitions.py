"""Reliability, ECE, the risk-coverage curve and Wilson intervals checked against their definitions, worked by
hand: equal-width bins closed on the left (the last also on the right), ECE = sum_b (n_b / N) |mean_b - obs_b|
(Guo et al., 2017, Eq. 3), Wilson's score interval, and risk-coverage deciding the most confident first."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.stats import selective

Z = 1.959963984540054  # the 97.5% point of the standard normal


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927): (p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 2), (3, 10), (10, 10), (7, 40)])
def test_wilson_is_the_score_interval(k: int, n: int) -> None:
    low, high = selective.wilson(k, n)
    assert (low, high) == pytest.approx(_wilson(k, n), abs=1e-12)


def test_wilson_without_trials_has_no_interval() -> None:
    assert selective.wilson(0, 0) == (None, None)


def test_bins_are_equal_width_closed_on_the_left_and_the_last_holds_one() -> None:
    """Ten bins [0, .1), [.1, .2), ..., [.9, 1]: a score on an edge goes to the bin it opens; 0 and 1 are
    probabilities too, in the first and the last bin."""
    r = selective.reliability([0.0, 0.1, 0.25, 0.5, 0.999, 1.0], [0, 0, 1, 1, 1, 1])
    assert r.note is None and r.n == 6
    assert list(r.bins["lo"]) == pytest.approx([0.0, 0.1, 0.2, 0.5, 0.9])
    assert list(r.bins["hi"]) == pytest.approx([0.1, 0.2, 0.3, 0.6, 1.0])
    assert list(r.bins["n"]) == [1, 1, 1, 1, 2]


def test_the_number_of_bins_sets_their_width() -> None:
    """Four bins of width 0.25: 0.3 and 0.45 share [0.25, 0.5); 0.5 opens [0.5, 0.75)."""
    r = selective.reliability([0.3, 0.45, 0.5, 0.8], [0, 1, 1, 1], n_bins=4)
    assert list(r.bins["lo"]) == pytest.approx([0.25, 0.5, 0.75])
    assert list(r.bins["hi"]) == pytest.approx([0.5, 0.75, 1.0])
    assert list(r.bins["n"]) == [2, 1, 1]
    assert list(r.bins["mean_score"]) == pytest.approx([0.375, 0.5, 0.8])


def test_each_bin_has_its_share_of_ones_with_its_wilson_interval_and_ece_weighs_the_gaps() -> None:
    """Bin [0.1, 0.2): 0.1, 0.15, 0.15, labels 0, 1, 0: mean 0.4/3, observed 1/3. Bin [0.7, 0.8): 0.7, 0.7,
    0.75, 0.75, labels 1, 1, 1, 0: mean 0.725, observed 3/4. ECE = (3 |0.4/3 - 1/3| + 4 |0.725 - 0.75|) / 7."""
    scores = [0.1, 0.15, 0.15, 0.7, 0.7, 0.75, 0.75]
    labels = [0, 1, 0, 1, 1, 1, 0]
    r = selective.reliability(scores, labels)
    assert list(r.bins["n"]) == [3, 4]
    assert list(r.bins["mean_score"]) == pytest.approx([0.4 / 3, 0.725])
    assert list(r.bins["observed"]) == pytest.approx([1 / 3, 0.75])
    assert list(r.bins["ci_low"]) == pytest.approx([_wilson(1, 3)[0], _wilson(3, 4)[0]])
    assert list(r.bins["ci_high"]) == pytest.approx([_wilson(1, 3)[1], _wilson(3, 4)[1]])
    want = (3 * abs(0.4 / 3 - 1 / 3) + 4 * abs(0.725 - 0.75)) / 7
    assert r.ece == pytest.approx(want)
    assert selective.expected_calibration_error(scores, labels) == pytest.approx(want)
    assert selective.expected_calibration_error(scores, labels, n_bins=1) == pytest.approx(abs(np.mean(scores) - 4 / 7))


def test_a_pair_missing_either_side_is_left_out_and_the_rest_counted() -> None:
    r = selective.reliability([0.2, np.nan, 0.9, 0.4], [1, 1, np.nan, 0])
    assert r.n == 2 and list(r.bins["n"]) == [1, 1]
    assert r.ece == pytest.approx((abs(0.2 - 1) + abs(0.4 - 0)) / 2)


def test_scores_outside_zero_to_one_are_refused_with_a_reason_and_their_count() -> None:
    for bad in ([-0.01, 0.5], [0.5, 1.01]):
        r = selective.reliability(bad, [1, 0])
        assert r.ece is None and r.n == 2 and r.bins.empty
        assert r.note == "The scores are not in [0, 1]: they are no probabilities."
    empty = selective.reliability([np.nan], [1])
    assert (empty.ece, empty.n, empty.note) == (None, 0, "No item has both a score and a label.")
    assert list(empty.bins.columns) == selective.BIN_COLUMNS


def test_unequal_lengths_are_refused_with_both_lengths() -> None:
    with pytest.raises(ValueError, match=r"^scores and labels must have the same length \(1 != 2\)$"):
        selective.risk_coverage([0.5], [1, 0])


def test_a_score_at_the_center_is_a_consistent_prediction() -> None:
    """The decision is 'consistent when the score is at least center': 0.5 predicts 1."""
    rc = selective.risk_coverage([0.5], [1])
    assert list(rc.curve["accuracy"]) == [1.0] and rc.curve["min_confidence"].iloc[0] == 0.0
    other = selective.risk_coverage([0.7, 0.65], [0, 1], center=0.7)
    # 0.65 is 0.05 from the center (decided first, predicts 0: wrong); 0.7 is at it (predicts 1: wrong)
    assert list(other.curve["n_decided"]) == [1, 2] and list(other.curve["accuracy"]) == [0.0, 0.0]
    assert other.center == 0.7 and other.curve["min_confidence"].iloc[0] == pytest.approx(0.05)


def test_risk_coverage_points_by_hand() -> None:
    """Scores 0.9 (1), 0.2 (0), 0.3 (1), 0.7 (0), 0.55 (1): distances 0.4, 0.3, 0.2, 0.2, 0.05; 0.3 and 0.7 are
    equally far (0.2, whatever the float rounding of 0.7 - 0.5) and decided together."""
    rc = selective.risk_coverage([0.9, 0.2, 0.3, 0.7, 0.55], [1, 0, 1, 0, 1])
    c = rc.curve
    assert rc.n == 5 and rc.note is None
    assert list(c["n_decided"]) == [1, 2, 4, 5]
    assert list(c["coverage"]) == pytest.approx([0.2, 0.4, 0.8, 1.0])
    assert list(c["accuracy"]) == pytest.approx([1.0, 1.0, 0.5, 0.6])
    assert list(c["min_confidence"]) == pytest.approx([0.4, 0.3, 0.2, 0.05])
    # balanced accuracy: one class decided -> none; then recalls of 0 and 1 (predictions 1, 0, 0, 1, 1)
    assert c["balanced_accuracy"].iloc[0] is None or np.isnan(c["balanced_accuracy"].iloc[0])
    assert list(c["balanced_accuracy"].iloc[1:]) == pytest.approx([1.0, (1 / 2 + 1 / 2) / 2, (1 / 2 + 2 / 3) / 2])
    assert list(c["ci_low"]) == pytest.approx([_wilson(k, n)[0] for k, n in ((1, 1), (2, 2), (2, 4), (3, 5))])
    assert list(c["ci_high"]) == pytest.approx([_wilson(k, n)[1] for k, n in ((1, 1), (2, 2), (2, 4), (3, 5))])
    # the area under risk: each point's risk over its step of coverage
    assert rc.aurc == pytest.approx(0.2 * 0 + 0.2 * 0 + 0.4 * 0.5 + 0.2 * 0.4)


def test_risk_coverage_without_pairs_says_so() -> None:
    rc = selective.risk_coverage([np.nan, 0.4], [1, np.nan], center=0.3)
    assert (rc.aurc, rc.n, rc.center, rc.note) == (None, 0, 0.3, "No item has a score and a label.")
    assert list(rc.curve.columns) == selective.CURVE_COLUMNS and rc.curve.empty


def test_at_coverage_takes_the_largest_point_not_above_the_share() -> None:
    rc = selective.risk_coverage([0.9, 0.2, 0.3, 0.7, 0.55], [1, 0, 1, 0, 1])
    assert selective.at_coverage(rc, 0.8)["n_decided"] == 4  # exactly a point's coverage: that point
    assert selective.at_coverage(rc, 0.79)["n_decided"] == 2
    assert selective.at_coverage(rc, 1.0)["n_decided"] == 5
    assert selective.at_coverage(rc, 0.1) is None
    thirds = selective.risk_coverage([0.9, 0.1, 0.6], [1, 0, 1])
    assert selective.at_coverage(thirds, 2 / 3)["n_decided"] == 2  # 2/3 as the curve computes it


def test_a_score_on_a_decimal_edge_opens_its_bin() -> None:
    """0.3, 0.6 and 0.7 are edges of the ten bins: each opens its own bin, even where 0 + k * 0.1 in floating
    point lands just above it (0.30000000000000004, 0.6000000000000001, 0.7000000000000001)."""
    r = selective.reliability([0.3, 0.6, 0.7], [1, 0, 1])
    assert list(r.bins["lo"]) == [0.3, 0.6, 0.7]
    assert list(r.bins["n"]) == [1, 1, 1]
