"""Where the test suite's time goes, from the last run's figures that pytest keeps in .pytest_cache.

Every run records each test's duration (setup, call and teardown, wall seconds) and its CPU seconds (its process
and the children it reaped), tests/support/schedule.py. This prints the CPU and wall seconds by kind (the browser
suite, the embedded model, the tests that start processes, the rest) and by file, the slowest tests, and the run
`make test` would make of them on W processes: the groups handed out longest first, as its scheduler does, each
process taking the next group when it is free. With each test's recorded wall time the simulated run should come
near the real one; with each test's CPU seconds instead it estimates a quiet machine, where a test waits for
nothing but the CPU (an underestimate for tests that wait on timeouts, an overestimate for the ones whose
app, browser and worker use both cores at once).
Run: .venv/bin/python bench/suite_times.py [--workers 2] [--top 10] [--cache .pytest_cache]
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.schedule import CPU_KEY, DURATIONS_KEY, kind, shared_start_up  # noqa: E402


def load(cache: Path, key: str) -> dict[str, float]:
    path = cache / "v" / key
    return json.loads(path.read_text()) if path.exists() else {}


def simulate(
    groups: dict[str, list[str]], seconds: dict[str, float], workers: int, *, by_size: bool = False
) -> tuple[float, list[float]]:
    """The run's wall time and each process's busy time: groups longest first (`by_size`: most tests first, as
    pytest-xdist orders them), each to the first free process."""
    total = {g: sum(seconds.get(n, 0.0) for n in ids) for g, ids in groups.items()}
    free = [(0.0, w) for w in range(workers)]
    busy = [0.0] * workers
    for g in sorted(groups, key=(lambda g: -len(groups[g])) if by_size else (lambda g: -total[g])):
        at, w = heapq.heappop(free)
        busy[w] += total[g]
        heapq.heappush(free, (at + total[g], w))
    return max(t for t, _ in free), busy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--cache", type=Path, default=ROOT / ".pytest_cache")
    args = ap.parse_args()
    wall, cpu = load(args.cache, DURATIONS_KEY), load(args.cache, CPU_KEY)
    ids = [n for n in wall if (ROOT / n.split("::", 1)[0]).exists()]
    if not ids:
        sys.exit(f"no test durations in {args.cache}: run the tests first")

    by_kind: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    by_file: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    groups: dict[str, list[str]] = defaultdict(list)
    for n in ids:
        for table, key in ((by_kind, kind(n, ROOT)), (by_file, n.split("::", 1)[0])):
            row = table[key]
            row[0] += 1
            row[1] += wall[n]
            row[2] += cpu.get(n, 0.0)
        groups[shared_start_up(n, ROOT) or n].append(n)

    print(f"{len(ids)} tests with a recorded duration, {sum(n in cpu for n in ids)} with their CPU seconds")
    print(f"\n{'kind':<12}{'tests':>7}{'wall s':>10}{'CPU s':>10}")
    for k, (count, w, c) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        print(f"{k:<12}{count:>7}{w:>10.0f}{c:>10.0f}")
    total_wall, total_cpu = sum(wall[n] for n in ids), sum(cpu.get(n, 0.0) for n in ids)
    print(f"{'all':<12}{len(ids):>7}{total_wall:>10.0f}{total_cpu:>10.0f}")

    print(f"\nthe {args.top} files with the most wall seconds")
    print(f"{'file':<64}{'tests':>7}{'wall s':>10}{'CPU s':>10}")
    for f, (count, w, c) in sorted(by_file.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{f:<64}{count:>7}{w:>10.1f}{c:>10.1f}")

    print(f"\nthe {args.top} slowest tests (all phases)")
    for n in sorted(ids, key=lambda n: -wall[n])[: args.top]:
        print(f"{wall[n]:>8.1f} s wall {cpu.get(n, float('nan')):>7.1f} s CPU  {n}")

    longest = max(groups, key=lambda g: sum(wall[n] for n in groups[g]))
    print(f"\nthe longest group: {longest} ({sum(wall[n] for n in groups[longest]):.0f} s wall)")
    # The schedule before each browser module was a group of its own: the browser suite one group, and the groups
    # handed out by their number of tests.
    before: dict[str, list[str]] = defaultdict(list)
    for n in ids:
        before["tests/e2e" if n.startswith("tests/e2e/") else shared_start_up(n, ROOT) or n].append(n)
    for label, seconds in (("recorded wall", wall), ("CPU seconds (a quiet machine)", cpu)):
        for name, grouping, by_size in (("now", groups, False), ("before", before, True)):
            end, busy = simulate(grouping, seconds, args.workers, by_size=by_size)
            strands = ", ".join(f"{b / 60:.1f}" for b in busy)
            what = f"{args.workers} processes, each test's {label}, schedule {name}"
            print(f"{what}: ends at {end / 60:.1f} min (busy {strands})")


if __name__ == "__main__":
    main()
