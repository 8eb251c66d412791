"""DHP results that once passed for "cannot change": missing scores given as None, the order of a
perturbation's metric tests, the duplicate error's row, and a metric an expert gave no weight."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from services.dhp.statistics import analyse, harmonic_mean_p, wilcoxon_greater


def test_a_missing_score_given_as_none_is_left_out_and_counted():
    """Section 4.3.1 tests the pairs that have both scores: a score missing as None (a NULL from a database, an
    empty JSON field) is left out and counted, on either side, as NaN is."""
    res = wilcoxon_greater([5.0, None, 4.0, 6.0, 7.0], [1.0, 2.0, None, 3.0, 2.0])
    assert (res.n_pairs, res.n_missing) == (3, 2)
    # the three pairs left: 5-1, 6-3, 7-2, all positive: exact one-sided p = 1 / 2^3
    assert res.p_value == pytest.approx(1 / 8)
    assert res.mean_original == pytest.approx(6.0) and res.mean_perturbed == pytest.approx(2.0)


def _scores(metrics: list[str]) -> pd.DataFrame:
    rows = []
    for metric in metrics:
        for i in range(6):
            rows.append(
                {
                    "item_id": i,
                    "perturbation": "typos",
                    "level": "fluency",
                    "metric": metric,
                    "original": 5.0 + i,
                    "perturbed": 4.0 + i - (i % 3),
                }
            )
    return pd.DataFrame(rows)


def test_a_perturbations_metric_tests_keep_the_order_the_metrics_were_given_in():
    """The per-metric table lists the metrics in the order of the scores (the task's metric list), not
    alphabetically."""
    for given in (["zeta", "alpha", "mid"], ["mid", "zeta", "alpha"]):
        res = analyse(_scores(given))
        assert [t.metric for t in res.perturbations[0].tests] == given


def test_the_duplicate_error_names_the_earliest_repeated_row():
    """Rows A, B, B, A: both items are repeated; the message names A, the first row of the input that has a
    twin, so reading from the top finds it first."""
    df = _scores(["m"])
    a, b = df.iloc[[0]], df.iloc[[1]]
    bad = pd.concat([a, b, b, a, df.iloc[2:]], ignore_index=True)
    with pytest.raises(ValueError, match=r"^item '0' appears twice for perturbation 'typos' and metric 'm'$"):
        analyse(bad)


def test_a_metric_with_no_weight_does_not_count_even_without_a_p_value():
    """An expert weight of 0 leaves the metric out of the weighted HMP, whatever its p (here none, NaN)."""
    assert harmonic_mean_p({"a": 0.01, "b": math.nan}, {"a": 1.0, "b": 0.0}) == pytest.approx(0.01)
