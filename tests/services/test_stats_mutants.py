"""services.stats against values worked by hand or published, for what tests/services/test_stats.py leaves loose:
defaults, messages, per-document correlation, majority, the bootstrap internals (found by `make mutation`)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest

from services import stats
from services.stats import agreement, common

correlation = importlib.import_module("services.stats.correlation")  # the package exports functions of these names
classification = importlib.import_module("services.stats.classification")

NAN = float("nan")
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12 units, missing
# values; alpha = 0.743 (nominal), 0.815 (ordinal), 0.849 (interval), 0.797 (ratio).
K2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


# -- Krippendorff's alpha --------------------------------------------------------------------------------
@pytest.mark.parametrize("level", stats.LEVELS)
def test_alpha_matches_krippendorffs_published_example_at_every_level(level):
    res = stats.krippendorff_alpha(K2011, level, n_boot=0)
    assert round(res.alpha, 3) == PUBLISHED[level]
    assert (res.level, res.n_units, res.n_raters, res.n_pairable) == (level, 12, 4, 11)
    assert res.ci_low is None and res.ci_high is None and res.note is None


@pytest.mark.parametrize("level", stats.LEVELS)
def test_the_bootstrap_formula_with_every_unit_once_is_the_published_alpha(level):
    """The vectorised alpha the bootstrap uses (coincidences weighted by how often a unit is drawn), with each
    pairable unit once, is the published value: its distance for each level is Krippendorff's."""
    pairable = K2011[:, (~np.isnan(K2011)).sum(axis=0) >= 2]
    domain = np.unique(pairable[~np.isnan(pairable)])
    counts = (pairable.T[:, :, None] == domain[None, None, :]).sum(axis=1)
    per_unit = agreement._unit_coincidences(counts)
    got = agreement._weighted_alpha(per_unit, np.ones((1, counts.shape[0])), domain, level)
    assert round(float(got[0]), 3) == PUBLISHED[level]
    twice = agreement._weighted_alpha(per_unit, np.full((1, counts.shape[0]), 2.0), domain, level)
    assert twice[0] == pytest.approx(got[0], abs=0.02)  # every unit twice: nearly the same alpha


def test_the_alpha_interval_resamples_units_and_brackets_the_value():
    res = stats.krippendorff_alpha(K2011, "interval", n_boot=400, seed=5)
    assert res.ci_low < res.alpha < res.ci_high <= 1.0
    assert res.note is None  # 11 pairable units: no "rough" note
    again = stats.krippendorff_alpha(K2011, "interval", n_boot=400, seed=5)
    assert (again.ci_low, again.ci_high) == (res.ci_low, res.ci_high)
    assert stats.krippendorff_alpha(K2011, "interval", n_boot=400, seed=6).ci_low != res.ci_low
    narrow = stats.krippendorff_alpha(K2011, "interval", n_boot=400, seed=5, ci=0.5)
    assert res.ci_low < narrow.ci_low < narrow.ci_high < res.ci_high
    # the defaults: nominal, 1000 resamples, seed 0, 95%
    assert stats.krippendorff_alpha(K2011) == stats.krippendorff_alpha(K2011, "nominal", n_boot=1000, seed=0, ci=0.95)
    few = stats.krippendorff_alpha(K2011[:, :5], "interval", n_boot=50)
    assert few.note == "Only 5 pairable units: the interval is rough."


def test_alpha_reads_a_dataframe_and_turns_infinities_into_missing_values():
    df = pd.DataFrame(K2011)
    assert stats.krippendorff_alpha(df, "ordinal", n_boot=0).alpha == pytest.approx(0.815, abs=5e-4)
    with_inf = np.where(np.isnan(K2011), np.inf, K2011)
    assert stats.krippendorff_alpha(with_inf, "interval", n_boot=0).alpha == pytest.approx(0.849, abs=5e-4)


