"""Benchmark records: every bench writes its figures, with how and where they were made, as one JSON file.

    from record import record, start          # bench/ is on sys.path when a bench runs as a script
    started = start()
    ... the work ...
    record("judges", "compare_coverage", {"PPI pooled coverage": 0.951}, argv=sys.argv, started=started)

writes bench/results/<area>/<name>-<commit>-<machine>.json with the command and its options, the commit (and
whether the tree had uncommitted changes), the date, the machine (host name, CPU count, Python), the load
average, the CPU seconds (this process and its children, from `resource.getrusage`), the wall seconds, the
peak memory (`ru_maxrss`) and the figures. A run on the same commit and machine replaces the earlier record.
`python bench/render.py` turns the newest record of each bench into docs/benchmarks.md.

Figures are a dict: a label (with its unit, "CPU s a dataset") to a number or a short text, or to a list of
rows (dicts with the same keys), which the page shows as a table of its own. `plot` draws one of those tables:
`{"table": "by items", "x": "items", "y": ["CPU s"], "group": "method"}` (group optional: one line per value;
`"log_x": True` for a log scale of x, linear by default).
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class Started:
    """When a bench started: the wall clock and the CPU seconds used so far (this process and its children)."""

    wall: float
    cpu: float


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _peak_mb() -> float:
    """The larger peak resident memory of this process and of its largest child (kB on Linux, bytes on macOS)."""
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def start() -> Started:
    """Mark the start of the measured work: `record` then reports the CPU and wall seconds since."""
    return Started(wall=time.time(), cpu=_cpu_seconds())


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def machine() -> dict[str, Any]:
    """The machine a figure was measured on."""
    return {
        "host": socket.gethostname() or "unknown",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.machine()}",
    }


def command(argv: list[str]) -> str:
    """The command that makes the figures, from the repository root: `python bench/x.py --opt value`."""
    script, *rest = argv or ["?"]
    path = Path(script)
    try:
        script = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        script = path.as_posix()
    return " ".join(["python", script, *(_quote(a) for a in rest)])


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def _plain(value: Any) -> Any:
    """A figure as JSON: numbers, text, lists of rows; numpy scalars become Python ones."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if hasattr(value, "item"):  # numpy scalar
        return _plain(value.item())
    return str(value)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def record(
    area: str,
    name: str,
    figures: dict[str, Any],
    *,
    argv: list[str] | None = None,
    started: Started | float | None = None,
    plot: dict[str, Any] | list[dict[str, Any]] | None = None,
    note: str = "",
    results: Path | None = None,
) -> Path:
    """Write one bench run's record and return its path (see the module's docstring for the fields)."""
    if not NAME.match(area) or not NAME.match(name):
        raise ValueError(f"area and name are lower-case words with - _ . (got {area!r}, {name!r})")
    if not figures:
        raise ValueError("a record needs at least one figure")
    now = time.time()
    if isinstance(started, Started):
        wall, cpu = now - started.wall, _cpu_seconds() - started.cpu
    elif isinstance(started, int | float):
        wall, cpu = now - started, _cpu_seconds()
    else:
        wall, cpu = None, _cpu_seconds()
    commit = _git("rev-parse", "--short=10", "HEAD") or "unknown"
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    host = machine()
    plots = [plot] if isinstance(plot, dict) else list(plot or [])
    for p in plots:
        rows = figures.get(p.get("table", ""))
        if not isinstance(rows, list) or not rows or p.get("x") not in rows[0]:
            raise ValueError(f"plot {p!r} names no table of figures with its x column")
    body = {
        "area": area,
        "name": name,
        "command": command(list(sys.argv if argv is None else argv)),
        "commit": commit,
        "uncommitted_changes": dirty,
        "date": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
        "machine": host,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu_seconds": round(cpu, 3),
        "wall_seconds": None if wall is None else round(wall, 3),
        "peak_memory_mb": round(_peak_mb(), 1),
        "figures": _plain(figures),
        "plots": _plain(plots),
        "note": note,
    }
    folder = (results or RESULTS) / area
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{commit}-{_slug(host['host'])}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"record: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    return path


def load(results: Path | None = None) -> list[dict[str, Any]]:
    """Every record under bench/results, each with its file's path relative to the results folder."""
    base = results or RESULTS
    out = []
    for path in sorted(base.glob("*/*.json")):
        body = json.loads(path.read_text(encoding="utf-8"))
        body["file"] = path.relative_to(base).as_posix()
        out.append(body)
    return out


def newest(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest record of each bench (area and name), ordered by area then name."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        key = (r["area"], r["name"])
        if key not in best or (r["date"], r["file"]) > (best[key]["date"], best[key]["file"]):
            best[key] = r
    return [best[k] for k in sorted(best)]
