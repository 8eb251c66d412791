"""PPI against the classical interval on simulated judges with a known true rate: coverage and width.

    .venv/bin/python bench/judges_ppi.py [--draws 500] [--n 50] [--N 2000] [--rate 0.4]

Each draw: N + n items with true labels Y ~ Bernoulli(rate); an informative judge predicts
clip(Y * 0.6 + 0.2 + noise) (noise sd 0.15), a pure-noise judge predicts Uniform(0, 1) unrelated to Y. The
n labelled items are a uniform draw. Prints, for each judge, how often each 95% interval covers the true
rate, and the mean widths.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from record import record, start

from services.judges.estimate import classical, ppi


def simulate(judge: str, *, draws: int, n: int, big_n: int, rate: float, alpha: float = 0.05) -> dict[str, float]:
    cover_p = cover_c = 0
    widths_p, widths_c = [], []
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        y = (rng.random(n + big_n) < rate).astype(float)
        if judge == "informative":
            yhat = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, y.size), 0, 1)
        else:
            yhat = rng.random(y.size)
        p = ppi(y[:n], yhat[:n], yhat[n:], alpha=alpha)
        c = classical(y[:n], alpha=alpha)
        cover_p += p.ci_low <= rate <= p.ci_high
        cover_c += c.ci_low <= rate <= c.ci_high
        widths_p.append(p.width)
        widths_c.append(c.width)
    return {
        "ppi_coverage": cover_p / draws,
        "classical_coverage": cover_c / draws,
        "ppi_width": float(np.mean(widths_p)),
        "classical_width": float(np.mean(widths_c)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--N", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=0.4)
    a = ap.parse_args()
    started = start()
    rows = []
    for judge in ("informative", "noise"):
        t = time.perf_counter()
        r = simulate(judge, draws=a.draws, n=a.n, big_n=a.N, rate=a.rate)
        print(
            f"{judge:12s} n={a.n} N={a.N} draws={a.draws}: coverage PPI {r['ppi_coverage']:.3f}, classical "
            f"{r['classical_coverage']:.3f}; mean width PPI {r['ppi_width']:.4f}, classical {r['classical_width']:.4f} "
            f"(ratio {r['ppi_width'] / r['classical_width']:.3f}); {time.perf_counter() - t:.1f} s"
        )
        rows.append(
            {
                "judge": judge,
                "PPI coverage": r["ppi_coverage"],
                "classical coverage": r["classical_coverage"],
                "PPI width": r["ppi_width"],
                "classical width": r["classical_width"],
                "width ratio": r["ppi_width"] / r["classical_width"],
            }
        )
    record("judges", "judges_ppi", {f"coverage and width, n={a.n} N={a.N} rate {a.rate}": rows}, started=started)


if __name__ == "__main__":
    main()