def test_alpha_messages_for_what_cannot_be_computed():
    one = stats.krippendorff_alpha([[1, 2, 3], [NAN, NAN, NAN]])
    assert one.alpha is None and one.n_raters == 1
    assert one.note == "Only one rater has given ratings: agreement needs at least two raters rating the same units."
    none = stats.krippendorff_alpha([[NAN, NAN], [NAN, NAN]])
    assert none.note.startswith("No rater has given ratings yet")
    single = stats.krippendorff_alpha([[1, NAN, 2], [2, 1, NAN], [NAN, NAN, NAN]])
    assert single.note == (
        "Only one unit rated by two or more raters: alpha needs at least 2 such units (units rated once do not count)."
    )
    assert stats.krippendorff_alpha([[1, NAN], [2, 1]]).note.startswith("Only one unit rated")
    zero = stats.krippendorff_alpha([[1, NAN], [NAN, 1]])
    assert zero.note.startswith("No unit is rated by two or more raters yet") and zero.n_pairable == 0
    same = stats.krippendorff_alpha([[3, 3], [3, 3]])
    assert same.note.startswith("Every rating of the pairable units is the same value (3): with no variation")
    assert (same.n_units, same.n_raters, same.n_pairable, same.level) == (2, 2, 2, "nominal")
    with pytest.raises(ValueError, match="^level must be one of nominal, ordinal, interval, ratio, got 'bogus'$"):
        stats.krippendorff_alpha(K2011, "bogus")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^reliability_data must be numbers"):
        stats.krippendorff_alpha([["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match="^reliability_data must be a 2-D raters x units matrix, got 1 dimension"):
        stats.krippendorff_alpha([1, 2, 3])
    with pytest.raises(ValueError, match="^ratio level needs values of 0 or more$"):
        stats.krippendorff_alpha([[-1, 2], [1, 2]], "ratio")
    assert stats.krippendorff_alpha([[0, 2], [1, 2]], "ratio", n_boot=0).alpha is not None


def test_alpha_from_long_defaults_names_and_messages():
    rows = [
        {"item": j, "worker": f"w{i}", "label": v}
        for i, row in enumerate(K2011)
        for j, v in enumerate(row)
        if not np.isnan(v)
    ]
    df = pd.DataFrame(rows)
    res = stats.alpha_from_long(df, "interval", unit="item", rater="worker", value="label", n_boot=0)
    assert round(res.alpha, 3) == 0.849 and (res.n_units, res.n_raters) == (12, 4)
    renamed = df.rename(columns={"item": "unit", "worker": "rater", "label": "value"})
    assert stats.alpha_from_long(renamed) == stats.krippendorff_alpha(K2011, "nominal", n_boot=1000, seed=0)
    assert stats.alpha_from_long(renamed, "interval", n_boot=20, seed=3, ci=0.8) == stats.krippendorff_alpha(
        K2011, "interval", n_boot=20, seed=3, ci=0.8
    )
    with pytest.raises(ValueError, match=r"^missing column\(s\): unit, value; need unit, rater, value$"):
        stats.alpha_from_long(df.rename(columns={"worker": "rater"}))


def test_alpha_from_long_codes_text_leaves_out_blanks_and_explains_bad_values():
    df = pd.DataFrame(
        {
            "unit": [1, 1, 1, 2, 2, 3, 3, 4, 4, 5],
            "rater": ["a", "b", "c", "a", "b", "a", "b", "a", "b", "a"],
            "value": ["yes", "  ", "no", "no", "no", "yes", None, "yes", "yes", "no"],
        }
    )
    coded = df.assign(value=df["value"].map({"yes": 1.0, "no": 0.0}))
    want = stats.alpha_from_long(coded, n_boot=0)
    assert want.n_units == 5 and want.n_pairable == 3
    got = stats.alpha_from_long(df, n_boot=0)  # blank and missing answers left out, the rest coded in order
    assert got.alpha == pytest.approx(want.alpha) and got.n_pairable == 3
    ordered = stats.alpha_from_long(df, "ordinal", value_order=["no", "yes"], n_boot=0)
    assert ordered.alpha == pytest.approx(stats.alpha_from_long(coded, "ordinal", n_boot=0).alpha)
    with pytest.raises(ValueError, match="^value\\(s\\) not in value_order: yes$"):
        stats.alpha_from_long(df, "ordinal", value_order=["no", "maybe"])
    with pytest.raises(ValueError, match="^interval level needs numeric values; got 'yes'$"):
        stats.alpha_from_long(df, "interval")
    with pytest.raises(ValueError, match=r"^ordinal level needs numeric values; got 'x' \(give value_order"):
        stats.alpha_from_long(df.assign(value=["x", "y", "z", "1", "2", "1", "2", "1", "2", "1"]), "ordinal")
    dup = pd.concat([coded, coded.iloc[[3]]])
    with pytest.raises(ValueError, match="^rater 'a' rated unit 2 more than once$"):
        stats.alpha_from_long(dup)


def test_slot_matrices():
    m = stats.slot_matrix([[1, 0], [1], [0, 0, 1]])
    np.testing.assert_array_equal(m, [[1, 1, 0], [0, NAN, 0], [NAN, NAN, 1]])
    b = stats.binary_slot_matrix(np.array([0, 3]), np.array([2, 3]))
    np.testing.assert_array_equal(b, [[0, 1], [0, 1], [NAN, 1]])


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ({"a": NAN, "b": 1}, 1),
        ({"a": None, "b": 0, "c": 0, "d": 1}, 0),
        ({"a": 1, "b": 1, "c": 0, "d": NAN, "e": NAN, "f": NAN}, 1),
        ({"a": NAN}, None),
        ({"a": 1}, 1),
        ({"a": 0, "b": 1, "c": 1, "d": 0, "e": 0}, 0),
        ({"a": 1.0, "b": 1.0, "c": 0}, 1.0),  # votes given as floats count too
    ],
)
def test_majority_skips_missing_votes(votes, expected):
    assert stats.majority(votes) == expected


# -- correlations --------------------------------------------------------------------------------------
def _pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    xc, yc = x - x.mean(), y - y.mean()
    return float((xc * yc).sum() / math.sqrt((xc * xc).sum() * (yc * yc).sum()))


def test_correlations_by_hand_and_their_defaults():
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 10]
    p = stats.correlation(x, y, n_boot=0)
    assert p.method == "pearson" and p.r == pytest.approx(_pearson(x, y)) and p.n == 5 and p.ci_low is None
    s = stats.correlation(x, y, "spearman", n_boot=0)
    assert s.r == pytest.approx(0.8)  # ranks 2 1 4 3 5: 1 - 6 * 4 / (5 * 24)
    k = stats.correlation(x, y, "kendall", n_boot=0)
    assert k.r == pytest.approx(0.6)  # 8 concordant, 2 discordant pairs of 10
    assert stats.correlation(x, y) == stats.correlation(x, y, "pearson", n_boot=1000, seed=0, ci=0.95)
    assert 0 < p.p < 1 and p.note is None


