"""Time of `cli.py dhp stats` on the paper's scale: 6 datasets x 12 perturbations x 4 metrics x 100 items.

    .venv/bin/python bench/dhp_stats.py [--seed S] [--repeats N]

Writes six synthetic scores CSVs (means of 5 ratings from 1 to 5, the perturbed ones lower by a varying
amount, so there are ties and zero differences as with real evaluators) and an EW.json, then times
`dhp stats` on each: in this process (the statistics and file handling) and as a fresh `python cli.py`
process (what a scheduler pays, imports included). Prints the figures; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402

import cli  # noqa: E402

N_DATASETS, N_PERTURBATIONS, N_METRICS, N_ITEMS, R = 6, 12, 4, 100, 5
LEVELS = ["character"] * 4 + ["word"] * 4 + ["sentence"] * 4
METRICS = ["Coherence", "Consistency", "Fluency", "Relevance"]


def make_scores(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    base = rng.integers(3, 6, size=(N_ITEMS, N_METRICS, R)).mean(axis=2)  # original: means of 5 ratings
    for p in range(N_PERTURBATIONS):
        drop = rng.uniform(0, 1.2)
        for m, metric in enumerate(METRICS):
            noise = rng.integers(-1, 2, size=(N_ITEMS, R)).mean(axis=1)
            pert = np.clip(base[:, m] - drop * rng.integers(0, 2, N_ITEMS) + 0.2 * noise, 1, 5).round(1)
            for i in range(N_ITEMS):
                rows.append((f"i{i}", f"p{p}", LEVELS[p], metric, base[i, m], pert[i]))
    return pd.DataFrame(rows, columns=["item_id", "perturbation", "level", "metric", "original", "perturbed"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="timed repetitions per dataset (default 3)")
    args = ap.parse_args()
    began = start()
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        ew = {
            f"p{p}": dict(zip(METRICS, np.random.default_rng(p).dirichlet(np.ones(4)).round(3), strict=True))
            for p in range(N_PERTURBATIONS)
        }
        (tmpd / "ew.json").write_text(json.dumps({k: {m: float(w) for m, w in v.items()} for k, v in ew.items()}))
        paths = []
        for d in range(N_DATASETS):
            path = tmpd / f"scores_{d}.csv"
            make_scores(args.seed + d).to_csv(path, index=False)
            paths.append(path)
        rows = sum(1 for p in paths for _ in p.open()) - N_DATASETS
        print(
            f"{N_DATASETS} datasets x {N_PERTURBATIONS} perturbations x {N_METRICS} metrics x {N_ITEMS} items "
            f"= {rows} score pairs, {N_DATASETS * N_PERTURBATIONS * N_METRICS} Wilcoxon tests"
        )
        runs = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            for d, path in enumerate(paths):
                out = tmpd / f"out_{d}.json"
                argv = ["dhp", "stats", "--scores", str(path), "--weights", str(tmpd / "ew.json"), "--output", str(out)]
                code = cli.main(argv)
                if code != 0:
                    print(f"dhp stats failed on dataset {d} (exit {code})")
                    return 1
            runs.append(time.perf_counter() - started)
        print(
            f"in process, all 6 datasets: median {statistics.median(runs):.3f} s over {args.repeats} runs "
            f"(min {min(runs):.3f} s, {statistics.median(runs) / N_DATASETS * 1000:.0f} ms a dataset)"
        )
        cold = []
        for d, path in enumerate(paths):
            started = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "cli.py"),
                    "dhp",
                    "stats",
                    "--scores",
                    str(path),
                    "--weights",
                    str(tmpd / "ew.json"),
                    "--output",
                    str(tmpd / f"cold_{d}.json"),
                ],
                check=True,
                cwd=ROOT,
                capture_output=True,
            )
            cold.append(time.perf_counter() - started)
        print(
            f"fresh `python cli.py dhp stats` processes, all 6 datasets: {sum(cold):.2f} s "
            f"(median {statistics.median(cold):.2f} s a dataset, imports included)"
        )
        res = json.loads((tmpd / "out_0.json").read_text())
        print(
            f"dataset 0: D_avg {res['D_avg']:.2f}, D_min {res['D_min']:.2f}, D_EW_avg {res['D_EW_avg']:.2f}, "
            f"D_EW_min {res['D_EW_min']:.2f}"
        )
    figures = {
        "score pairs": rows,
        f"in process, all 6 datasets: median of {args.repeats} (s)": statistics.median(runs),
        "fresh cli.py processes, all 6 datasets (s)": sum(cold),
        "fresh cli.py process, median a dataset (s)": statistics.median(cold),
    }
    record("dhp", "dhp_stats", figures, started=began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
