"""DHP results that once passed for "cannot change": missing scores given as None, the order of a
perturbation's metric tests, the duplicate error's row, and a metric an expert gave no weight."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats as sps

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


def test_a_missing_column_is_named_with_every_column_needed():
    with pytest.raises(ValueError) as err:
        analyse(_scores(["m"]).drop(columns=["level", "metric"]))
    assert str(err.value) == (
        "missing column(s): level, metric; need item_id, perturbation, level, metric, original, perturbed"
    )


def test_an_item_scored_twice_with_different_scores_is_an_error():
    """One score per item, perturbation and metric: a second row for the same three, even with other scores,
    is refused (not averaged, not tested twice)."""
    df = _scores(["m"])
    twice = pd.concat([df, df.iloc[[2]].assign(original=9.0)], ignore_index=True)
    with pytest.raises(ValueError, match="item '2' appears twice for perturbation 'typos' and metric 'm'"):
        analyse(twice)


def test_each_result_keeps_its_level_its_wilson_p_no_weights_unless_given_and_the_model():
    """A perturbation's result says its level (Table 1), its weighted HMP with equal weights (Wilson's,
    1 / sum_j (1/M) / p_j), no expert weights when none were given, and the model ('' unless named)."""
    res = analyse(_scores(["a", "b"]))
    (pr,) = res.perturbations
    assert pr.level == "fluency" and pr.weights is None and res.model == ""
    ps = [t.p_value for t in pr.tests]
    assert pr.p_wilson == pytest.approx(min(1.0, 1 / sum(0.5 / p for p in ps)))
    assert analyse(_scores(["a"]), model="judge").model == "judge"


def test_the_zero_method_chosen_is_the_one_used():
    """Pratt keeps zero differences in the ranking (scipy's zero_method='pratt'); the result says which."""
    df = _scores(["m"])
    df.loc[0, "perturbed"] = df.loc[0, "original"]  # one tie
    res = analyse(df, zero_method="pratt").perturbations[0].tests[0]
    a, b = df["original"].to_numpy(), df["perturbed"].to_numpy()
    assert res.zero_method == "pratt"
    pratt = sps.wilcoxon(a, b, alternative="greater", zero_method="pratt")
    assert (res.statistic, res.p_value) == (pytest.approx(pratt.statistic), pytest.approx(pratt.pvalue))
    assert res.statistic == 20.0  # the tie takes rank 1, so the five positive differences have ranks 2 to 6


def test_no_pairs_have_no_means_and_all_ties_give_p_one_under_any_zero_method():
    empty = wilcoxon_greater([None, 1.0], [2.0, None])
    assert (empty.n_pairs, empty.mean_original, empty.mean_perturbed, empty.p_value) == (0, None, None, 1.0)
    for zm in ("wilcox", "pratt", "zsplit"):
        tied = wilcoxon_greater([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], zero_method=zm)
        assert (tied.statistic, tied.p_value, tied.n_ties) == (None, 1.0, 3)


def test_the_note_names_every_perturbation_the_set_lacks():
    expected = {"typos": "fluency", "swap": "fluency", "drop": "fluency"}
    note = analyse(_scores(["m"]), expected=expected).avg_note
    assert note == "every level is present, but without swap, drop: each level's mean is over the rest"