@pytest.mark.parametrize("method", stats.METHODS)
def test_bootstrap_of_a_monotone_relation(method):
    """y = x^3: every resample that varies is perfectly ordered, so Spearman's and Kendall's intervals are [1, 1],
    while Pearson's (not linear) reaches below 1."""
    x = np.arange(1.0, 13.0)
    res = stats.correlation(x, x**3, method, n_boot=200, seed=1)
    if method == "pearson":
        assert res.ci_low < 0.99 and res.ci_high <= 1.0
    else:
        assert res.ci_low == pytest.approx(1.0) and res.ci_high == pytest.approx(1.0)
    assert res.ci_low - 1e-12 <= res.r <= res.ci_high + 1e-12 and res.note is None


@pytest.mark.parametrize("method", stats.METHODS)
def test_bootstrap_interval_is_the_percentile_of_the_resampled_correlations(method):
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    res = stats.correlation(x, y, method, n_boot=100, seed=9, ci=0.9)
    idx = np.random.default_rng(9).integers(0, 40, size=(100, 40))
    fn = {"pearson": lambda a, b: _pearson(a, b), "spearman": None, "kendall": None}[method]
    from scipy import stats as sps

    if fn is None:
        fn = (
            (lambda a, b: sps.spearmanr(a, b).statistic)
            if method == "spearman"
            else lambda a, b: sps.kendalltau(a, b).statistic
        )
    boots = np.array([fn(x[i], y[i]) for i in idx])
    assert (res.ci_low, res.ci_high) == pytest.approx(tuple(np.percentile(boots, [5, 95])))


def test_rowwise_pearson_is_undefined_for_a_constant_row():
    out = correlation._rowwise_pearson(
        np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]]), np.array([[1.0, 3.0, 2.0], [1, 2, 3]])
    )
    assert out[0] == pytest.approx(0.5) and np.isnan(out[1])
    tiny = correlation._rowwise_pearson(np.array([[0.0, 1e-3, 2e-3]]), np.array([[0.0, 1e-3, 2e-3]]))
    assert tiny[0] == pytest.approx(1.0)  # small but varying: defined


