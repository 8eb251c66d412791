"""What keeping the owner signed in costs a page run: deriving the cookie's key (once per process) and checking
a cookie against the database (every run). Prints figures; `python bench/owner_session.py [n]`."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start

from db.engine import make_engine
from services import owners


def main(n: int = 300) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/bench.db")
        began = start()
        started = time.perf_counter()
        cookie = owners.new_owner_session(engine, password="a bench password")
        first_ms = 1000 * (time.perf_counter() - started)
        print(f"first sign-in (key derivation + insert): {first_ms:.0f} ms")
        times = []
        for _ in range(n):
            t = time.perf_counter()
            assert owners.session_owner(engine, cookie, password="a bench password")
            times.append(1000 * (time.perf_counter() - t))
        q = statistics.quantiles(times, n=20)
        print(f"cookie check per page run, n = {n}: median {statistics.median(times):.2f} ms, p95 {q[18]:.2f} ms")
        figures = {
            "first sign-in, key derivation and insert (ms)": first_ms,
            f"cookie check per page run, median of {n} (ms)": statistics.median(times),
            f"cookie check per page run, p95 of {n} (ms)": q[18],
        }
        record("pages", "owner_session", figures, started=began)
        engine.dispose()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
