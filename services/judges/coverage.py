"""How often the rate intervals cover the true rate: a simulation vectorised over draws.

The same rules as services.judges.estimate (Clopper-Pearson for the labels; PPI++ with its t interval where
each class has MIN_CLASS labels and the judge passes the Pearson gate, else the labels' exact interval), written
on arrays of shape (draws, n) so that thousands of draws per cell take a fraction of a second. A test checks
that these equal estimate.classical and estimate.ppi draw by draw; bench/judges_coverage.py prints the grid.

Each draw: n labelled and N unlabelled items with labels Y ~ Bernoulli(rate) and a judge's prediction in
[0, 1]: "informative" draws it from Beta(3, 1) when Y = 1 and Beta(1, 3) when Y = 0 (AUROC 0.9), "useless"
from Uniform(0, 1) whatever Y, "adversarial" from Beta(1, 3) when Y = 1 and Beta(3, 1) when Y = 0.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from services.judges.estimate import MIN_CLASS

JUDGES = ("informative", "useless", "adversarial")
RATES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)
SIZES = (10, 20, 30, 50, 100, 200, 500)


def draw(
    rng: np.random.Generator, *, rate: float, n: int, big_n: int, judge: str, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels (draws, n), predictions on them (draws, n), predictions on the unlabelled items (draws, N))."""
    if judge not in JUDGES:
        raise ValueError(f"judge must be one of {JUDGES}, got {judge!r}")
    y = (rng.random((draws, n + big_n)) < rate).astype(float)
    u = rng.random(y.shape)
    if judge == "useless":
        yhat = u
    else:
        high = u ** (1.0 / 3.0)  # Beta(3, 1) by inversion: its CDF is x^3
        yhat = np.where((y == 1) == (judge == "informative"), high, 1.0 - high)
    return y[:, :n], yhat[:, :n], yhat[:, n:]


def classical_intervals(y: np.ndarray, *, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's mean and Clopper-Pearson interval (0/1 labels)."""
    n = y.shape[1]
    k = y.sum(axis=1)
    with np.errstate(all="ignore"):
        lo = np.where(k == 0, 0.0, sps.beta.ppf(alpha / 2, k, n - k + 1))
        hi = np.where(k == n, 1.0, sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return k / n, lo, hi


def _pearson_gate(y: np.ndarray, yhat: np.ndarray, alpha: float) -> np.ndarray:
    """Each row: Pearson's r > 0 with a two-sided p-value below alpha (the t test on n - 2 degrees of freedom)."""
    n = y.shape[1]
    yc, hc = y - y.mean(axis=1, keepdims=True), yhat - yhat.mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        r = (yc * hc).sum(axis=1) / np.sqrt((yc**2).sum(axis=1) * (hc**2).sum(axis=1))
        t = r * np.sqrt((n - 2) / (1 - r**2))
        p = 2 * sps.t.sf(np.abs(t), n - 2)
    return np.isfinite(r) & (r > 0) & (p < alpha)


def ppi_intervals(
    y: np.ndarray, yhat: np.ndarray, unl: np.ndarray, *, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row's PPI++ estimate and interval as estimate.ppi makes them, and whether PPI was used (else the
    labels' exact interval)."""
    n, big_n = y.shape[1], unl.shape[1]
    est, lo, hi = classical_intervals(y, alpha=alpha)
    k = y.sum(axis=1)
    use = (np.minimum(k, n - k) >= MIN_CLASS) & _pearson_gate(y, yhat, alpha)
    # PPI++'s lambda for a mean (Angelopoulos, Duchi and Zrnic 2023; ppi_py's _calc_lam_glm, clipped to [0, 1])
    yc, hc = y - y.mean(axis=1, keepdims=True), yhat - yhat.mean(axis=1, keepdims=True)
    cov = (yc * hc).sum(axis=1) / n
    var = np.concatenate([yhat, unl], axis=1).var(axis=1, ddof=1)
    with np.errstate(all="ignore"):
        lam = np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0)[:, None]
    point = (lam * unl).mean(axis=1) + (y - lam * yhat).mean(axis=1)
    se = np.sqrt((lam * unl).std(axis=1) ** 2 / big_n + (y - lam * yhat).std(axis=1) ** 2 / n)
    half = sps.t.ppf(1 - alpha / 2, n - 1) * se
    est = np.where(use, point, est)
    lo = np.where(use, np.clip(point - half, 0.0, 1.0), lo)
    hi = np.where(use, np.clip(point + half, 0.0, 1.0), hi)
    return est, lo, hi, use


def coverage(
    *,
    judges: tuple[str, ...] = JUDGES,
    rates: tuple[float, ...] = RATES,
    sizes: tuple[int, ...] = SIZES,
    draws: int = 2000,
    big_n: int = 500,
    alpha: float = 0.05,
    seed: int = 0,
) -> list[dict]:
    """One row per (judge, rate, n): how often each interval covers the rate, their mean widths, and the share
    of draws in which PPI was used. Each cell has its own seed, so a cell does not depend on the grid."""
    rows = []
    for j, judge in enumerate(judges):
        for n in sizes:
            for rate in rates:
                rng = np.random.default_rng([seed, j, n, round(rate * 1000)])
                y, yhat, unl = draw(rng, rate=rate, n=n, big_n=big_n, judge=judge, draws=draws)
                _, clo, chi = classical_intervals(y, alpha=alpha)
                _, plo, phi, used = ppi_intervals(y, yhat, unl, alpha=alpha)
                rows.append(
                    {
                        "judge": judge,
                        "rate": rate,
                        "n": n,
                        "draws": draws,
                        "classical": float(((clo <= rate) & (rate <= chi)).mean()),
                        "ppi": float(((plo <= rate) & (rate <= phi)).mean()),
                        "classical_width": float((chi - clo).mean()),
                        "ppi_width": float((phi - plo).mean()),
                        "ppi_used": float(used.mean()),
                    }
                )
    return rows
