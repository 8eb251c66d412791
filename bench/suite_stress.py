"""The whole test suite, run again and again on a busy machine: `make test` beside `stress-ng --cpu N`.

Each run is `CI=true make test` in a clean worktree of REF (a detached checkout under --dir, sharing this
checkout's virtual environment and, when present, `../shared`), so what is tested is what is committed, not
this checkout's files. REF is resolved again before each run, so a branch that moves between runs is tested at
its new commit; the table says which commit each run tested. The runs stop at the first failure (the run's log
is kept), or after --runs. Between runs the load is kept up: stress-ng runs for the whole series.

Prints, for each run: its commit, start and end (UTC), pytest's summary line, the wall time, the 1-minute load
average sampled every 30 s (mean and highest), and the machine's CPU over the run from /proc/stat: core-seconds busy
(stress-ng's included) and idle. With `--cpu 0` (a quiet machine) the idle core-seconds are what the suite leaves
unused, and `--idle-minutes` prints, minute by minute, the share of the cores left idle: where the run waits
rather than computes.

`--by-process` also samples every process on the machine (/proc/PID/stat every 0.3 s) and prints, after each run,
the CPU seconds by kind of process: the pytest processes, the apps they start (serve.py), Chromium, PostgreSQL's
backends, the workers, the embedded model, `cli.py`, other Python and everything else (the kernel's own threads
included). A process is counted from its first sample to its last, so one that lives less than 0.3 s is missed.

Before the first run it times a fixed piece of pure Python (ten million additions, best of five, in CPU seconds)
and prints it: CPU seconds are comparable between runs on one machine, and this figure says how fast the machine
was, so that runs on two machines can be compared.
Run: .venv/bin/python bench/suite_stress.py [--runs 5] [--cpu 4] [--ref main] [--dir /tmp/suite-stress]
     [--idle-minutes] [--by-process] [--make-args 'TEST_WORKERS=3']
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import record as bench_record

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"=+ (.*(?:passed|failed|error).*) in ([\d.]+)s")


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def now() -> str:
    return datetime.now(UTC).strftime("%H:%M:%S")


def checkout(ref: str, where: Path) -> str:
    """A clean detached worktree of `ref` at `where` (made once, then moved to the ref's current commit)."""
    commit = git("rev-parse", ref)
    if not (where / ".git").exists():
        where.parent.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", str(where), commit)
    else:
        git("checkout", "--detach", "--force", commit, cwd=where)
        git("clean", "-fdx", "-e", ".venv", "-e", ".pytest_cache", cwd=where)
    venv = where / ".venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    shared = ROOT.parent / "shared"
    if shared.exists() and not (where.parent / "shared").exists():
        (where.parent / "shared").symlink_to(shared)
    return commit


def cpu_ticks() -> tuple[int, int]:
    """The machine's busy and idle clock ticks since boot (/proc/stat: idle and iowait count as idle)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields[:8]) - idle, idle


class Load(threading.Thread):
    """The 1-minute load average every 30 s, and the machine's busy and idle ticks every `every` seconds."""

    def __init__(self, every: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.every, self.samples, self.ticks, self.stopped = every, [], [], threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stopped.is_set():
            if n % round(30 / self.every) == 0:
                self.samples.append(os.getloadavg()[0])
            self.ticks.append((time.monotonic(), *cpu_ticks()))
            n += 1
            self.stopped.wait(self.every)
        self.ticks.append((time.monotonic(), *cpu_ticks()))

    def core_seconds(self) -> tuple[float, float]:
        """Busy and idle core-seconds over the run."""
        hz = os.sysconf("SC_CLK_TCK")
        (_, b0, i0), (_, b1, i1) = self.ticks[0], self.ticks[-1]
        return (b1 - b0) / hz, (i1 - i0) / hz

    def idle_by_minute(self) -> list[float]:
        """The share of the cores' time left idle in each minute of the run."""
        out, start = [], self.ticks[0]
        for tick in self.ticks[1:]:
            if tick[0] - start[0] >= 60 or tick is self.ticks[-1]:
                busy, idle = tick[1] - start[1], tick[2] - start[2]
                out.append(idle / max(busy + idle, 1))
                start = tick
        return out


def machine_speed() -> float:
    """CPU seconds of ten million additions in pure Python, best of five: how fast this machine is now."""
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        total = 0
        for i in range(10_000_000):
            total += i
        best = min(best, time.process_time() - t)
    return best


def process_kind(pid: int) -> str:
    """What a process is, from its command line: the kinds the suite starts, or its own name."""
    try:
        argv = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"
    line = " ".join(argv)
    # pytest by its exact signatures (an xdist worker retitles itself "[pytest-xdist running] tests/..."), then
    # what a process runs: a test's files under /tmp/pytest-of-... must not make its `cli.py` count as pytest
    if line.startswith("[pytest-xdist") or "exec(eval(sys.stdin" in line or argv[1:3] == ["-m", "pytest"]:
        return "pytest processes"
    if "serve.py" in line or "streamlit run" in line:
        return "the apps (serve.py, streamlit run)"
    if "services.worker" in line:
        return "workers (services.worker)"
    if "llama_cpp" in line:
        return "the embedded model (llama_cpp.server)"
    if "cli.py" in line:
        return "cli.py"
    if "chrom" in comm or "chrom" in (argv[0] if argv else ""):
        return "Chromium"
    if comm.startswith("postgres") or (argv and argv[0].startswith("postgres")):
        return "PostgreSQL"
    if "playwright" in line and comm == "node":
        return "Playwright's driver (node)"
    if comm.startswith("python"):
        return "other Python"
    if comm.startswith("stress-ng"):
        return "stress-ng"
    return "other (kernel threads, make, pip, shells)"


class ByProcess(threading.Thread):
    """Every process's CPU seconds (utime + stime), sampled every 0.3 s, summed by kind at each process's end."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopped, self.totals = threading.Event(), {}
        self.tick = os.sysconf("SC_CLK_TCK")

    def _sample(self) -> dict[tuple[int, str], float]:
        seen = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            rest = stat[stat.rindex(")") + 2 :].split()
            seen[(int(name), rest[19])] = (int(rest[11]) + int(rest[12])) / self.tick  # keyed by pid and start
        return seen

    def run(self) -> None:
        kinds: dict[tuple[int, str], str] = {}
        first = self._sample()  # what ran before the run is counted from here on
        last = dict(first)
        totals: dict[str, float] = {}
        while not self.stopped.wait(0.3):
            seen = self._sample()
            for key in seen.keys() - kinds.keys():
                kinds[key] = process_kind(key[0])
            for key in last.keys() - seen.keys():  # ended since the last sample
                kind = kinds.get(key) or process_kind(key[0])
                totals[kind] = totals.get(kind, 0.0) + last[key] - first.get(key, 0.0)
            last = seen
        for key, cpu in last.items():
            kind = kinds.get(key) or process_kind(key[0])
            totals[kind] = totals.get(kind, 0.0) + cpu - first.get(key, 0.0)
        self.totals = totals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=4, help="stress-ng --cpu N (0: no stress-ng)")
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/suite-stress/checkout"))
    ap.add_argument("--idle-minutes", action="store_true", help="print the idle share of each minute of each run")
    ap.add_argument("--by-process", action="store_true", help="print each run's CPU seconds by kind of process")
    ap.add_argument("--make-args", default="", help="more arguments for make, e.g. 'TEST_WORKERS=3'")
    args = ap.parse_args()
    if args.cpu and not shutil.which("stress-ng"):
        sys.exit("stress-ng not found: install it (Debian: apt-get install stress-ng) or pass --cpu 0")
    if not (ROOT / ".venv").exists():
        sys.exit("no .venv in this checkout: run `make install-dev install-embeddings` first")
    logs = args.dir.parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    began, rows, failed = bench_record.start(), [], False
    speed = machine_speed()
    print(f"machine speed: ten million additions in {speed:.2f} CPU s (best of five)", flush=True)
    stress = subprocess.Popen(["stress-ng", "--cpu", str(args.cpu), "--quiet"]) if args.cpu else None
    print("| run | commit | when (UTC) | result | wall | load mean / max | core-s busy / idle |", flush=True)
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    try:
        for run in range(1, args.runs + 1):
            commit = checkout(args.ref, args.dir)
            log = logs / f"run{run}.log"
            load, start, t0 = Load(), now(), time.monotonic()
            load.start()
            procs = ByProcess() if args.by_process else None
            if procs:
                procs.start()
            with log.open("w") as out:
                rc = subprocess.run(
                    ["make", "test", *args.make_args.split()],
                    cwd=args.dir,
                    env={**os.environ, "CI": "true"},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                ).returncode
            load.stopped.set()
            if procs:
                procs.stopped.set()
                procs.join()
            wall = time.monotonic() - t0
            found = SUMMARY.findall(log.read_text(errors="replace"))
            summary = (
                f"{found[-1][0]} (pytest {float(found[-1][1]) / 60:.1f} min)" if found else f"exit {rc}, no summary"
            )
            mean = sum(load.samples) / max(len(load.samples), 1)
            busy, idle = load.core_seconds()
            print(
                f"| {run} | {commit[:7]} | {start}-{now()} | {summary} | {wall / 60:.1f} min "
                f"| {mean:.1f} / {max(load.samples, default=0):.1f} | {busy:,.0f} / {idle:,.0f} |",
                flush=True,
            )
            rows.append({"run": run, "commit": commit[:7], "result": summary, "wall min": wall / 60, "load mean": mean})
            if args.idle_minutes:
                print("idle share by minute: " + " ".join(f"{x:.2f}" for x in load.idle_by_minute()), flush=True)
            if procs:
                total = sum(procs.totals.values())
                print(f"CPU seconds by kind of process ({total:,.0f} in all):", flush=True)
                for kind, cpu in sorted(procs.totals.items(), key=lambda kv: -kv[1]):
                    print(f"  {cpu:8,.0f}  {cpu / max(total, 1e-9):4.0%}  {kind}", flush=True)
            if rc != 0:
                print(f"run {run} failed: its log is {log}", flush=True)
                failed = True
                break
    finally:
        if stress:
            stress.terminate()
            stress.wait()
    figures = {"ten million additions, CPU s": speed, f"make test beside stress-ng --cpu {args.cpu}": rows}
    bench_record.record("suite", "suite_stress", figures, started=began)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
