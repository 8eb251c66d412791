"""The notes and errors of the correlation functions, word for word: users read them beside each figure."""

from __future__ import annotations

import numpy as np
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