def test_kendall_bootstrap_skips_constant_resamples():
    x, y = np.array([1.0, 1.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0])
    boots = correlation._boot_correlations(x, y, "kendall", 200, 0)
    idx = np.random.default_rng(0).integers(0, 4, size=(200, 4))
    constant = np.array([np.ptp(x[i]) == 0 or np.ptp(y[i]) == 0 for i in idx])
    assert np.isnan(boots[constant]).all() and np.isfinite(boots[~constant]).all()
    res = stats.correlation(x, y, "kendall", n_boot=200, seed=0)
    skipped = int(constant.sum())
    assert res.note == (
        f"{skipped} of 200 bootstrap resamples had a constant side and were skipped; read the interval with care."
    )


def test_correlation_messages():
    assert (
        stats.correlation([1, 2], [1, 2]).note
        == "Need at least 3 pairs with both values to compute a correlation; got 2."
    )
    short = stats.correlation([1, 2, NAN], [1, 2, 3])
    assert (
        short.note
        == "Need at least 3 pairs with both values to compute a correlation; got 2 (1 left out for missing values)."
    )
    const = stats.correlation([1, 2, 3], [4, 4, 4])
    assert const.note == "All y values are the same (4): a correlation is undefined when one side does not vary."
    assert stats.correlation([5, 5, 5], [1, 2, 3]).note.startswith("All x values are the same (5)")
    with pytest.raises(ValueError, match="^method must be one of pearson, spearman, kendall, got 'r'$"):
        stats.correlation([1, 2, 3], [1, 2, 3], "r")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^x and y must have the same length \(3 != 2\)$"):
        stats.correlation([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="^x must be numbers"):
        stats.correlation(["a", "b", "c"], [1, 2, 3])
    with pytest.raises(ValueError, match="^ci must be between 0 and 1, got 1.5$"):
        stats.correlation([1, 2, 3], [1, 2, 3], ci=1.5)
    with pytest.raises(ValueError, match="^n_boot must be 0 or more, got -1$"):
        stats.correlation([1, 2, 3], [1, 2, 3], n_boot=-1)
    # a seed whose one resample misses the only 2 among x: no resample varies
    seed = next(s for s in range(100) if 3 not in np.random.default_rng(s).integers(0, 4, size=(1, 4)))
    one = stats.correlation([1, 1, 1, 2], [1, 2, 3, 4], n_boot=1, seed=seed)
    assert one.ci_low is None and one.note == "No bootstrap resample varied on both sides: no interval."


def test_per_document_correlation_averages_the_documents_that_vary():
    """Zhong et al. (2022): correlate within each document, then average; a document with one item or a constant
    side is skipped, and pairs with a missing value are left out first."""
    x = [1, 2, 3, 1, 2, 3, 4, 5, 5, 9, 1, 2, 3]
    y = [1, 2, 10, 4, 3, 2, 1, 7, 8, 1, 1, NAN, 3]
    g = ["a", "a", "a", "b", "b", "b", "b", "c", "c", "d", "e", "e", "e"]
    s = stats.per_group_correlation(x, y, g)
    # a: ranks agree (1); b: reversed (-1); c: x constant, skipped; d: one item, skipped; e: two pairs agree (1)
    assert s.method == "spearman" and s.r == pytest.approx(1 / 3)
    assert (s.n_groups, s.n_skipped, s.n_items) == (3, 2, 12) and s.note is None
    p = stats.per_group_correlation(x, y, g, "pearson")
    assert p.r == pytest.approx((_pearson([1, 2, 3], [1, 2, 10]) - 1 + 1) / 3)
    assert stats.per_group_correlation(x, y, g, "kendall").r == pytest.approx(1 / 3)
    none = stats.per_group_correlation([1, 2], [3, 3], ["a", "a"])
    assert none.r is None and none.note == (
        "No document has two or more items that vary on both sides: no per-document correlation."
    )
    with pytest.raises(ValueError, match="^method must be one of pearson, spearman, kendall, got 'r'$"):
        stats.per_group_correlation(x, y, g, "r")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^x must be numbers"):
        stats.per_group_correlation(["a"], [1], ["g"])
    with pytest.raises(ValueError, match="^y must be numbers"):
        stats.per_group_correlation([1], ["a"], ["g"])
    # group keys are compared as they are: 1 and "1" are two documents
    mixed = stats.per_group_correlation([1, 2, 3, 1, 2, 3], [1, 2, 3, 3, 2, 1], [1, 1, 1, "1", "1", "1"])
    assert mixed.n_groups == 2 and mixed.r == pytest.approx(0.0)
    with pytest.raises(ValueError, match="^x, y and groups must have the same length$"):
        stats.per_group_correlation(x, y, g[:-1])


# -- classification ---------------------------------------------------------------------------------------
def _delong_by_definition(pos, neg):
    """DeLong et al. (1988) written out with the m x n matrix of psi: the reference for the fast form."""
    pos, neg = np.asarray(pos, float), np.asarray(neg, float)
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    s10 = v10.var(ddof=1) if pos.size > 1 else 0.0
    s01 = v01.var(ddof=1) if neg.size > 1 else 0.0
    return psi.mean(), s10 / pos.size + s01 / neg.size


def test_auroc_defaults_messages_and_delongs_interval():
    scores, labels = [0.9, 0.8, 0.4, 0.6, 0.3, 0.2], [1, 1, 1, 0, 0, 0]
    res = stats.auroc(scores, labels)
    assert res.auc == pytest.approx(8 / 9) and (res.n_pos, res.n_neg) == (3, 3)
    assert res == stats.auroc(scores, labels, n_boot=1000, seed=0, ci=0.95)
    assert (
        stats.auroc(scores, labels, n_boot=0).ci_low is None
        and stats.auroc(scores, labels, n_boot=1).ci_low is not None
    )
    # AUC 8/9: V10 = (1, 1, 2/3), V01 = (2/3, 1, 1), so var = 2 * (1/27) / 3 and the interval is cut at 1
    auc, var = _delong_by_definition([0.9, 0.8, 0.4], [0.6, 0.3, 0.2])
    assert var == pytest.approx(2 / 81)
    assert res.ci_low == pytest.approx(8 / 9 - 1.959963984540054 * np.sqrt(2 / 81)) and res.ci_high == 1.0
    narrow = stats.auroc(scores, labels, ci=0.5)
    assert narrow.ci_low == pytest.approx(8 / 9 - 0.6744897501960817 * np.sqrt(2 / 81))
    with pytest.raises(ValueError, match="^scores must be numbers"):
        stats.auroc(["a"], [1])
    assert stats.auroc([0.5, 0.5], [1, 0], n_boot=0).auc == 0.5  # a tie counts a half
    one = stats.auroc([0.1, 0.2], [1, 1])
    assert (
        one.auc is None
        and one.note == "AUROC needs both classes (0 and 1) among the labels; there are only positive (1) labels."
    )
    assert stats.auroc([0.1], [0]).note.endswith("there are only negative (0) labels.")
    assert stats.auroc([], []).note.endswith("there are no items.")
    with pytest.raises(ValueError, match=r"^scores and labels must have the same length \(2 != 1\)$"):
        stats.auroc([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="^labels must be 0 or 1 \\(or NaN for missing\\), got 2$"):
        stats.auroc([0.1, 0.2], [1, 2])


@pytest.mark.parametrize("seed", range(6))
def test_fast_delong_equals_the_definition(seed):
    """Sun & Xu's midrank form against the m x n definition, ties included, one-item classes included."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 30)), int(rng.integers(1, 30))
    pos, neg = rng.integers(0, 6, m) / 5.0 + 0.1, rng.integers(0, 6, n) / 5.0  # many ties
    assert classification.delong(pos, neg) == pytest.approx(_delong_by_definition(pos, neg))
    res = stats.auroc(np.concatenate([pos, neg]), np.r_[np.ones(m), np.zeros(n)], ci=0.9)
    auc, var = _delong_by_definition(pos, neg)
    half = 1.6448536269514722 * np.sqrt(var)
    assert (res.ci_low, res.ci_high) == pytest.approx((max(0.0, auc - half), min(1.0, auc + half)))


def test_classification_counts_messages_and_both_positive_classes():
    c = stats.classification([0.2, 0.9, NAN, 0.7, 0.1], [0, 1, 1, 0, 1], 0.5)
    assert (c.positive, c.n, c.threshold) == (0, 4, 0.5)
    # positive = 0 (inconsistent): predicted 0 for 0.2 (label 0: tp) and 0.1 (label 1: fp); 0.7 label 0: fn
    assert (c.tp, c.fp, c.fn, c.tn) == (1, 1, 1, 1)
    assert c.precision == 0.5 and c.recall == 0.5 and c.f1 == 0.5 and c.balanced_accuracy == 0.5 and c.note is None
    assert stats.classification([], [], 0.5).note == "No item has both a score and a label."
    with pytest.raises(ValueError, match="^scores must be numbers"):
        stats.classification(["a"], [1], 0.5)
    with pytest.raises(ValueError, match="^positive must be 0 or 1, got 2$"):
        stats.classification([1.0], [1], 0.5, positive=2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^scores and labels must have the same length \(1 != 2\)$"):
        stats.classification([1.0], [1, 0], 0.5)


def test_balanced_accuracy_interval_defaults_and_the_half_rule():
    scores, labels = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0], [1, 0, 1, 1, 0, 0, 1, 0]
    got = stats.balanced_accuracy_interval(scores, labels, 0.5)
    assert got == stats.balanced_accuracy_interval(scores, labels, 0.5, n_boot=1000, seed=0, ci=0.95)
    idx = np.random.default_rng(0).integers(0, 8, size=(1000, 8))
    s, lab = np.array(scores), np.array(labels)
    boots = [stats.classification(s[i], lab[i], 0.5).balanced_accuracy for i in idx]
    assert got == pytest.approx(tuple(np.percentile([b for b in boots if b is not None], [2.5, 97.5])))

    # one item of each class: a resample has both about half the time; fewer than half usable -> no interval
    def usable(seed: int) -> int:
        return sum(len(set(i)) == 2 for i in np.random.default_rng(seed).integers(0, 2, size=(4, 2)))

    few = next(s for s in range(100) if usable(s) == 1)
    enough = next(s for s in range(100) if usable(s) == 2)
    assert stats.balanced_accuracy_interval([1.0, 0.0], [1, 0], 0.5, n_boot=4, seed=few) == (None, None)
    assert stats.balanced_accuracy_interval([1.0, 0.0], [1, 0], 0.5, n_boot=4, seed=enough) == (1.0, 1.0)
    with pytest.raises(ValueError, match="^ci must be between 0 and 1"):
        stats.balanced_accuracy_interval(scores, labels, 0.5, ci=0.0)


def test_percentile_interval_and_input_checks():
    assert common.percentile_ci(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    assert common.percentile_ci(np.array([NAN, 1.0, 3.0]), 0.5) == (1.5, 2.5)
    assert common.percentile_ci(np.array([NAN]), 0.9) == (None, None)
    common.check_ci(0.5, 0)
    with pytest.raises(ValueError):
        common.check_ci(0.0, 10)
    assert np.isnan(common.as_labels([1, NAN, 0])[1])
    with pytest.raises(ValueError, match="^votes must be 0 or 1 \\(or NaN for missing\\), got 0.5$"):
        common.as_labels([0.5], "votes")


def _reference_boot_alpha(data: np.ndarray, level: str, n_boot: int, seed: int, ci: float) -> tuple[float, float]:
    """The bootstrap over pairable units done the slow way: each resample's columns handed to the package."""
    import krippendorff

    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    n = pairable.shape[1]
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=n_boot)
    boots = []
    for w in weights:
        cols = np.repeat(np.arange(n), w)
        sample = pairable[:, cols]
        if np.unique(sample[~np.isnan(sample)]).size < 2:
            continue
        domain = np.unique(pairable[~np.isnan(pairable)])
        boots.append(krippendorff.alpha(sample, level_of_measurement=level, value_domain=domain))
    tail = (1 - ci) / 2 * 100
    return tuple(np.percentile(boots, [tail, 100 - tail]))


@pytest.mark.parametrize("level", stats.LEVELS)
def test_the_alpha_interval_equals_the_bootstrap_done_the_slow_way(level):
    """Each resample's alpha, from the package, at the level asked for; values in [0, 1] (a distance below 1)
    and a 0 in the domain (the ratio distance's 0/0) included."""
    data = np.array(
        [
            [0.0, 0.25, 0.5, 1.0, 0.75, 0.0, 0.5],
            [0.0, 0.5, 0.5, 0.75, 1.0, 0.25, NAN],
            [0.25, 0.25, NAN, 1.0, 0.75, 0.0, 0.5],
        ]
    )
    res = stats.krippendorff_alpha(data, level, n_boot=60, seed=4, ci=0.9)
    assert (res.ci_low, res.ci_high) == pytest.approx(_reference_boot_alpha(data, level, 60, 4, 0.9))
    doubled = agreement._weighted_alpha(
        agreement._unit_coincidences((data.T[:, :, None] == np.unique(data[~np.isnan(data)])).sum(axis=1)),
        np.array([np.ones(7), np.full(7, 2.0)]),
        np.unique(data[~np.isnan(data)]),
        level,
    )
    import krippendorff

    twice = krippendorff.alpha(np.concatenate([data, data], axis=1), level_of_measurement=level)
    assert doubled[1] == pytest.approx(twice)  # the second row of weights: every unit twice
