"""Optional stopping, simulated: a team reads the comparison as labels arrive and stops at the first decided
difference. Used by tests/services/test_judges_sequential.py (small) and bench/compare_sequential.py (large).

Two paths:
- `stop_at_first` runs services.judges.compare.compare itself at each look (any judge, paired or not);
- the vectorised helpers compute the labels-only reading (1/0 labels, no judge) for thousands of runs at once
  with the same formulas (services/stats/sequential.py and MOVER), for the coverage at every n and the labels
  a decision takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.special import betaincinv

from services.judges.compare import MIN_CLASS_DIFF
from services.stats import sequential


@dataclass(frozen=True)
class Setting:
    rates: tuple[float, float]
    judge: str = "informative"  # "informative", "useless" or "biased"
    paired: bool = False
    rho: float = 0.5  # paired: the latent correlation of the two systems' consistency
    items: int = 1000


def draw(setting: Setting, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """One dataset of two systems (rows id, system, reference, prediction, label all NaN) and the order in which
    labels arrive (per system: a random order of its rows)."""
    n = setting.items
    z = rng.normal(size=n)
    parts, orders = [], []
    for k, rate in enumerate(setting.rates):
        if setting.paired:
            latent = np.sqrt(setting.rho) * z + np.sqrt(1 - setting.rho) * rng.normal(size=n)
            y = (latent < sps.norm.ppf(rate)).astype(float)
            refs = np.arange(n)
        else:
            y = (rng.random(n) < rate).astype(float)
            refs = np.arange(n) + 1_000_000 * (k + 1)
        if setting.judge == "informative":
            pred = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, n), 0, 1)
        elif setting.judge == "biased":  # informative, but says consistent far more often than it is
            pred = np.clip(0.45 + 0.5 * y + rng.normal(0, 0.15, n), 0, 1)
        else:
            pred = rng.random(n)
        parts.append(pd.DataFrame({"system": f"S{k + 1}", "reference": refs, "prediction": pred, "y": y}))
        orders.append(rng.permutation(n) + k * n)
    df = pd.concat(parts, ignore_index=True)
    df["label"] = np.nan
    return df, np.stack(orders)


def stop_at_first(
    setting: Setting, *, runs: int, looks: range, mode: str, alpha: float = 0.05, seed: int = 0
) -> dict[str, float]:
    """Read services.judges.compare.compare at each look (labels a system) and stop at the first significant
    difference: {"claims": share of runs that claimed one, "wrong": claims where the rates are equal or of the
    wrong sign, "covered": share of runs whose systems' live PPI and classical intervals covered the true rates
    at every look until the stop}."""
    from services.judges.compare import compare

    rng = np.random.default_rng(seed)
    truth = dict(zip(("S1", "S2"), setting.rates, strict=True))
    true_d = setting.rates[0] - setting.rates[1]
    claims = wrong = covered = 0
    for _ in range(runs):
        df, orders = draw(setting, rng)
        ok = True
        for n in looks:
            idx = orders[:, :n].ravel()
            frame = df.drop(columns="y")
            frame.loc[idx, "label"] = df.loc[idx, "y"].to_numpy()
            c = compare(frame, alpha=alpha, mode=mode)
            for s in c.systems:
                for e in (s.classical, s.ppi):
                    if e.ci_low is not None and not e.ci_low <= truth[s.system] <= e.ci_high:
                        ok = False
            d = c.differences[0]
            if d.significant:
                claims += 1
                wrong += bool(true_d == 0 or np.sign(d.estimate) != np.sign(true_d))
                break
        covered += ok
    return {"claims": claims / runs, "wrong": wrong / runs, "covered": covered / runs}


# -- the labels-only reading, vectorised -------------------------------------------------------------------
@lru_cache(maxsize=8)
def _live_table(n_max: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """lo[n, k], hi[n, k] of the live interval for every n <= n_max, k <= n (row 0 unused)."""
    n, k = np.meshgrid(np.arange(1, n_max + 1), np.arange(n_max + 1), indexing="ij")
    lo, hi = sequential.binary_cs(np.minimum(k, n), n, alpha=alpha)
    return np.vstack([np.zeros((1, n_max + 1)), lo]), np.vstack([np.ones((1, n_max + 1)), hi])


def live_limits(k: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The live interval of a rate from k 1s in n labels (the beta-binomial mixture sequence; looked up in a
    table of every (n, k) up to 1,000 labels)."""
    k, n = np.broadcast_arrays(np.asarray(k), np.asarray(n))
    if n.size and n.max() <= 1000:
        lo, hi = _live_table(int(max(200, n.max())), alpha)
        return lo[n.astype(int), k.astype(int)], hi[n.astype(int), k.astype(int)]
    return sequential.binary_cs(k, n, alpha=alpha)


def planned_limits(k: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The planned (Clopper-Pearson) interval of k 1s in n labels."""
    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    lo = np.where(k == 0, 0.0, betaincinv(np.maximum(k, 1e-300), n - k + 1, alpha / 2))
    hi = np.where(k == n, 1.0, betaincinv(k + 1, np.maximum(n - k, 1e-300), 1 - alpha / 2))
    return lo, hi


def difference_limits(ka, kb, n, alpha: float, live: bool, r=0.0) -> tuple[np.ndarray, np.ndarray]:
    """The difference's interval from labels alone, as services.judges.compare makes it: MOVER of the systems'
    intervals at alpha, or, with fewer than MIN_CLASS_DIFF of a class, both systems' whole intervals at alpha/2."""
    lim = live_limits if live else planned_limits
    ka, kb, n = np.broadcast_arrays(np.asarray(ka, float), np.asarray(kb, float), np.asarray(n, float))
    (la, ua), (lb, ub) = lim(ka, n, alpha), lim(kb, n, alpha)
    pa, pb = ka / n, kb / n
    d = pa - pb
    low = d - np.sqrt(np.maximum(0, (pa - la) ** 2 + (ub - pb) ** 2 - 2 * r * (pa - la) * (ub - pb)))
    high = d + np.sqrt(np.maximum(0, (ua - pa) ** 2 + (pb - lb) ** 2 - 2 * r * (ua - pa) * (pb - lb)))
    few = (np.minimum(ka, n - ka) < MIN_CLASS_DIFF) | (np.minimum(kb, n - kb) < MIN_CLASS_DIFF)
    if few.any():
        (la2, ua2), (lb2, ub2) = lim(ka[few], n[few], alpha / 2), lim(kb[few], n[few], alpha / 2)
        low[few], high[few] = la2 - ub2, ua2 - lb2
    return np.maximum(-1, low), np.minimum(1, high)


def labels_paths(rates: tuple[float, float], runs: int, n_max: int, rng: np.random.Generator, rho: float = 0.0):
    """Cumulative 1s of two systems' labels, shape (runs, n_max) each (rho > 0: paired, latent correlation)."""
    za = rng.normal(size=(runs, n_max))
    zb = np.sqrt(rho) * za + np.sqrt(1 - rho) * rng.normal(size=(runs, n_max)) if rho else rng.normal(size=za.shape)
    ya = za < sps.norm.ppf(rates[0])
    yb = zb < sps.norm.ppf(rates[1])
    return np.cumsum(ya, axis=1), np.cumsum(yb, axis=1)
