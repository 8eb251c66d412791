"""Correlations with a percentile bootstrap interval over pairs, and the mean of per-document correlations."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from services.stats.common import (
    CHUNK_CELLS,
    EXACT_RESAMPLE_MAX,
    METHODS,
    Method,
    as_float,
    check_ci,
    percentile_ci,
    resample_chunks,
)

# Above EXACT_RESAMPLE_MAX pairs the interval is r +- z * se with the delete-a-group jackknife's standard error
# over this many random groups (Efron & Tibshirani 1993, ch. 11; Shao & Tu 1995, sec. 2.3).
JACKKNIFE_GROUPS = 100


@dataclass(frozen=True)
class CorrelationResult:
    method: str
    r: float | None
    p: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    note: str | None = None


def _r_of(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Pearson's r = num / den of each resample, cut to [-1, 1]. A resample made of one repeated value has (near)
    zero variance: its r is undefined (NaN), not 0."""
    out = np.full(num.shape, np.nan)
    ok = den > 1e-12 * np.maximum(1.0, np.abs(num))
    out[ok] = num[ok] / den[ok]
    return np.clip(out, -1.0, 1.0)


def _rowwise_pearson(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair; NaN for a row where either side is constant."""
    xc = xb - xb.mean(axis=1, keepdims=True)
    yc = yb - yb.mean(axis=1, keepdims=True)
    num = (xc * yc).sum(axis=1)
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    return _r_of(num, den)


def _boot_block(x: np.ndarray, y: np.ndarray, idx: np.ndarray, method: str, table: _Table | None) -> np.ndarray:
    if table is not None:
        return table.resampled(idx, method)
    if method == "pearson":
        return _rowwise_pearson(x[idx], y[idx])
    if method == "spearman":
        # Spearman's rho is Pearson's r on average ranks (ties share their mean rank), row by row.
        return _rowwise_pearson(sps.rankdata(x[idx], axis=1), sps.rankdata(y[idx], axis=1))
    # Kendall's tau-b of many-valued scores: scipy's O(n log n) routine in a loop (about 0.4 s for n=1000 and
    # 1000 resamples).
    out = np.empty(idx.shape[0])
    for b in range(idx.shape[0]):
        xb, yb = x[idx[b]], y[idx[b]]
        if np.ptp(xb) == 0 or np.ptp(yb) == 0:
            out[b] = np.nan
        else:
            out[b] = sps.kendalltau(xb, yb).statistic
    return out


# A resample repeats the sample's pairs, so its statistics depend only on how many times it
# takes each (x value, y value) cell. When the scores take few values (a judge's share of consistent sentences,
# the majority of three raters) the resamples are counted into their contingency tables, which is faster than
# gathering, ranking or sorting each resample once the table has at most this many cells per pair.
TABLE_CELLS_PER_PAIR = 1.0
TABLE_CELLS_MIN = 1024


@dataclass(frozen=True)
class _Table:
    """The sample's pairs as cells of the (distinct x) by (distinct y) table."""

    cell: np.ndarray  # each pair's cell, x index * dy + y index
    ux: np.ndarray  # the distinct x values
    uy: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray) -> _Table | None:
        (ux, ix), (uy, iy) = (np.unique(v, return_inverse=True) for v in (x, y))
        if ux.size * uy.size > max(TABLE_CELLS_MIN, TABLE_CELLS_PER_PAIR * x.size):
            return None
        return cls(ix.astype(np.int64) * uy.size + iy, ux, uy)

    def resampled(self, idx: np.ndarray, method: str) -> np.ndarray:
        """The statistic of each row of resample indices, through its contingency table (blocks of at most
        CHUNK_CELLS table cells)."""
        dx, dy = self.ux.size, self.uy.size
        k = dx * dy
        step = max(1, CHUNK_CELLS // k)
        out = np.full(idx.shape[0], np.nan)  # a resample a wrong loop left out shows as NaN, not as old memory
        for start in range(0, idx.shape[0], step):
            sub = idx[start : start + step]
            rows = sub.shape[0]
            flat = (np.arange(rows, dtype=np.int64)[:, None] * k + self.cell[sub]).ravel()
            t = np.bincount(flat, minlength=rows * k).reshape(rows, dx, dy).astype(float)
            if method == "kendall":
                out[start : start + rows] = _tau_b_of_tables(t)
            elif method == "spearman":
                out[start : start + rows] = _table_pearson(
                    t, _average_ranks(t.sum(axis=2)), _average_ranks(t.sum(axis=1))
                )
            else:
                out[start : start + rows] = _table_pearson(t, self.ux[None, :], self.uy[None, :])
        return out


def tabulated(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `correlation` counts the bootstrap resamples of these pairs (finite on both sides) into
    contingency tables: their scores take few values. Such intervals cost about a seventh of the others."""
    keep = np.isfinite(x) & np.isfinite(y)
    return _Table.of(x[keep], y[keep]) is not None


def _table_pearson(t: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Pearson's r of each table in t (rows, dx, dy) whose cells hold the values vx (rows, dx) by vy (rows, dy):
    _rowwise_pearson of the pairs it counts (the same rule for a constant side)."""
    rows, cols = t.sum(axis=2), t.sum(axis=1)
    n = rows.sum(axis=1, keepdims=True)
    ax = vx - (rows * vx).sum(axis=1, keepdims=True) / n
    ay = vy - (cols * vy).sum(axis=1, keepdims=True) / n
    num = np.einsum("bi,bij,bj->b", ax, t, ay)
    den = np.sqrt((rows * ax * ax).sum(axis=1) * (cols * ay * ay).sum(axis=1))
    return _r_of(num, den)


def _average_ranks(counts: np.ndarray) -> np.ndarray:
    """Each value's average rank in each row of value counts: the count of smaller values plus (its count + 1)/2."""
    return counts.cumsum(axis=1) - (counts - 1) / 2


def _boot_correlations(x: np.ndarray, y: np.ndarray, method: str, n_boot: int, seed: int) -> np.ndarray:
    """The correlation of n_boot resamples of the pairs, drawn in blocks of at most CHUNK_CELLS indices."""
    n = x.size
    rng = np.random.default_rng(seed)
    table = _Table.of(x, y)
    blocks = [
        _boot_block(x, y, rng.integers(0, n, size=(rows, n)), method, table) for rows in resample_chunks(n_boot, n)
    ]
    return np.concatenate(blocks)


def _pearson_of(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / den if den > 0 else float("nan")


def _leave_group_out(x: np.ndarray, y: np.ndarray, method: str, group: np.ndarray, g: int) -> np.ndarray:
    """The correlation without each group in turn: r_(k) for k < g, each equal to scipy's on the rest.

    Pearson comes from per-group sums (O(n) for all groups). Spearman keeps the ranks of the whole sample and
    takes off, for each kept value, the removed values below it and half those equal to it: that is its
    midrank among the kept values, so no re-ranking. Kendall subtracts each group's contingency table from the
    whole sample's when the values are few (_kendall_leave_group_out), else calls scipy once a group.
    """
    if method == "pearson":
        xc, yc = x - x.mean(), y - y.mean()  # centred first: the sums below then lose no precision
        sums = [
            np.bincount(group, weights=w, minlength=g) for w in (np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc)
        ]
        n, sx, sy, sxx, syy, sxy = (s.sum() - s for s in sums)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (n * sxy - sx * sy) / np.sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))
    if method == "spearman":
        (ux, ix), (uy, iy) = (np.unique(v, return_inverse=True) for v in (x, y))
        rx, ry = sps.rankdata(x), sps.rankdata(y)
        members = np.argsort(group, kind="stable")
        starts = np.searchsorted(group[members], np.arange(g + 1))
        out = np.empty(g)
        for k in range(g):
            gone = members[starts[k] : starts[k + 1]]
            keep = np.ones(x.size, dtype=bool)
            keep[gone] = False
            ranks = []
            for r, inv, size in ((rx, ix, ux.size), (ry, iy, uy.size)):
                cnt = np.bincount(inv[gone], minlength=size).astype(float)
                below_and_half = np.cumsum(cnt) - cnt / 2.0  # removed values below, and half of those equal
                ranks.append((r - below_and_half[inv])[keep])
            out[k] = _pearson_of(*ranks)
        return out
    by_tables = _kendall_leave_group_out(x, y, group, g)
    if by_tables is not None:
        return by_tables
    return np.array([sps.kendalltau(x[group != k], y[group != k]).statistic for k in range(g)])


def _tau_b_of_tables(t: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each contingency table in t (..., values of x, values of y), as scipy's kendalltau
    computes it from the pairs: (concordant - discordant) / sqrt((n0 - ties in x) (n0 - ties in y)); NaN where
    either side does not vary."""
    after = np.cumsum(t[..., ::-1, :], axis=-2)[..., ::-1, :] - t  # pairs with a larger x
    larger_y = np.cumsum(after[..., :, ::-1], axis=-1)[..., :, ::-1] - after  # ... and a larger y
    smaller_y = np.cumsum(after, axis=-1) - after  # ... and a smaller y
    s = (t * (larger_y - smaller_y)).sum(axis=(-2, -1))
    n = t.sum(axis=(-2, -1))
    rows, cols = t.sum(axis=-1), t.sum(axis=-2)
    n0 = n * (n - 1) / 2.0
    tx, ty = (rows * (rows - 1) / 2.0).sum(axis=-1), (cols * (cols - 1) / 2.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(s / np.sqrt((n0 - tx) * (n0 - ty)), -1.0, 1.0)


# The per-group contingency tables of _kendall_leave_group_out are built when they hold at most this many cells.
KENDALL_TABLE_CELLS = 4_000_000


def _kendall_leave_group_out(x: np.ndarray, y: np.ndarray, group: np.ndarray, g: int) -> np.ndarray | None:
    """Kendall's tau-b without each group in turn, from contingency tables: the whole sample's table minus each
    group's. Scores and human ratings take few distinct values, so the tables are small and this is O(n) plus
    O(g x values of x x values of y); None when the tables would exceed KENDALL_TABLE_CELLS (continuous data)."""
    ux, ix = np.unique(x, return_inverse=True)
    uy, iy = np.unique(y, return_inverse=True)
    cells = g * ux.size * uy.size
    if cells > KENDALL_TABLE_CELLS:
        return None
    flat = (group * ux.size + ix) * uy.size + iy
    per_group = np.bincount(flat, minlength=cells).reshape(g, ux.size, uy.size).astype(float)
    return _tau_b_of_tables(per_group.sum(axis=0) - per_group)


def _jackknife_interval(
    x: np.ndarray, y: np.ndarray, r: float, method: str, seed: int, ci: float
) -> tuple[float | None, float | None]:
    """r +- z * se, se from the delete-a-group jackknife over JACKKNIFE_GROUPS random groups, cut to [-1, 1].

    With g groups and r_(k) the correlation without group k: se^2 = (g - 1) / g * sum_k (r_(k) - mean)^2. For
    large n the percentile bootstrap is this normal interval up to Monte Carlo error, at O(g n log n) time and
    O(n) memory instead of O(n_boot n) of both.
    """
    g = min(JACKKNIFE_GROUPS, x.size)
    group = np.random.default_rng(seed).permutation(x.size) % g
    leave_out = _leave_group_out(x, y, method, group, g)
    leave_out = leave_out[np.isfinite(leave_out)]
    if leave_out.size < 2:
        return None, None
    se = float(np.sqrt((leave_out.size - 1) / leave_out.size * ((leave_out - leave_out.mean()) ** 2).sum()))
    half = float(sps.norm.ppf(0.5 + ci / 2.0)) * se
    return max(-1.0, r - half), min(1.0, r + half)


def correlation(
    x: Sequence[float] | np.ndarray | pd.Series,
    y: Sequence[float] | np.ndarray | pd.Series,
    method: Method = "pearson",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> CorrelationResult:
    """Pearson, Spearman or Kendall (tau-b) correlation with a percentile bootstrap interval over pairs.

    Up to EXACT_RESAMPLE_MAX pairs the resamples are drawn in blocks (bounded memory, the same numbers as one
    draw); above, the interval is the normal one with a grouped-jackknife standard error (_jackknife_interval),
    which the bootstrap approaches there, in time and memory linear in n."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    check_ci(ci, n_boot)
    xa, ya = as_float(x, "x"), as_float(y, "y")
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
    if n_boot > 0 and n > EXACT_RESAMPLE_MAX:
        ci_low, ci_high = _jackknife_interval(xa, ya, r, method, seed, ci)
    elif n_boot > 0:
        boots = _boot_correlations(xa, ya, method, n_boot, seed)
        ci_low, ci_high = percentile_ci(boots, ci)
        n_bad = int(np.count_nonzero(~np.isfinite(boots)))
        if ci_low is None:
            note = "No bootstrap resample varied on both sides: no interval."
        elif n_bad > n_boot // 10:
            note = (
                f"{n_bad} of {n_boot} bootstrap resamples had a constant side and were skipped; "
                "read the interval with care."
            )
    return CorrelationResult(method, r, p if math.isfinite(p) else None, n, ci_low, ci_high, note)


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
    xa, ya = as_float(x, "x"), as_float(y, "y")
    g = np.asarray(groups, dtype=object)
    if not (xa.size == ya.size == g.size):
        raise ValueError("x, y and groups must have the same length")
    keep = np.isfinite(xa) & np.isfinite(ya)
    frame = pd.DataFrame({"x": xa[keep], "y": ya[keep], "g": g[keep]})
    fn = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[method]
    # Which groups vary on both sides is found for all groups at once; only those are correlated one by one
    # (a loop over every group costs seconds at 50,000 single-item documents).
    grouped = frame.groupby("g", sort=False)
    varies = grouped["x"].transform("nunique").gt(1) & grouped["y"].transform("nunique").gt(1)
    skipped = int(grouped.ngroups - frame.loc[varies, "g"].nunique())
    values = [
        float(fn(d["x"].to_numpy(), d["y"].to_numpy()).statistic) for _, d in frame[varies].groupby("g", sort=False)
    ]
    note = None
    if not values:
        note = "No document has two or more items that vary on both sides: no per-document correlation."
    r = float(np.mean(values)) if values else None
    return GroupedCorrelation(method, r, len(values), skipped, int(keep.sum()), note)
