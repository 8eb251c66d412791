"""DHP (paper 004, section 4.3): the Wilcoxon test, the p-value combinations and the discernment scores, by hand.

Expected values are worked here from the paper's definitions: the exact one-sided signed-rank distribution
(a count of subsets of ranks), 1 / sum_j (EW_j / p_j), D = log_0.05(p), and D_avg's equal level weights.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from services.dhp import statistics as st

ORIGINAL = [10.0] * 10
ALL_LOWER = [10.0 - d for d in range(1, 11)]  # differences 1..10, all positive
ONE_HIGHER = [10.0 - d for d in range(1, 10)] + [20.0]  # differences 1..9 and -10


def _log05(p: float) -> float:
    return math.log(p) / math.log(0.05)


def test_section_4_3_1_wilcoxon_is_one_sided_original_greater_exact_p_by_hand():
    """Section 4.3.1: "we adopt a one-sided alternative hypothesis ... that {S0} has a greater distribution than
    {Si}". Ten differences 1..9 and -10: W+ = 45; P(W+ >= 45) is the share of the 2^10 sign patterns with a
    positive-rank sum of 45 or more, = those with a negative sum of 10 or less: 43 / 1024. Two-sided would be
    86 / 1024; the other direction 1 - 42 / 1024."""
    res = st.wilcoxon_greater(ORIGINAL, ONE_HIGHER, metric="Fluency")
    assert res.statistic == 45.0 and res.p_value == pytest.approx(43 / 1024)
    assert res.n_pairs == 10 and res.n_ties == 0 and res.n_missing == 0 and res.metric == "Fluency"
    assert res.mean_original == 10.0 and res.mean_perturbed == pytest.approx(sum(ONE_HIGHER) / 10)
    every = st.wilcoxon_greater(ORIGINAL, ALL_LOWER)
    assert every.statistic == 55.0 and every.p_value == pytest.approx(1 / 1024)  # only one pattern has W+ = 55
    reverse = st.wilcoxon_greater(ALL_LOWER, ORIGINAL)
    assert reverse.p_value == pytest.approx(1.0)  # perturbed higher everywhere: no evidence at all


def test_section_4_3_1_zero_differences_are_dropped_and_missing_pairs_left_out():
    """A pair scored the same carries no sign (scipy's default zero_method, the paper's scipy call): two tied
    pairs leave the exact p of the ten others. A pair without a score is left out and counted; all pairs tied
    is no evidence (p = 1)."""
    res = st.wilcoxon_greater([*ORIGINAL, 3.0, 4.0, float("nan")], [*ALL_LOWER, 3.0, 4.0, 2.0])
    assert res.n_ties == 2 and res.n_pairs == 12 and res.n_missing == 1
    assert res.p_value == pytest.approx(1 / 1024) and res.zero_method == "wilcox"
    tied = st.wilcoxon_greater([3.0, 4.0, 5.0], [3.0, 4.0, 5.0])
    assert tied.p_value == 1.0 and tied.statistic is None and tied.n_ties == 3
    empty = st.wilcoxon_greater([float("nan")], [1.0])
    assert empty.p_value == 1.0 and empty.n_pairs == 0 and empty.mean_original is None
    assert (
        st.wilcoxon_greater([2.0], [1.0]).p_value == pytest.approx(0.5)
        and st.wilcoxon_greater([2.0], [1.0]).metric == ""
    )  # one pair: W+ = 1 half the time
    assert st.wilcoxon_greater([2.0, 3.0], [1.0, 3.0], zero_method="pratt").zero_method == "pratt"
    with pytest.raises(ValueError, match="differ in length"):
        st.wilcoxon_greater([1.0, 2.0], [1.0])


def test_section_4_3_2_expert_weights_worked_example_and_p_ew():
    """Section 4.3.2: votes 4, 1, 5 for coherence, consistency, fluency give EW = [0.4, 0.1, 0.5]; then
    p_EW = 1 / sum_j (EW_j / p_j). With p = 0.01, 0.2, 0.5: 1 / (40 + 0.5 + 1) = 1 / 41.5."""
    metrics = ["Coherence", "Consistency", "Fluency"]
    w = st.normalise_weights({"Coherence": 4, "Consistency": 1, "Fluency": 5}, metrics)
    assert w == pytest.approx({"Coherence": 0.4, "Consistency": 0.1, "Fluency": 0.5})
    ps = {"Coherence": 0.01, "Consistency": 0.2, "Fluency": 0.5}
    assert st.harmonic_mean_p(ps, {"Coherence": 4, "Consistency": 1, "Fluency": 5}) == pytest.approx(1 / 41.5)
    assert st.harmonic_mean_p(ps, w) == pytest.approx(1 / 41.5)
    # a metric the experts never picked has weight 0 and does not count
    assert st.harmonic_mean_p(ps, {"Fluency": 1}) == pytest.approx(0.5)
    assert st.normalise_weights({"Fluency": 2}, metrics) == {"Coherence": 0.0, "Consistency": 0.0, "Fluency": 1.0}
    assert st.normalise_weights({"Other": 1}, metrics) is None and st.harmonic_mean_p(ps, {"Other": 1}) is None
    assert st.normalise_weights(None, metrics) == pytest.approx(dict.fromkeys(metrics, 1 / 3))
    assert st.normalise_weights(None, []) is None
    with pytest.raises(ValueError, match="^expert weights must be finite and 0 or more$"):
        st.normalise_weights({"Fluency": -1}, metrics)


def test_section_4_3_2_the_printed_unweighted_combination():
    """Section 4.3.2 prints p = 1 / sum_j (1 / p_j): with p = 0.01, 0.2, 0.5 that is 1 / (100 + 5 + 2) = 1 / 107."""
    assert st.paper_literal_p({"a": 0.01, "b": 0.2, "c": 0.5}) == pytest.approx(1 / 107)
    assert st.paper_literal_p({"a": 0.04}) == pytest.approx(0.04)
    assert st.paper_literal_p({}) is None


def test_section_4_3_3_discernment_is_log_base_0_05():
    """Section 4.3.3: D = log_0.05(p): 1 at p = 0.05, 2 at p = 0.0025, 0 at p = 1; higher is better."""
    assert st.discernment(0.05) == pytest.approx(1.0)
    assert st.discernment(0.0025) == pytest.approx(2.0)
    assert st.discernment(1.0) == 0.0 and math.copysign(1, st.discernment(1.0)) == 1.0
    assert st.discernment(43 / 1024) == pytest.approx(_log05(43 / 1024))
    assert st.discernment(None) is None
    assert math.isfinite(st.discernment(0.0))  # an underflowed p stays finite


def _frame(spec: dict[str, tuple[str, list[float]]], metric: str = "Fluency") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"item_id": f"i{i}", "perturbation": pert, "level": level, "metric": metric, "original": o, "perturbed": p}
            for pert, (level, perturbed) in spec.items()
            for i, (o, p) in enumerate(zip(ORIGINAL, perturbed, strict=True))
        ]
    )


def test_section_4_3_3_d_avg_weighs_levels_equally_with_several_perturbations_a_level():
    """Section 4.3.3: "We assign equal weights to perturbations within the same level and make sure that the sum
    of the weights is the same for each level." Two character-level perturbations share the character third:
    D_avg = (D_c1 + D_c2) / 6 + D_w / 3 + D_s / 3, not the plain mean. One metric: p is its Wilcoxon p."""
    df = _frame(
        {
            "typo:minor": ("character", ALL_LOWER),
            "char_deletion:minor": ("character", ONE_HIGHER),
            "grammar:minor": ("word", ORIGINAL),
            "reorder:major": ("sentence", ONE_HIGHER),
        }
    )
    res = st.analyse(df, model="m")
    d = {r.perturbation: r.d for r in res.perturbations}
    assert d["typo:minor"] == pytest.approx(_log05(1 / 1024))
    assert d["char_deletion:minor"] == pytest.approx(_log05(43 / 1024))
    assert d["grammar:minor"] == 0.0  # every pair tied: p = 1
    want = (d["typo:minor"] + d["char_deletion:minor"]) / 6 + d["grammar:minor"] / 3 + d["reorder:major"] / 3
    assert res.d_avg == pytest.approx(want)
    assert res.d_avg != pytest.approx(sum(d.values()) / 4)
    assert res.d_min == 0.0 and res.model == "m"
    assert res.level_weights == pytest.approx(
        {"typo:minor": 1 / 6, "char_deletion:minor": 1 / 6, "grammar:minor": 1 / 3, "reorder:major": 1 / 3}
    )
    assert [r.perturbation for r in res.perturbations] == list(d)  # in the order first seen
    assert res.d_ew_avg is None and res.d_ew_min is None  # no expert weights given


def test_section_4_3_3_the_note_names_the_levels_a_set_lacks():
    expected = {"typo:minor": "character", "grammar:minor": "word", "reorder:major": "sentence"}
    res = st.analyse(_frame({"reorder:major": ("sentence", ALL_LOWER)}), expected=expected)
    assert res.d_avg is None and res.avg_note == (
        "not comparable: the set has no character, word-level perturbation of the task's Table 1 row, and D_avg "
        "weighs each level equally, so it is left empty (D_min and each D stand)"
    )
    some = st.analyse(
        _frame(
            {
                "typo:minor": ("character", ALL_LOWER),
                "grammar:minor": ("word", ALL_LOWER),
                "reorder:major": ("sentence", ALL_LOWER),
                "shuffle": ("sentence", ALL_LOWER),
            }
        ),
        expected={**expected, "swap": "word"},
    )
    assert some.d_avg is not None
    assert some.avg_note == "every level is present, but without swap: each level's mean is over the rest"


def test_level_weights_sum_to_one_with_each_level_a_third():
    w = st.level_weights({"a": "character", "b": "character", "c": "character", "d": "word", "e": "sentence"})
    assert w == pytest.approx({"a": 1 / 9, "b": 1 / 9, "c": 1 / 9, "d": 1 / 3, "e": 1 / 3})
    assert sum(w.values()) == pytest.approx(1.0)
    assert st.level_weights({}) == {}


def test_section_4_3_3_d_ew_uses_the_perturbations_expert_weights():
    """D_EW = log_0.05(p_EW) per perturbation, with the weights of its kind ("typo" for "typo:minor"), and
    D_EW_avg / D_EW_min over perturbations like D. Worked: Fluency p = 1/1024, Coherence p = 43/1024."""
    rows = pd.concat(
        [
            _frame({"typo:minor": ("character", ALL_LOWER)}, "Fluency"),
            _frame({"typo:minor": ("character", ONE_HIGHER)}, "Coherence"),
            _frame({"reorder:major": ("sentence", ALL_LOWER)}, "Fluency"),
            _frame({"reorder:major": ("sentence", ONE_HIGHER)}, "Coherence"),
        ]
    )
    weights = {"typo": {"Fluency": 4, "Coherence": 1}, "reorder:major": {"Coherence": 1}}
    res = st.analyse(rows, weights=weights)
    by = {r.perturbation: r for r in res.perturbations}
    p_typo = 1 / (0.8 / (1 / 1024) + 0.2 / (43 / 1024))
    assert by["typo:minor"].p_ew == pytest.approx(p_typo)
    assert by["typo:minor"].d_ew == pytest.approx(_log05(p_typo))
    assert by["typo:minor"].weights == pytest.approx({"Fluency": 0.8, "Coherence": 0.2})
    assert by["reorder:major"].d_ew == pytest.approx(_log05(43 / 1024))
    assert res.d_ew_avg == pytest.approx((_log05(p_typo) + _log05(43 / 1024)) / 2)
    assert res.d_ew_min == pytest.approx(_log05(43 / 1024))
    assert by["typo:minor"].p_by_metric() == pytest.approx({"Fluency": 1 / 1024, "Coherence": 43 / 1024})
    # the printed unweighted p of each perturbation: 1 / (1024 + 1024 / 43)
    assert by["typo:minor"].p == pytest.approx(1 / (1024 + 1024 / 43))
    assert st.lookup_weights(weights, "typo:major") == weights["typo"]
    assert st.lookup_weights(weights, "reorder:major") == {"Coherence": 1}
    assert st.lookup_weights(None, "typo") is None


def test_analyse_rejects_bad_frames_with_a_message():
    df = _frame({"typo:minor": ("character", ALL_LOWER)})
    with pytest.raises(ValueError, match="missing column"):
        st.analyse(df.drop(columns=["level"]))
    with pytest.raises(ValueError, match="appears twice"):
        st.analyse(pd.concat([df, df.head(1)]))
    two_levels = df.copy()
    two_levels.loc[0, "level"] = "word"
    with pytest.raises(ValueError, match="^perturbation 'typo:minor' is given more than one level: word, character$"):
        st.analyse(two_levels)
    unreadable = df.astype({"original": object, "perturbed": object})
    unreadable.loc[0, "original"] = "n/a"
    unreadable.loc[1, "perturbed"] = "none"
    test = st.analyse(unreadable).perturbations[0].tests[0]
    assert test.n_missing == 2 and test.n_pairs == 8  # an unreadable score is a missing one


def test_analyse_reads_scores_given_as_text_and_keeps_an_order():
    df = _frame({"b": ("word", ALL_LOWER), "a": ("character", ONE_HIGHER)})
    df["original"] = df["original"].astype(str)
    res = st.analyse(df, order=["a"])
    assert [r.perturbation for r in res.perturbations] == ["a", "b"]
    assert res.perturbations[1].d == pytest.approx(_log05(1 / 1024))


def test_section_4_3_3_d_avg_is_a_weighted_average_over_the_perturbations_that_have_a_score():
    """Section 4.3.3: D_avg is "a weighted average across the perturbation levels". A perturbation without a
    score (no D_EW where it has no expert weights) is left out and the other weights renormalised, so the
    average stays between the scores it averages: 2 and 4 at weights 1/4 each give 3, not 0.75."""
    got = st._weighted_avg({"a": 2.0, "b": None, "c": 4.0}, {"a": 0.25, "b": 0.5, "c": 0.25})
    assert got == pytest.approx(3.0)
    assert st._weighted_avg({"a": 2.0, "c": 5.0}, {"a": 0.25, "c": 0.75}) == pytest.approx(0.5 + 3.75)
    assert st._weighted_avg({"a": None}, {"a": 1.0}) is None
