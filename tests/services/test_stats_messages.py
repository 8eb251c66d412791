"""The notes and errors of the correlation functions, word for word: users read them beside each figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from services import stats


def test_too_few_pairs_says_how_many_and_how_many_were_left_out():
    res = stats.correlation([1.0, 2.0, np.nan], [1.0, 3.0, 2.0])
    assert res.r is None and res.n == 2
    assert (
        res.note
        == "Need at least 3 pairs with both values to compute a correlation; got 2 (1 left out for missing values)."
    )
    assert stats.correlation([1.0, 2.0], [1.0, 3.0]).note == (
        "Need at least 3 pairs with both values to compute a correlation; got 2."
    )


def test_a_side_that_does_not_vary_is_named_with_its_value():
    res = stats.correlation([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    assert res.r is None and res.n == 3
    assert res.note == "All x values are the same (2): a correlation is undefined when one side does not vary."
    assert stats.correlation([1.0, 2.0, 3.0], [0.5] * 3).note.startswith("All y values are the same (0.5)")


def test_an_unknown_method_is_named_with_the_methods_there_are():
    with pytest.raises(ValueError, match=r"^method must be one of pearson, spearman, kendall, got 'cosine'$"):
        stats.correlation([1, 2, 3], [1, 2, 3], "cosine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^method must be one of pearson, spearman, kendall, got 'cosine'$"):
        stats.per_group_correlation([1, 2, 3], [1, 2, 3], [0, 0, 0], "cosine")  # type: ignore[arg-type]


def test_many_constant_resamples_are_counted_in_the_note():
    """Three pairs, one of them different: many resamples repeat one x value and have no r."""
    res = stats.correlation([0.0, 0.0, 1.0], [0.0, 1.0, 1.0], n_boot=200, seed=0)
    assert res.r is not None and res.ci_low is not None
    n_bad = int(res.note.split(" of ")[0])
    assert n_bad > 20
    assert res.note == (
        f"{n_bad} of 200 bootstrap resamples had a constant side and were skipped; read the interval with care."
    )


def test_per_document_correlation_counts_documents_used_and_skipped():
    """Document a varies on both sides (r = 1), b has one item, c has a constant y: a counts, b and c do not."""
    x = [1.0, 2.0, 3.0, 5.0, 1.0, 2.0, np.nan]
    y = [2.0, 4.0, 6.0, 1.0, 3.0, 3.0, 1.0]
    g = ["a", "a", "a", "b", "c", "c", "a"]
    res = stats.per_group_correlation(x, y, g, "pearson")
    assert (res.r, res.n_groups, res.n_skipped, res.n_items, res.note) == (pytest.approx(1.0), 1, 2, 6, None)
    none = stats.per_group_correlation([1.0, 2.0], [1.0, 1.0], ["a", "a"])
    assert none.r is None and none.note == (
        "No document has two or more items that vary on both sides: no per-document correlation."
    )
    with pytest.raises(ValueError, match=r"^x, y and groups must have the same length$"):
        stats.per_group_correlation([1.0], [1.0], ["a", "b"])


def test_alpha_says_why_it_is_undefined_word_for_word():
    none = stats.krippendorff_alpha([[np.nan, np.nan], [np.nan, np.nan]], "nominal", n_boot=0)
    assert none.alpha is None and none.note == (
        "No rater has given ratings yet: agreement needs at least two raters rating the same units."
    )
    one = stats.krippendorff_alpha([[1.0, 2.0], [np.nan, np.nan]], "nominal", n_boot=0)
    assert (one.n_raters, one.note) == (
        1,
        "Only one rater has given ratings: agreement needs at least two raters rating the same units.",
    )
    no_pair = stats.krippendorff_alpha([[1.0, np.nan], [np.nan, 2.0]], "nominal", n_boot=0)
    assert no_pair.note == (
        "No unit is rated by two or more raters yet: alpha needs at least 2 such units (units rated once do not count)."
    )
    one_pair = stats.krippendorff_alpha([[1.0, 2.0, np.nan], [1.0, np.nan, 3.0]], "nominal", n_boot=0)
    assert (one_pair.n_pairable, one_pair.n_units) == (1, 3)
    assert one_pair.note == (
        "Only one unit rated by two or more raters: alpha needs at least 2 such units (units rated once do not count)."
    )
    same = stats.krippendorff_alpha([[2.0, 2.0], [2.0, 2.0]], "interval", n_boot=0)
    assert same.note.startswith("Every rating of the pairable units is the same value (2): with no variation")


def test_bad_input_to_alpha_is_named():
    with pytest.raises(ValueError, match=r"^level must be one of nominal, ordinal, interval, ratio, got 'loud'$"):
        stats.krippendorff_alpha([[1.0, 2.0], [1.0, 2.0]], "loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^reliability_data must be a 2-D raters x units matrix, got 1 dimension"):
        stats.krippendorff_alpha([1.0, 2.0], "nominal")
    with pytest.raises(ValueError, match=r"^reliability_data must be numbers \(NaN for missing\)"):
        stats.krippendorff_alpha([["a", "b"], ["a", "b"]], "nominal")
    with pytest.raises(ValueError, match=r"^ratio level needs values of 0 or more$"):
        stats.krippendorff_alpha([[-1.0, 2.0], [-1.0, 3.0]], "ratio", n_boot=0)
    with pytest.raises(ValueError, match=r"^ci must be between 0 and 1, got 1\.5$"):
        stats.krippendorff_alpha([[1.0, 2.0], [1.0, 2.0]], "nominal", ci=1.5)
    with pytest.raises(ValueError, match=r"^n_boot must be 0 or more, got -1$"):
        stats.krippendorff_alpha([[1.0, 2.0], [1.0, 2.0]], "nominal", n_boot=-1)


def test_a_rough_interval_says_how_few_units_it_rests_on():
    data = [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 4.0, 4.0]]
    res = stats.krippendorff_alpha(data, "interval", n_boot=50)
    assert res.note == "Only 4 pairable units: the interval is rough."
    many = np.tile(np.array(data), 3)  # 12 pairable units
    assert stats.krippendorff_alpha(many, "interval", n_boot=50).note is None


def test_alpha_from_long_rows_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"^missing column\(s\): rater; need unit, rater, value$"):
        stats.alpha_from_long(pd.DataFrame({"unit": [1], "value": [1]}))
    twice = pd.DataFrame({"unit": [1, 1, 2], "rater": ["ann", "ann", "bo"], "value": [1, 2, 1]})
    with pytest.raises(ValueError, match=r"^rater 'ann' rated unit 1 more than once$"):
        stats.alpha_from_long(twice)
    words = pd.DataFrame({"unit": [1, 1], "rater": ["ann", "bo"], "value": ["good", "bad"]})
    with pytest.raises(ValueError, match=r"^interval level needs numeric values; got 'good'$"):
        stats.alpha_from_long(words, "interval")
    with pytest.raises(ValueError, match=r"^ordinal level needs numeric values; got 'good' \(give value_order"):
        stats.alpha_from_long(words, "ordinal")
    with pytest.raises(ValueError, match=r"^value\(s\) not in value_order: bad$"):
        stats.alpha_from_long(words, "ordinal", value_order=["good"])
