"""Statistics for the meta-evaluation: correlations, AUROC, classification metrics, Krippendorff's alpha.

Every function takes plain arrays (or a DataFrame), an explicit seed for its bootstrap, and returns a frozen
dataclass. Degenerate data (too few pairs, a constant input, one class, one rater) never raise and never
return a bare NaN: the number is None and `note` says why in plain language. Programming errors (lists
of different lengths, an unknown method) raise ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as sps

Method = Literal["pearson", "spearman", "kendall"]
Level = Literal["nominal", "ordinal", "interval", "ratio"]
METHODS: tuple[str, ...] = ("pearson", "spearman", "kendall")
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

# Below this many pairable units alpha is not reported: one unit says nothing about chance agreement.
MIN_PAIRABLE_UNITS = 2


def _as_float(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers (use NaN for a missing value)") from None
    return arr


def _percentile_ci(samples: np.ndarray, ci: float) -> tuple[float | None, float | None]:
    """Percentile interval of the finite bootstrap replicates (degenerate resamples give NaN and are skipped)."""
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return None, None
    tail = (1.0 - ci) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def _check_ci(ci: float, n_boot: int) -> None:
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be 0 or more, got {n_boot}")


# -- correlation ------------------------------------------------------------------------------
@dataclass(frozen=True)
class CorrelationResult:
    method: str
    r: float | None
    p: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    note: str | None = None


def _rowwise_pearson(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair; NaN for a row where either side is constant."""
    xc = xb - xb.mean(axis=1, keepdims=True)
    yc = yb - yb.mean(axis=1, keepdims=True)
    num = (xc * yc).sum(axis=1)
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    out = np.full(num.shape, np.nan)
    # A resample made of one repeated value has (near) zero variance: its r is undefined, not 0.
    ok = den > 1e-12 * np.maximum(1.0, np.abs(num))
    out[ok] = num[ok] / den[ok]
    return np.clip(out, -1.0, 1.0)


def _boot_correlations(x: np.ndarray, y: np.ndarray, method: str, n_boot: int, seed: int) -> np.ndarray:
    n = x.size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    if method == "pearson":
        return _rowwise_pearson(x[idx], y[idx])
    if method == "spearman":
        # Spearman's rho is Pearson's r on average ranks (ties share their mean rank), row by row.
        return _rowwise_pearson(sps.rankdata(x[idx], axis=1), sps.rankdata(y[idx], axis=1))
    # Kendall's tau-b has no cheap row-wise form; scipy's O(n log n) routine in a loop is fast enough
    # (about 0.4 s for n=1000 and 1000 resamples).
    out = np.empty(n_boot)
    for b in range(n_boot):
        xb, yb = x[idx[b]], y[idx[b]]
        if np.ptp(xb) == 0 or np.ptp(yb) == 0:
            out[b] = np.nan
        else:
            out[b] = sps.kendalltau(xb, yb).statistic
    return out


