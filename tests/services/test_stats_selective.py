"""Reliability bins, expected calibration error and the risk-coverage curve (services.stats.selective)."""

import numpy as np
import pytest

from services.stats import selective


def test_ece_is_the_size_weighted_gap_between_mean_score_and_share_consistent() -> None:
    # Bin [0.2, 0.3): scores 0.2, 0.2, labels 0, 1 -> gap |0.2 - 0.5| = 0.3 on 2 items.
    # Bin [0.9, 1.0]: scores 0.9, 1.0, labels 1, 1 -> gap |0.95 - 1| = 0.05 on 2 items.
    r = selective.reliability([0.2, 0.2, 0.9, 1.0], [0, 1, 1, 1])
    assert r.n == 4 and r.ece == pytest.approx((2 * 0.3 + 2 * 0.05) / 4)
    assert list(r.bins["n"]) == [2, 2] and list(r.bins["lo"]) == pytest.approx([0.2, 0.9])
    assert list(r.bins["observed"]) == pytest.approx([0.5, 1.0])
    low, high = r.bins.iloc[0][["ci_low", "ci_high"]]
    assert low < 0.5 < high  # a Wilson interval around 1 of 2


def test_calibrated_scores_have_a_small_ece_and_overconfident_ones_a_large_one() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=20000)
    y = (rng.uniform(size=p.size) < p).astype(float)
    assert selective.expected_calibration_error(p, y) < 0.02
    sharp = np.where(p >= 0.5, 1.0, 0.0)  # certain about everything
    assert selective.expected_calibration_error(sharp, y) > 0.2


def test_reliability_says_why_when_it_cannot_be_drawn() -> None:
    assert selective.reliability([0.5, np.nan], [np.nan, 1]).note.startswith("No item")
    assert "not in [0, 1]" in selective.reliability([2.0, 0.5], [1, 0]).note
    with pytest.raises(ValueError, match="same length"):
        selective.reliability([0.5], [1, 0])


def test_risk_coverage_decides_the_most_confident_first() -> None:
    # Confident and right (0.95 -> 1, 0.05 -> 0), then less sure and wrong (0.6 -> 0), then a tie at 0.45/0.55.
    scores = [0.95, 0.05, 0.6, 0.45, 0.55]
    labels = [1, 0, 0, 0, 0]
    rc = selective.risk_coverage(scores, labels)
    c = rc.curve
    assert list(c["n_decided"]) == [2, 3, 5]  # 0.95 and 0.05 tie in confidence, as do 0.45 and 0.55
    assert list(c["accuracy"]) == pytest.approx([1.0, 2 / 3, 3 / 5])
    assert list(c["coverage"]) == pytest.approx([0.4, 0.6, 1.0])
    assert rc.aurc == pytest.approx(0.4 * 0 + 0.2 * (1 / 3) + 0.4 * (2 / 5))
    assert (c["ci_low"] <= c["accuracy"]).all() and (c["accuracy"] <= c["ci_high"]).all()
    assert selective.at_coverage(rc, 0.7)["n_decided"] == 3


def test_a_judge_that_knows_when_it_does_not_know_has_a_lower_area() -> None:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=2000).astype(float)
    sure = np.where(rng.uniform(size=y.size) < 0.5, y * 0.9 + 0.05, 0.5 + rng.normal(0, 0.01, y.size))
    unsure = np.clip(0.5 + (y - 0.5) * rng.normal(0.2, 0.3, y.size), 0, 1)
    assert selective.risk_coverage(sure, y).aurc < selective.risk_coverage(unsure, y).aurc


def test_reliability_bin_edges_read_as_tenths_in_the_csv() -> None:
    """The bins' edges go to a CSV as they are: 0.3, not 0.30000000000000004."""
    r = selective.reliability([i / 20 + 0.01 for i in range(20)], [i % 2 for i in range(20)])
    csv = r.bins[["lo", "hi"]].to_csv(index=False)
    assert "0000000" not in csv, csv
    assert list(r.bins["lo"]) == [k / 10 for k in range(10)]


def test_each_points_balanced_accuracy_is_that_of_the_items_decided_so_far() -> None:
    """The balanced accuracy of a point is the mean of the two classes' recalls over the items decided up to it
    (none while one class is missing), recounted here point by point; scores with ties and with many values."""
    rng = np.random.default_rng(3)
    for scores in (rng.random(400), np.round(rng.random(400), 1)):
        labels = (rng.random(400) < scores).astype(int)
        labels[np.argsort(-np.abs(scores - 0.5))[:3]] = 1  # the first points see one class only
        res = selective.risk_coverage(scores, labels)
        order = np.argsort(-np.round(np.abs(scores - 0.5), 9), kind="stable")
        pred, y = (scores >= 0.5).astype(int)[order], labels[order]
        for n, got in zip(res.curve["n_decided"], res.curve["balanced_accuracy"], strict=True):
            p, t = pred[:n], y[:n]
            if (t == 0).any() and (t == 1).any():
                want = ((p[t == 0] == 0).mean() + (p[t == 1] == 1).mean()) / 2
                assert got == pytest.approx(want, abs=1e-12)
            else:
                assert got is None or np.isnan(got)
