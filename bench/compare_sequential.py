"""Reading the comparison of systems as labels arrive: false claims under optional stopping, coverage at every
n at once, the live interval's price (its width against the planned one) and the labels a live reading saves.

    nice -n 19 .venv/bin/python bench/compare_sequential.py [--runs 300] [--paths 2000] [--quick]

1. Through services.judges.compare.compare: two systems of 1,000 items each, read after every 5 labels a system
   from 10 to 150, stopping at the first significant difference, planned (fixed-sample intervals read at every
   look) against live (confidence sequences); equal rates (every claim is false) and informative, useless and
   biased judges, paired and independent systems.
2. Labels alone, vectorised (the same formulas): each rate's interval covering it at every n from 2 to 500 at
   once, at rates 0.01-0.99; false claims reading the difference after every label from 10 to 500.
3. Width of the live interval over the planned one at 50, 150 and 500 labels.
4. Labels a system until decided, live, against a planned design with the same error rates (alpha 0.05,
   power 0.8), for differences of 3, 5, 10 and 20 points around a rate of 0.5.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import record, start

from services.stats import sequential
from tests.support.sequential_sim import (
    Setting,
    difference_limits,
    labels_paths,
    planned_limits,
    stop_at_first,
)

ALPHA = 0.05


def _table(n_max: int, alpha: float, live: bool) -> tuple[np.ndarray, np.ndarray]:
    """lo[n, k], hi[n, k] for every n <= n_max and k <= n."""
    n, k = np.meshgrid(np.arange(1, n_max + 1), np.arange(n_max + 1), indexing="ij")
    k = np.minimum(k, n)
    lo, hi = (sequential.binary_cs if live else lambda k, n, alpha: planned_limits(k, n, alpha))(k, n, alpha=alpha)
    pad = np.zeros((1, n_max + 1))
    return np.vstack([pad, lo]), np.vstack([pad + 1, hi])


def part_compare(runs: int, quick: bool) -> list[dict]:
    print("1. Stopping at the first significant difference, through compare(): looks every 5 labels, 10 to 150")
    print("| setting | planned: false claims | live: false claims | live: covered at every look |")
    print("|---|---|---|---|")
    settings = [
        ("equal rates 0.5, informative judge", Setting((0.5, 0.5)), runs),
        ("equal rates 0.9, informative judge", Setting((0.9, 0.9)), runs),
    ]
    if not quick:
        few = max(40, runs // 3)
        settings += [
            ("equal rates 0.5, useless judge", Setting((0.5, 0.5), judge="useless"), few),
            ("equal rates 0.9, biased judge", Setting((0.9, 0.9), judge="biased"), few),
            ("equal rates 0.7, paired (rho 0.5), informative", Setting((0.7, 0.7), paired=True), few),
            ("equal rates 0.05, useless judge", Setting((0.05, 0.05), judge="useless"), few),
            ("equal rates 0.97, paired, biased judge", Setting((0.97, 0.97), judge="biased", paired=True), few),
        ]
    rows = []
    for name, setting, r in settings:
        planned = stop_at_first(setting, runs=r, looks=range(10, 151, 5), mode="planned", seed=1)
        live = stop_at_first(setting, runs=r, looks=range(10, 151, 5), mode="live", seed=1)
        rows.append(
            {
                "setting": name,
                "runs": r,
                "planned false claims": planned["claims"],
                "live false claims": live["claims"],
                "live covered": live["covered"],
            }
        )
        print(f"| {name} ({r} runs) | {planned['claims']:.3f} | {live['claims']:.3f} | {live['covered']:.3f} |")
    return rows


def part_paths(paths: int, rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    n_max = 500
    tables = {live: _table(n_max, ALPHA, live) for live in (True, False)}
    print(f"\n2a. Each rate's interval covering it at every n from 2 to {n_max} at once ({paths} runs a rate)")
    print("| rate | live | planned read at every n |")
    print("|---|---|---|")
    cover = []
    ns = np.arange(2, n_max + 1)
    for rate in (0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99):
        k = np.cumsum(rng.random((paths, n_max)) < rate, axis=1)[:, 1:]
        out = {}
        for live, (lo, hi) in tables.items():
            ok = (lo[ns, k] <= rate) & (rate <= hi[ns, k])
            out[live] = float(ok.all(axis=1).mean())
        cover.append({"rate": rate, "live": out[True], "planned": out[False]})
        print(f"| {rate:g} | {out[True]:.3f} | {out[False]:.3f} |")
    print(f"\n2b. False claims reading the difference after every label from 10 to {n_max} (equal rates, labels)")
    print("| rates | systems | live | planned read at every n |")
    print("|---|---|---|---|")
    claims = []
    looks = np.arange(10, n_max + 1)
    for rate in (0.01, 0.1, 0.5, 0.9, 0.99):
        for rho, kind in ((0.0, "independent"), (0.5, "paired, r = 0 used")):
            ka, kb = labels_paths((rate, rate), paths, n_max, rng, rho)
            out = {}
            for live in (True, False):
                lo, hi = difference_limits(ka[:, looks - 1], kb[:, looks - 1], looks[None, :], ALPHA, live)
                out[live] = float(((lo > 0) | (hi < 0)).any(axis=1).mean())
            claims.append({"rate": rate, "systems": kind, "live": out[True], "planned": out[False]})
            print(f"| {rate:g} | {kind} | {out[True]:.3f} | {out[False]:.3f} |")
    return cover, claims


def part_width() -> list[dict]:
    print("\n3. Width of the live interval over the planned one (alpha 0.05)")
    print("| labels | rate 0.5 (labels) | rate 0.1 (labels) | rate 0.02 (labels) | prediction-powered |")
    print("|---|---|---|---|---|")
    rows = []
    for n in (50, 150, 500):
        row = {"labels": n}
        for rate in (0.5, 0.1, 0.02):
            k = round(rate * n)
            lo, hi = sequential.binary_cs(k, n, alpha=ALPHA)
            plo, phi = planned_limits(k, n, ALPHA)
            row[f"rate {rate:g}"] = float((hi - lo) / (phi - plo))
        row["PPI"] = float(sequential.critical_value(n, alpha=ALPHA) / sps.t.ppf(1 - ALPHA / 2, n - 1))
        rows.append(row)
        print(f"| {n} | {row['rate 0.5']:.2f} | {row['rate 0.1']:.2f} | {row['rate 0.02']:.2f} | {row['PPI']:.2f} |")
    return rows


def part_saved(paths: int, rng: np.random.Generator) -> list[dict]:
    print("\n4. Labels a system to decide a difference around 0.5: live (read at ~200 looks) against planned")
    print(
        "| difference (points) | planned labels (power 0.8) | live: labels until decided (mean, capped "
        "where 80% have decided) | live median | saved |"
    )
    print("|---|---|---|---|---|")
    rows = []
    for d in (0.03, 0.05, 0.10, 0.20):
        n_plan = sequential.labels_to_tell(d, 0.5, alpha=ALPHA, live=False)
        n_max = 4 * n_plan
        looks = np.unique(np.round(np.geomspace(10, n_max, 200)).astype(int))
        runs = min(paths, max(200, int(4e7 // (n_max * 2))))
        ka, kb = labels_paths((0.5 + d / 2, 0.5 - d / 2), runs, n_max, rng)
        lo, _ = difference_limits(ka[:, looks - 1], kb[:, looks - 1], looks[None, :], ALPHA, True)
        hit = lo > 0
        first = np.where(hit.any(axis=1), looks[hit.argmax(axis=1)], np.inf)
        cap = float(np.quantile(first, 0.8))
        used = float(np.minimum(first, cap).mean())
        med = float(np.median(first))
        rows.append({"points": round(100 * d), "planned": n_plan, "live mean": used, "live median": med, "cap": cap})
        print(f"| {100 * d:.0f} | {n_plan} | {used:.0f} (cap {cap:.0f}) | {med:.0f} | {1 - used / n_plan:+.0%} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300, help="runs a setting through compare()")
    ap.add_argument("--paths", type=int, default=2000, help="runs a rate, labels alone (vectorised)")
    ap.add_argument("--quick", action="store_true", help="the issue's two settings only, for a first look")
    args = ap.parse_args()
    started = start()
    rng = np.random.default_rng(48)
    compared = part_compare(args.runs, args.quick)
    cover, claims = part_paths(args.paths, rng)
    width = part_width()
    saved = part_saved(args.paths, rng)
    record(
        "judges",
        "compare_sequential",
        {
            "false claims through compare()": compared,
            "coverage at every n (labels)": cover,
            "false claims reading every label (labels)": claims,
            "width live / planned": width,
            "labels to decide": saved,
        },
        argv=sys.argv,
        started=started,
    )


if __name__ == "__main__":
    main()
