"""Simulated systems with known true rates, for the comparison's coverage test and bench/compare_coverage.py.

Each system's item is consistent (Y = 1) with its system's rate. Systems over the same references (paired)
share a reference's difficulty: Y = 1 when sqrt(rho) Z_ref + sqrt(1 - rho) E_item < Phi^-1(rate), so each
system keeps its rate and the systems' labels correlate. A random draw of each system's items is labelled
(paired systems: the same references, or each its own). An informative judge predicts
clip(0.2 + 0.6 Y + N(0, 0.15)); a useless one Uniform(0, 1), unrelated to Y.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps


@dataclass(frozen=True)
class Scenario:
    name: str
    rates: tuple[float, ...]
    judge: str  # "informative" or "useless"
    paired: bool
    same_labelled: bool = False  # paired systems labelled on the same references
    rho: float = 0.5


SCENARIOS = (
    Scenario("rare failures, paired", (0.90, 0.94, 0.97), "informative", True, True),
    Scenario("rare successes", (0.03, 0.06, 0.10), "informative", False),
    Scenario("mixed, useless judge", (0.03, 0.50, 0.97), "useless", False),
    Scenario("close, paired, useless judge", (0.94, 0.94, 0.97), "useless", True, True),
    Scenario("middle, paired", (0.40, 0.50, 0.60), "informative", True, False),
    Scenario("extremes, useless judge, paired", (0.03, 0.06, 0.97), "useless", True, False),
)


def _judge(y: np.ndarray, judge: str, rng: np.random.Generator) -> np.ndarray:
    if judge == "informative":
        return np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, y.size), 0, 1)
    return rng.random(y.size)


def draw(sc: Scenario, seed: int, *, n_range=(30, 100), big_n_range=(1000, 10000)) -> pd.DataFrame:
    """One draw: rows id, system, reference, prediction, label (NaN unless labelled)."""
    rng = np.random.default_rng(seed)
    frames = []
    big_n = int(rng.integers(big_n_range[0], big_n_range[1] + 1))
    z = rng.normal(size=big_n)
    shared_lab = rng.permutation(big_n)
    for k, rate in enumerate(sc.rates):
        name = f"S{k + 1}"
        if sc.paired:
            refs = np.arange(big_n)
            latent = np.sqrt(sc.rho) * z + np.sqrt(1 - sc.rho) * rng.normal(size=big_n)
            y = (latent < sps.norm.ppf(rate)).astype(float)
        else:
            m = int(rng.integers(big_n_range[0], big_n_range[1] + 1))
            refs = np.arange(m) + 1_000_000 * (k + 1)  # references of their own
            y = (rng.random(m) < rate).astype(float)
        n = int(rng.integers(n_range[0], n_range[1] + 1))
        order = shared_lab if sc.paired and sc.same_labelled else rng.permutation(y.size)
        label = np.full(y.size, np.nan)
        label[order[:n]] = y[order[:n]]
        frames.append(
            pd.DataFrame(
                {
                    "id": refs + 10_000_000 * k,
                    "system": name,
                    "reference": refs,
                    "prediction": _judge(y, sc.judge, rng),
                    "label": label,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def run(
    scenarios=SCENARIOS, draws: int = 100, alpha: float = 0.05, seed0: int = 0, mode: str = "planned"
) -> pd.DataFrame:
    """One row per (scenario, draw, system or pair): kind, what, truth, low, high, covered, significant, wrong sign."""
    from services.judges.compare import compare

    rows = []
    for sc in scenarios:
        truth = {f"S{k + 1}": r for k, r in enumerate(sc.rates)}
        for d in range(draws):
            c = compare(draw(sc, seed0 + d), alpha=alpha, mode=mode)
            for s in c.systems:
                for kind, e in (("PPI", s.ppi), ("classical", s.classical)):
                    t = truth[s.system]
                    rows.append(
                        (sc.name, d, kind, s.system, t, e.ci_low, e.ci_high, e.ci_low <= t <= e.ci_high, None, None)
                    )
            for x in c.differences:
                t = truth[x.a] - truth[x.b]
                wrong = bool(x.significant and t != 0 and np.sign(x.estimate) != np.sign(t))
                rows.append(
                    (
                        sc.name,
                        d,
                        "difference",
                        f"{x.a}-{x.b}",
                        t,
                        x.ci_low,
                        x.ci_high,
                        x.ci_low <= t + 1e-12 and t - 1e-12 <= x.ci_high,
                        x.significant,
                        wrong,
                    )
                )
    cols = ["scenario", "draw", "kind", "what", "truth", "low", "high", "covered", "significant", "wrong_sign"]
    return pd.DataFrame(rows, columns=cols)
