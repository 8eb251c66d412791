"""Home's demo workspace: the CPU seconds, wall seconds, peak memory and database size of building it, and of
opening it a second time (read from the cache).

The workspace is built into a temporary data folder, as "Open the demo workspace" builds it (services/demo), with
no network and no model: the evidence checker's batch, the score column, the labels, the comparisons, a ConsEval
study and a DHP benchmark against the scripted raters. Run it on a quiet machine without `nice` for the figures the
docs quote; on a busy one the record keeps the load average beside them.

Run: .venv/bin/python bench/demo_build.py [--small]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from record import record, start  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="the tests' small workspace instead of the app's")
    args = ap.parse_args()
    started = start()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DATA_DIR"] = tmp
        from services.demo import workspace
        from services.demo.build import FULL, SMALL

        size = SMALL if args.small else FULL
        cpu0, wall0 = time.process_time(), time.perf_counter()
        tour = workspace.ensure(size=size)
        build_cpu, build_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        cpu1 = time.process_time()
        workspace.ensure(size=size)
        again_ms = (time.process_time() - cpu1) * 1000
        size_mb = workspace.path().stat().st_size / 1e6
    figures = {
        "items": tour.n_items,
        "labelled items": tour.n_labelled,
        "CPU s building (imports included)": round(build_cpu, 1),
        "CPU s inside the build": tour.cpu_seconds,
        "wall s building": round(build_wall, 1),
        "CPU ms a second open": round(again_ms, 1),
        "database MB": round(size_mb, 2),
    }
    for k, v in figures.items():
        print(f"{k:36} {v}")
    record("pages", "demo_build", figures, argv=sys.argv, started=started)


if __name__ == "__main__":
    main()
