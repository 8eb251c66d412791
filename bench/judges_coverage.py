"""Coverage and width of the rate intervals over a grid: true rates 0.01 to 0.99, 10 to 500
labelled items, an informative, a useless and an adversarial judge (services.judges.coverage).

    .venv/bin/python bench/judges_coverage.py [--draws 10000] [--N 2000] [--alpha 0.05]

Prints one table per judge (rows n, columns the true rate; each cell "classical / PPI" coverage), the worst
cell of each, and the mean widths against the Wilson and the normal (Wald) interval of the labels at the same
draws, for what the exact interval costs; then the CPU seconds and peak memory of the run.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from record import record, start

from services.judges import coverage as cv


def _wilson_wald_width(n: int, rate: float, alpha: float) -> tuple[float, float]:
    """Expected widths of the Wilson and Wald intervals of k ~ Binomial(n, rate) (exact, over k)."""
    k = np.arange(n + 1)
    pmf = sps.binom.pmf(k, n, rate)
    z = sps.norm.ppf(1 - alpha / 2)
    p = k / n
    wilson = 2 * z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    wald = np.minimum(1.0, p + z * np.sqrt(p * (1 - p) / n)) - np.maximum(0.0, p - z * np.sqrt(p * (1 - p) / n))
    return float((pmf * wilson).sum()), float((pmf * wald).sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=10000)
    ap.add_argument("--N", type=int, default=2000, help="unlabelled items per draw")
    ap.add_argument("--alpha", type=float, default=0.05)
    a = ap.parse_args()
    t0, began = time.process_time(), start()
    rows = cv.coverage(draws=a.draws, big_n=a.N, alpha=a.alpha, seed=1)
    cpu = time.process_time() - t0
    print(f"{a.draws} draws a cell, {a.N} unlabelled items, stated coverage {1 - a.alpha:.2f}; cell: classical / PPI")
    for judge in cv.JUDGES:
        mine = [r for r in rows if r["judge"] == judge]
        print(f"\n{judge}\n| n | " + " | ".join(f"{r:g}" for r in cv.RATES) + " |")
        print("|---" * (len(cv.RATES) + 1) + "|")
        for n in cv.SIZES:
            cells = {r["rate"]: r for r in mine if r["n"] == n}
            print(
                f"| {n} | "
                + " | ".join(f"{cells[r]['classical']:.3f} / {cells[r]['ppi']:.3f}" for r in cv.RATES)
                + " |"
            )
        for kind in ("classical", "ppi"):
            w = min(mine, key=lambda r, k=kind: r[k])
            print(f"worst {kind}: {w[kind]:.4f} at rate {w['rate']:g}, n {w['n']}")
    figures: dict = {}
    for judge in cv.JUDGES:
        mine = [r for r in rows if r["judge"] == judge]
        for kind in ("classical", "ppi"):
            w = min(mine, key=lambda r, k=kind: r[k])
            figures[f"{judge} judge: worst {kind} coverage"] = f"{w[kind]:.4f} at rate {w['rate']:g}, n {w['n']}"
    widths = []
    print("\nmean width (informative judge): exact | PPI | share of draws PPI used | Wilson | Wald")
    for n in (10, 50, 100, 500):
        for rate in (0.05, 0.5):
            r = next(x for x in rows if x["judge"] == "informative" and x["n"] == n and x["rate"] == rate)
            wil, wald = _wilson_wald_width(n, rate, a.alpha)
            print(
                f"n {n:3d} rate {rate:4g}: {r['classical_width']:.3f} | {r['ppi_width']:.3f} | {r['ppi_used']:.2f} | "
                f"{wil:.3f} | {wald:.3f}"
            )
            widths.append(
                {
                    "n": n,
                    "rate": rate,
                    "exact": r["classical_width"],
                    "PPI": r["ppi_width"],
                    "share PPI used": r["ppi_used"],
                    "Wilson": wil,
                    "Wald": wald,
                }
            )
    figures[f"mean width at {1 - a.alpha:.0%}, informative judge"] = widths
    figures["CPU s"] = cpu
    record("judges", "judges_coverage", figures, started=began)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nCPU {cpu:.1f} s for {len(rows)} cells; peak memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
