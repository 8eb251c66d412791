"""Where a page's script spends its time: cProfile around the page's script thread in Streamlit's AppTest.

The page (switched to from app.py, as tests/app does) runs against the database in $DATABASE_URL (seed one with
`bench/pages_small.py --keep DIR` or bench/scale_pages.py), in one process: the first run (cold: imports and
caches empty), then more runs in new AppTests (warm: st.cache_data filled). For each run it prints the process's
CPU seconds and the functions with the most cumulative time in the script thread.

Run: DATABASE_URL=sqlite:////tmp/x.db .venv/bin/python bench/profile_page.py pages/13_Judges.py [key=value ...]
     [--top 30] [--runs 2] [--preload] [--recompute]
     --preload: import serve.py's PRELOAD first, as `make run` does
     --recompute: empty st.cache_data before each later run, as a visit to a running batch whose stamp changed
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def profiled_threads(profiles: list) -> None:
    """Profile every thread started from now on (AppTest runs the page's script in a thread of its own)."""

    def hook(*_):
        sys.setprofile(None)
        prof = cProfile.Profile()
        profiles.append(prof)
        prof.enable()

    threading.setprofile(hook)


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("page")
    ap.add_argument("params", nargs="*", help="query parameters, key=value")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--preload", action="store_true")
    ap.add_argument(
        "--recompute",
        action="store_true",
        help="empty st.cache_data before each later run: a visit to a running batch whose stamp has changed",
    )
    args = ap.parse_args()
    os.environ.setdefault("CONSISTENCY_SPAWN_WORKER", "0")
    from streamlit.testing.v1 import AppTest

    if args.preload:
        import serve

        c0 = time.process_time()
        serve.preload()
        print(f"preload: {time.process_time() - c0:.2f} s CPU")
    for i in range(args.runs):
        if args.recompute and i:
            import streamlit as st

            st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=args.timeout)
        at.switch_page(args.page)
        for kv in args.params:
            k, v = kv.split("=", 1)
            at.query_params[k] = v
        profiles: list = []
        profiled_threads(profiles)
        t0, c0 = time.perf_counter(), time.process_time()
        at.run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        threading.setprofile(None)
        errs = [e.value for e in at.exception]
        kind = "cold" if i == 0 else "recomputed" if args.recompute else "warm"
        print(
            f"\n== run {i + 1} ({kind}): process CPU {cpu:.2f} s · wall {wall:.2f} s "
            f"(load {os.getloadavg()[0]:.1f}) · peak RSS so far {_peak_mb():.0f} MB · RSS now {_rss_mb():.0f} MB"
            + (f" · exception {errs}" if errs else "")
        )
        out = io.StringIO()
        stats = None
        for prof in profiles:
            prof.disable()
            prof.create_stats()
            if prof.stats:
                stats = pstats.Stats(prof, stream=out) if stats is None else stats.add(prof)
        if stats is not None:
            stats.sort_stats("cumulative").print_stats(args.top)
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


if __name__ == "__main__":
    main()
