"""Krippendorff's alpha (from a raters x units matrix or long rows) with a bootstrap over units; majority vote."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np
import pandas as pd

from services.stats.common import EXACT_RESAMPLE_MAX, LEVELS, Level, check_ci, percentile_ci, resample_chunks

# Below this many pairable units alpha is not reported: one unit says nothing about chance agreement.
MIN_PAIRABLE_UNITS = 2


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
    """Alpha of n_boot resamples of the pairable units, in blocks of at most CHUNK_CELLS weights.

    Drawing N units with replacement = multinomial counts of each unit; o for a resample is a weighted sum.
    Units with the same value counts add the same coincidences, so above EXACT_RESAMPLE_MAX units the draw is
    over the distinct rows (how many times each is drawn: a multinomial with their shares), which has the same
    distribution and costs O(distinct rows) per resample instead of O(N).
    """
    n_units = value_counts.shape[0]
    rng = np.random.default_rng(seed)
    if n_units > EXACT_RESAMPLE_MAX:
        rows_of, counts = np.unique(value_counts, axis=0, return_counts=True)
        per_unit, probs = _unit_coincidences(rows_of), counts / n_units
    else:
        per_unit, probs = _unit_coincidences(value_counts), np.full(n_units, 1.0 / n_units)
    blocks = [
        _weighted_alpha(per_unit, rng.multinomial(n_units, probs, size=rows).astype(float), domain, level)
        for rows in resample_chunks(n_boot, probs.size)
    ]
    return np.concatenate(blocks)


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
    check_ci(ci, n_boot)
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
        who = "No rater has given ratings yet" if n_raters == 0 else "Only one rater has given ratings"
        return undefined(f"{who}: agreement needs at least two raters rating the same units.")
    if n_pairable < MIN_PAIRABLE_UNITS:
        units = (
            "No unit is rated by two or more raters yet"
            if n_pairable == 0
            else f"Only {_count(n_pairable, 'unit')} rated by two or more raters"
        )
        return undefined(
            f"{units}: alpha needs at least {MIN_PAIRABLE_UNITS} such units (units rated once do not count)."
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
        ci_low, ci_high = percentile_ci(_boot_alpha(value_counts, domain, level, n_boot, seed), ci)
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
        who, what = (v.item() if isinstance(v, np.generic) else v for v in (first[rater], first[unit]))
        raise ValueError(f"rater {who!r} rated unit {what!r} more than once")
    matrix = rows.pivot(index=rater, columns=unit, values=value)
    return krippendorff_alpha(matrix.to_numpy(dtype=float), level, n_boot=n_boot, seed=seed, ci=ci)


# -- rating slots ----------------------------------------------------------------------------------
# Nominal alpha depends only on how many raters gave each value in each unit (the coincidences), never on who
# they were: a matrix of rating slots x units gives exactly the alpha of the raters x units matrix, without a
# mostly empty raters x units matrix (thousands of crowd workers on large sets).
def slot_matrix(units: Sequence[Sequence[float]]) -> np.ndarray:
    """The values of each unit (a column) in rating slots (rows), NaN below a unit's last value."""
    slots = max((len(u) for u in units), default=0)
    m = np.full((slots, len(units)), np.nan)
    for j, u in enumerate(units):
        m[: len(u), j] = u
    return m


def binary_slot_matrix(yes: np.ndarray, total: np.ndarray) -> np.ndarray:
    """slot_matrix of binary votes given as counts: in each unit `yes` ones, then zeros up to `total` votes."""
    yes, total = np.asarray(yes), np.asarray(total)
    slots = int(total.max()) if total.size else 0
    s = np.arange(slots)[:, None]
    return np.where(s < yes[None, :], 1.0, np.where(s < total[None, :], 0.0, np.nan))


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


def _count(n: int, noun: str) -> str:
    """ "one unit", "3 units": a count that reads as English."""
    return f"one {noun}" if n == 1 else f"{n} {noun}s"