def correlation(
    x: Sequence[float] | np.ndarray | pd.Series,
    y: Sequence[float] | np.ndarray | pd.Series,
    method: Method = "pearson",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> CorrelationResult:
    """Pearson, Spearman or Kendall (tau-b) correlation with a percentile bootstrap interval over pairs."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    _check_ci(ci, n_boot)
    xa, ya = _as_float(x, "x"), _as_float(y, "y")
    if xa.size != ya.size:
        raise ValueError(f"x and y must have the same length ({xa.size} != {ya.size})")
    # A pair with a missing (NaN) or infinite value on either side is left out; n counts the pairs used.
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    n = int(xa.size)
    dropped = int(keep.size - n)
    if n < 3:
        return CorrelationResult(
            method,
            None,
            None,
            n,
            note=f"Need at least 3 pairs with both values to compute a correlation; got {n}"
            + (f" ({dropped} left out for missing values)." if dropped else "."),
        )
    for name, arr in (("x", xa), ("y", ya)):
        if np.ptp(arr) == 0:
            return CorrelationResult(
                method,
                None,
                None,
                n,
                note=f"All {name} values are the same ({arr[0]:g}): a correlation is undefined when one side "
                "does not vary.",
            )
    if method == "pearson":
        res = sps.pearsonr(xa, ya)
    elif method == "spearman":
        res = sps.spearmanr(xa, ya)
    else:
        res = sps.kendalltau(xa, ya)  # variant="b" (the default) corrects for ties
    r, p = float(res.statistic), float(res.pvalue)
    ci_low = ci_high = None
    note = None
    if n_boot > 0:
        boots = _boot_correlations(xa, ya, method, n_boot, seed)
        ci_low, ci_high = _percentile_ci(boots, ci)
        n_bad = int(np.count_nonzero(~np.isfinite(boots)))
        if ci_low is None:
            note = "No bootstrap resample varied on both sides: no interval."
        elif n_bad > n_boot // 10:
            note = (
                f"{n_bad} of {n_boot} bootstrap resamples had a constant side and were skipped; "
                "read the interval with care."
            )
    return CorrelationResult(method, r, p if math.isfinite(p) else None, n, ci_low, ci_high, note)


# -- AUROC -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AurocResult:
    auc: float | None
    n_pos: int
    n_neg: int
    ci_low: float | None = None
    ci_high: float | None = None
    note: str | None = None


def _as_labels(labels, name: str = "labels") -> np.ndarray:
    arr = _as_float(labels, name)
    finite = arr[np.isfinite(arr)]
    bad = finite[(finite != 0) & (finite != 1)]
    if bad.size:
        raise ValueError(f"{name} must be 0 or 1 (or NaN for missing), got {bad[0]:g}")
    return arr


def _auc_from_ranks(ranks: np.ndarray, is_pos: np.ndarray, n_pos: int, n_neg: int) -> np.ndarray:
    """Mann-Whitney U / (n_pos * n_neg) on the last axis: P(score_pos > score_neg) + 0.5 P(tie)."""
    rank_sum = np.where(is_pos, ranks, 0.0).sum(axis=-1)
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def auroc(
    scores: Sequence[float] | np.ndarray | pd.Series,
    labels: Sequence[int] | np.ndarray | pd.Series,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> AurocResult:
    """Area under the ROC curve (label 1 = positive, higher score = more positive) with a stratified bootstrap.

    The AUC is the Mann-Whitney rank formula, so a tie between a positive and a negative counts 0.5. The
    interval is a *stratified* percentile bootstrap: positives and negatives are resampled separately, so
    every resample keeps n_pos and n_neg (and both classes). Pairs with a missing score or label are left out.
    """
    _check_ci(ci, n_boot)
    s, lab = _as_float(scores, "scores"), _as_labels(labels)
    if s.size != lab.size:
        raise ValueError(f"scores and labels must have the same length ({s.size} != {lab.size})")
    keep = np.isfinite(s) & np.isfinite(lab)
    s, lab = s[keep], lab[keep].astype(int)
    n_pos, n_neg = int((lab == 1).sum()), int((lab == 0).sum())
    if n_pos == 0 or n_neg == 0:
        present = "no items" if n_pos + n_neg == 0 else f"only {'positive (1)' if n_pos else 'negative (0)'} labels"
        return AurocResult(
            None, n_pos, n_neg, note=f"AUROC needs both classes (0 and 1) among the labels; there are {present}."
        )
    pos, neg = s[lab == 1], s[lab == 0]
    order_pos = np.ones(n_pos + n_neg, dtype=bool)
    order_pos[n_pos:] = False
    both = np.concatenate([pos, neg])
    auc = float(_auc_from_ranks(sps.rankdata(both), order_pos, n_pos, n_neg))
    ci_low = ci_high = None
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        pb = pos[rng.integers(0, n_pos, size=(n_boot, n_pos))]
        nb = neg[rng.integers(0, n_neg, size=(n_boot, n_neg))]
        ranks = sps.rankdata(np.concatenate([pb, nb], axis=1), axis=1)
        ci_low, ci_high = _percentile_ci(_auc_from_ranks(ranks, order_pos, n_pos, n_neg), ci)
    return AurocResult(auc, n_pos, n_neg, ci_low, ci_high)


# -- classification at a threshold -------------------------------------------------------------
@dataclass(frozen=True)
class ClassificationResult:
    threshold: float
    tp: int
    fp: int
    tn: int
    fn: int
    balanced_accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    n: int
    positive: int = 0
    note: str | None = None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def classification(
    scores: Sequence[float] | np.ndarray | pd.Series,
    labels: Sequence[int] | np.ndarray | pd.Series,
    threshold: float,
    *,
    positive: Literal[0, 1] = 0,
) -> ClassificationResult:
    """Confusion counts and metrics when a score >= threshold predicts "consistent" (1), else "inconsistent" (0).

    `positive` names the class that precision, recall, F1 and tp/fp/tn/fn are about. The DCR paper reads its
    Figure 3 with *consistent* as that class (positive=1, what services.metaeval passes): "higher recall and
    lower precision implies that more candidates are incorrectly marked as consistent". positive=0 makes
    inconsistency the class to find. Balanced accuracy (mean recall of both classes) does not depend on it.
    A ratio whose denominator is 0 is None; F1 is 2tp / (2tp + fp + fn), None only when that is 0/0.
    Items with a missing score or label are left out; n counts the items used.
    """
    if positive not in (0, 1):
        raise ValueError(f"positive must be 0 or 1, got {positive!r}")
    s, lab = _as_float(scores, "scores"), _as_labels(labels)
    if s.size != lab.size:
        raise ValueError(f"scores and labels must have the same length ({s.size} != {lab.size})")
    keep = np.isfinite(s) & np.isfinite(lab)
    s, lab = s[keep], lab[keep].astype(int)
    pred = (s >= threshold).astype(int)
    tp = int(((pred == positive) & (lab == positive)).sum())
    fp = int(((pred == positive) & (lab != positive)).sum())
    tn = int(((pred != positive) & (lab != positive)).sum())
    fn = int(((pred != positive) & (lab == positive)).sum())
    recall_pos, recall_neg = _ratio(tp, tp + fn), _ratio(tn, tn + fp)
    balanced = (recall_pos + recall_neg) / 2 if recall_pos is not None and recall_neg is not None else None
    note = None
    if s.size == 0:
        note = "No item has both a score and a label."
    elif balanced is None:
        note = "Only one class among the labels: balanced accuracy needs both."
    return ClassificationResult(
        threshold=float(threshold),
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        balanced_accuracy=balanced,
        precision=_ratio(tp, tp + fp),
        recall=recall_pos,
        f1=_ratio(2 * tp, 2 * tp + fp + fn),
        n=int(s.size),
        positive=positive,
        note=note,
    )


def balanced_accuracy_interval(
    scores: Sequence[float] | np.ndarray | pd.Series,
    labels: Sequence[int] | np.ndarray | pd.Series,
    threshold: float,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of `classification(...).balanced_accuracy`, resampling items.

    Resamples that lack a class have no balanced accuracy and are skipped; with fewer than half of the
    resamples usable, or without a value, there is no interval (None, None).
    """
    _check_ci(ci, n_boot)
    s, lab = _as_float(scores, "scores"), _as_labels(labels)
    keep = np.isfinite(s) & np.isfinite(lab)
    pred, lab = (s[keep] >= threshold).astype(int), lab[keep].astype(int)
    n = lab.size
    if n_boot == 0 or n == 0 or lab.min() == lab.max():
        return None, None
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    pb, lb = pred[idx], lab[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        rec1 = ((pb == 1) & (lb == 1)).sum(axis=1) / (lb == 1).sum(axis=1)
        rec0 = ((pb == 0) & (lb == 0)).sum(axis=1) / (lb == 0).sum(axis=1)
    boots = (rec1 + rec0) / 2
    if np.isfinite(boots).sum() < n_boot / 2:
        return None, None
    return _percentile_ci(boots, ci)


# -- Krippendorff's alpha ----------------------------------------------------------------------
@dataclass(frozen=True)
class AlphaResult:
    alpha: float | None
    level: str
    n_units: int
    n_raters: int
    n_pairable: int
    ci_low: float | None = None
    ci_high: float | None = None
    note: str | None = None


def _distance_matrices(domain: np.ndarray, n_v: np.ndarray, level: str) -> np.ndarray:
    """Squared distances delta^2(c, k) between domain values, shape (..., V, V) following n_v's leading axes."""
    v1, v2 = domain[:, None], domain[None, :]
    if level == "nominal":
        d = (v1 != v2).astype(float)
    elif level == "interval":
        d = (v1 - v2) ** 2
    elif level == "ratio":
        s = v1 + v2
        d = np.divide(v1 - v2, s, out=np.zeros(np.broadcast(v1, v2).shape), where=s != 0) ** 2
    else:  # ordinal: (sum of n_g for g from c to k, minus half of n_c and n_k) squared; depends on the margins
        cs = np.cumsum(n_v, axis=-1)
        before = cs - n_v  # sum of n_g for g < c
        lo_idx = np.minimum(np.arange(domain.size)[:, None], np.arange(domain.size)[None, :])
        hi_idx = np.maximum(np.arange(domain.size)[:, None], np.arange(domain.size)[None, :])
        between = cs[..., hi_idx] - before[..., lo_idx]
        return (between - (n_v[..., :, None] + n_v[..., None, :]) / 2.0) ** 2
    return np.broadcast_to(d, n_v.shape[:-1] + d.shape)


def _unit_coincidences(value_counts: np.ndarray) -> np.ndarray:
    """Each pairable unit's contribution to the coincidence matrix, shape (N, V, V)."""
    n_values = value_counts.shape[1]
    m = value_counts.sum(axis=1)
    pairs = value_counts[:, :, None] * value_counts[:, None, :] - value_counts[:, :, None] * np.eye(n_values)
    return pairs / (m - 1)[:, None, None]


def _weighted_alpha(per_unit: np.ndarray, weights: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """Alpha for each row of unit weights (B, N): row b counts unit u weights[b, u] times. NaN when undefined."""
    n_units, n_values, _ = per_unit.shape
    o = (weights @ per_unit.reshape(n_units, -1)).reshape(-1, n_values, n_values)
    n_v = o.sum(axis=1)
    total = n_v.sum(axis=1)
    e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(n_values)) / (total - 1)[:, None, None]
    d = _distance_matrices(domain.astype(float), n_v, level)
    d_o, d_e = (o * d).sum(axis=(1, 2)), (e * d).sum(axis=(1, 2))
    out = np.full(d_o.shape, np.nan)
    ok = d_e > 0  # a resample without any variation has no expected disagreement: alpha undefined there
    out[ok] = 1.0 - d_o[ok] / d_e[ok]
    return out


def _boot_alpha(value_counts: np.ndarray, domain: np.ndarray, level: str, n_boot: int, seed: int) -> np.ndarray:
    """Alpha of n_boot resamples of the pairable units, all at once."""
    n_units = value_counts.shape[0]
    rng = np.random.default_rng(seed)
    # Drawing N units with replacement = multinomial counts of each unit; o for a resample is a weighted sum.
    weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(float)
    return _weighted_alpha(_unit_coincidences(value_counts), weights, domain, level)


def krippendorff_alpha(
    reliability_data: np.ndarray | pd.DataFrame | Sequence[Sequence[float]],
    level: Level = "nominal",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> AlphaResult:
    """Krippendorff's alpha on a raters x units matrix (NaN = not rated), with a bootstrap over units.

    The point value comes from the `krippendorff` package. Only units rated by at least two raters are
    pairable and count; the interval is the percentile bootstrap resampling pairable units (columns) with
    replacement. A single rater, no variation at all, or fewer than 2 pairable units give alpha=None and a note.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    _check_ci(ci, n_boot)
    data = reliability_data.to_numpy(dtype=float) if isinstance(reliability_data, pd.DataFrame) else None
    if data is None:
        try:
            data = np.asarray(reliability_data, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("reliability_data must be numbers (NaN for missing); map labels to codes first") from None
    if data.ndim != 2:
        raise ValueError(f"reliability_data must be a 2-D raters x units matrix, got {data.ndim} dimension(s)")
    data = np.where(np.isfinite(data), data, np.nan)
    rated = ~np.isnan(data)
    n_raters = int(rated.any(axis=1).sum())
    n_units = int(rated.any(axis=0).sum())
    pairable = rated.sum(axis=0) >= 2
    n_pairable = int(pairable.sum())

    def undefined(note: str) -> AlphaResult:
        return AlphaResult(None, level, n_units, n_raters, n_pairable, note=note)

    if n_raters < 2:
        return undefined(
            f"Only {n_raters} rater{'s' if n_raters != 1 else ''} gave ratings: agreement needs at least two raters "
            "rating the same units."
        )
    if n_pairable < MIN_PAIRABLE_UNITS:
        return undefined(
            f"Only {n_pairable} unit{'s' if n_pairable != 1 else ''} rated by two or more raters: alpha needs at "
            f"least {MIN_PAIRABLE_UNITS} such units (units rated once do not count)."
        )
    values = data[:, pairable]
    domain = np.unique(values[~np.isnan(values)])
    if domain.size < 2:
        return undefined(
            f"Every rating of the pairable units is the same value ({domain[0]:g}): with no variation there is no "
            "disagreement expected by chance, so alpha is undefined (agreement is total but cannot be told "
            "apart from chance)."
        )
    if level == "ratio" and domain.min() < 0:
        raise ValueError("ratio level needs values of 0 or more")
    value_counts = (values.T[:, :, None] == domain[None, None, :]).sum(axis=1)
    point = float(krippendorff.alpha(value_counts=value_counts, value_domain=domain, level_of_measurement=level))
    ci_low = ci_high = None
    note = None
    if n_boot > 0:
        ci_low, ci_high = _percentile_ci(_boot_alpha(value_counts, domain, level, n_boot, seed), ci)
        if n_pairable < 10:
            note = f"Only {n_pairable} pairable units: the interval is rough."
    return AlphaResult(point, level, n_units, n_raters, n_pairable, ci_low, ci_high, note)


def alpha_from_long(
    df: pd.DataFrame,
    level: Level = "nominal",
    *,
    unit: str = "unit",
    rater: str = "rater",
    value: str = "value",
    value_order: Sequence[object] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> AlphaResult:
    """Krippendorff's alpha from long rows (unit, rater, value): builds the raters x units matrix.

    Numeric values are used as they are. Text values are coded: for nominal in order of appearance, for
    ordinal by their place in `value_order` (required then); interval and ratio need numbers. A missing value
    is left out; a rater rating the same unit twice is an error (ValueError).
    """
    missing = [c for c in (unit, rater, value) if c not in df.columns]
    if missing:
        raise ValueError(f"missing column(s): {', '.join(missing)}; need {unit}, {rater}, {value}")
    rows = df[[unit, rater, value]].dropna(subset=[value])
    rows = rows[rows[value].astype(str).str.strip() != ""]
    vals = pd.to_numeric(rows[value], errors="coerce")
    if vals.isna().any():
        if value_order is not None:
            order = {str(v): i for i, v in enumerate(value_order)}
            unknown = sorted({str(v) for v in rows[value]} - set(order))
            if unknown:
                raise ValueError(f"value(s) not in value_order: {', '.join(unknown[:5])}")
            vals = rows[value].astype(str).map(order).astype(float)
        elif level == "nominal":
            vals = pd.Series(pd.factorize(rows[value].astype(str))[0], index=rows.index, dtype=float)
        else:
            bad = rows.loc[vals.isna(), value].iloc[0]
            raise ValueError(
                f"{level} level needs numeric values; got {bad!r}"
                + (" (give value_order for ordered labels)" if level == "ordinal" else "")
            )
    rows = rows.assign(**{value: vals})
    dup = rows.duplicated(subset=[unit, rater], keep=False)
    if dup.any():
        first = rows[dup].iloc[0]
        raise ValueError(f"rater {first[rater]!r} rated unit {first[unit]!r} more than once")
    matrix = rows.pivot(index=rater, columns=unit, values=value)
    return krippendorff_alpha(matrix.to_numpy(dtype=float), level, n_boot=n_boot, seed=seed, ci=ci)


# -- majority vote -----------------------------------------------------------------------------
def majority(votes: Mapping[str, int]) -> int | None:
    """The value most voters gave (e.g. {worker: 0/1}); None for a tie or no votes."""
    counts: dict[int, int] = {}
    for v in votes.values():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        counts[v] = counts.get(v, 0) + 1
    if not counts:
        return None
    ranked = sorted(counts.values(), reverse=True)
    if len(ranked) > 1 and ranked[0] == ranked[1]:
        return None
    return max(counts, key=counts.__getitem__)


# -- per-document (summary-level) correlation ------------------------------------------------------
@dataclass(frozen=True)
class GroupedCorrelation:
    """The mean of per-document correlations (Zhong et al., 2022; G-Eval's meta-evaluation of SummEval)."""

    method: str
    r: float | None
    n_groups: int  # documents whose correlation is defined (both sides vary)
    n_skipped: int  # documents left out: fewer than two items, or one side constant
    n_items: int
    note: str | None = None


def per_group_correlation(
    x: Sequence[float] | np.ndarray | pd.Series,
    y: Sequence[float] | np.ndarray | pd.Series,
    groups: Sequence[Any] | np.ndarray | pd.Series,
    method: Method = "spearman",
) -> GroupedCorrelation:
    """Correlate within each group (document) and average: a group where either side does not vary is skipped,
    as G-Eval's meta_eval_summeval does; pairs with a missing value are left out first."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    xa, ya = _as_float(x, "x"), _as_float(y, "y")
    g = np.asarray(groups, dtype=object)
    if not (xa.size == ya.size == g.size):
        raise ValueError("x, y and groups must have the same length")
    keep = np.isfinite(xa) & np.isfinite(ya)
    frame = pd.DataFrame({"x": xa[keep], "y": ya[keep], "g": g[keep]})
    fn = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[method]
    values, skipped = [], 0
    for _, d in frame.groupby("g", sort=False):
        if d["x"].nunique() <= 1 or d["y"].nunique() <= 1:
            skipped += 1
            continue
        values.append(float(fn(d["x"].to_numpy(), d["y"].to_numpy()).statistic))
    note = None
    if not values:
        note = "No document has two or more items that vary on both sides: no per-document correlation."
    r = float(np.mean(values)) if values else None
    return GroupedCorrelation(method, r, len(values), skipped, int(keep.sum()), note)
