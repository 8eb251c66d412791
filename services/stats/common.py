"""What the statistics share: input checks, the percentile bootstrap interval, resample chunks, names."""

from __future__ import annotations

from typing import Literal

import numpy as np

Method = Literal["pearson", "spearman", "kendall"]
Level = Literal["nominal", "ordinal", "interval", "ratio"]
METHODS: tuple[str, ...] = ("pearson", "spearman", "kendall")
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

# Resampling item by item is done exactly up to this many items (or units); above it, each statistic uses a
# form whose memory and time grow linearly (analytic, or a bootstrap over counts); see docs/statistics.md.
EXACT_RESAMPLE_MAX = 5000
# At most this many resample-by-item indices are held at once (8 MB of int64).
CHUNK_CELLS = 1_000_000


def resample_chunks(n_boot: int, n: int) -> list[int]:
    """Row counts of successive blocks of resamples, each at most CHUNK_CELLS cells (at least one row)."""
    rows = max(1, CHUNK_CELLS // max(n, 1))
    return [min(rows, n_boot - start) for start in range(0, n_boot, rows)]


def as_float(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers (use NaN for a missing value)") from None
    return arr


def percentile_ci(samples: np.ndarray, ci: float) -> tuple[float | None, float | None]:
    """Percentile interval of the finite bootstrap replicates (degenerate resamples give NaN and are skipped)."""
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return None, None
    tail = (1.0 - ci) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def check_ci(ci: float, n_boot: int) -> None:
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be 0 or more, got {n_boot}")


def as_labels(labels, name: str = "labels") -> np.ndarray:
    arr = as_float(labels, name)
    finite = arr[np.isfinite(arr)]
    bad = finite[(finite != 0) & (finite != 1)]
    if bad.size:
        raise ValueError(f"{name} must be 0 or 1 (or NaN for missing), got {bad[0]:g}")
    return arr
