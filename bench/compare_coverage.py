"""Systems compared on simulated data with known true rates: how often each system's interval covers its rate,
how often each difference's adjusted interval covers the true difference, and how often a difference is called
significant with the wrong sign (services.judges.compare; the scenarios of tests/support/compare_sim.py).

    .venv/bin/python bench/compare_coverage.py [--draws 300] [--alpha 0.05]

Each scenario: 3 systems at rates 0.03-0.97, 30-100 labels and 1,000-10,000 items each (drawn per draw),
an informative or a useless judge, systems over the same references (paired) or not. Prints one table row
per scenario and quantity, then the pooled figures, the CPU seconds and the peak memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from record import record, start

from tests.support.compare_sim import SCENARIOS, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    started, began = time.process_time(), start()
    df = run(SCENARIOS, draws=args.draws, alpha=args.alpha)
    cpu = time.process_time() - started
    print(f"{args.draws} draws per scenario, alpha {args.alpha}; coverage of each interval (PPI and classical at")
    print(f"{1 - args.alpha:.0%}, differences at {1 - args.alpha:.0%} / 3 pairs, Bonferroni)\n")
    rows = []
    print(f"| {'scenario':34} | rates | {'PPI':>16} | {'classical':>16} | {'differences':>17} | signif. |")
    print(f"|{'-' * 36}|-------|{'-' * 18}|{'-' * 18}|{'-' * 19}|---------|")
    for sc in SCENARIOS:
        d = df[df.scenario == sc.name]
        cells = []
        for kind in ("PPI", "classical", "difference"):
            cov = d[d.kind == kind].groupby("what").covered.mean()
            cells.append(f"{cov.min():.3f} - {cov.max():.3f}")
        diff = d[(d.kind == "difference") & (d.truth != 0)]
        rates = "/".join(f"{r:g}" for r in sc.rates)
        print(
            f"| {sc.name:34} | {rates} | {cells[0]:>16} | {cells[1]:>16} | {cells[2]:>17} | "
            f"{diff.significant.mean():7.2f} |"
        )
        rows.append(
            {
                "scenario": sc.name,
                "rates": rates,
                "PPI": cells[0],
                "classical": cells[1],
                "differences": cells[2],
                "significant": round(float(diff.significant.mean()), 2),
            }
        )
    diff = df[df.kind == "difference"]
    unequal = diff[diff.truth != 0]
    equal = diff[diff.truth == 0]
    print()
    for kind in ("PPI", "classical"):
        k = df[df.kind == kind]
        worst = k.groupby(["scenario", "what"]).covered.mean()
        print(f"{kind:10} pooled coverage {k.covered.mean():.3f} (n={len(k)}), worst system {worst.min():.3f}")
    print(f"differences pooled coverage {diff.covered.mean():.3f} (n={len(diff)})")
    print(
        f"significant with the wrong sign: {unequal.wrong_sign.mean():.4f} of {len(unequal)} unequal pairs; "
        f"significant where the rates are equal: {equal.significant.mean():.4f} of {len(equal)}"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {f"{kind} pooled coverage": float(df[df.kind == kind].covered.mean()) for kind in ("PPI", "classical")}
    figures |= {
        "differences pooled coverage": float(diff.covered.mean()),
        "significant with the wrong sign (unequal pairs)": float(unequal.wrong_sign.mean()),
        "significant where the rates are equal": float(equal.significant.mean()),
        "CPU ms a comparison": cpu / (len(SCENARIOS) * args.draws) * 1000,
        f"coverage by scenario ({args.draws} draws, alpha {args.alpha})": rows,
    }
    record("judges", "compare_coverage", figures, started=began)
    print(f"CPU {cpu:.1f} s ({cpu / (len(SCENARIOS) * args.draws) * 1000:.0f} ms a comparison); peak {peak:.0f} MB")


if __name__ == "__main__":
    main()
