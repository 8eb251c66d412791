"""Render docs/benchmarks.md (and its plots, docs/benchmarks/*.svg) from the newest record of each bench, and
bench/README.md (what bench/ holds) from the index in bench/run.py.

    python bench/render.py            # write the page and its plots
    python bench/render.py --check    # exit 1 when they differ from what the records give

The page is generated: edit the records (by running a bench) or this script, never the page. The plots are
SVG drawn here from the numbers, so the page and its pictures follow from the records byte for byte
(tests/test_benchmarks_page.py checks that they do).
"""

from __future__ import annotations

import argparse
import html
import math
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import RESULTS, ROOT, load, newest

PAGE = ROOT / "docs" / "benchmarks.md"
PLOTS = ROOT / "docs" / "benchmarks"
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def _index() -> dict[str, Any]:
    """The benches by area, from bench/run.py (the one list of them), or nothing when it is missing."""
    try:
        import run
    except ImportError:
        return {}
    return run.BY_AREA


def fmt(value: Any) -> str:
    """A figure as the page shows it: thousands separated, about three significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value):
            return f"{value:g}"
        size = abs(value)
        if size >= 100:
            return f"{value:,.0f}"
        if size >= 10:
            return f"{value:.1f}"
        if size >= 0.01:
            return f"{value:.3g}"
        return f"{value:.2g}"
    return str(value)


def _cell(value: Any) -> str:
    return fmt(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _plot_name(rec: dict[str, Any], i: int) -> str:
    return f"{rec['area']}-{rec['name']}" + (f"-{i + 1}" if i else "") + ".svg"


def _ticks(low: float, high: float, n: int = 5) -> list[float]:
    if high <= low:
        high = low + 1
    step = 10 ** math.floor(math.log10((high - low) / n))
    for mult in (1, 2, 2.5, 5, 10):
        if (high - low) / (step * mult) <= n:
            step *= mult
            break
    first = math.floor(low / step) * step
    return [round(first + k * step, 10) for k in range(int(math.ceil((high - first) / step)) + 1)]


def svg_plot(rec: dict[str, Any], spec: dict[str, Any]) -> str:
    """A line chart of one table of a record: x against each y column (and each group); log x when asked."""
    rows = rec["figures"][spec["table"]]
    x, ys, group = spec["x"], list(spec.get("y") or []), spec.get("group")
    lines: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        for y in ys:
            if not isinstance(row.get(x), int | float) or not isinstance(row.get(y), int | float):
                continue
            label = " ".join(str(p) for p in ((row.get(group),) if group else ()) + ((y,) if len(ys) > 1 else ()))
            lines.setdefault(label or y, []).append((float(row[x]), float(row[y])))
    points = [p for pts in lines.values() for p in pts]
    longest = max((len(label) for label in lines), default=10)
    left, right, top, bottom = 70, max(170, 50 + 7 * longest), 40, 50  # room for the legend's longest label
    w, h = left + 400 + right, max(360, top + 18 * len(lines) + 20)  # and for one legend line a series
    title = spec.get("title") or f"{', '.join(ys)} against {x}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14">{html.escape(title)}</text>',
    ]
    if not points:
        return "\n".join([*out, "</svg>", ""])
    xs = [p[0] for p in points]
    log_x = bool(spec.get("log_x")) and min(xs) > 0  # linear by default: a straight line is linear growth
    fx = math.log10 if log_x else float
    x_low, x_high = fx(min(xs)), fx(max(xs))
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    y_ticks = _ticks(min(0.0, *(p[1] for p in points)), max(p[1] for p in points))
    y_low, y_high = y_ticks[0], y_ticks[-1]
    pw, ph = w - left - right, h - top - bottom

    def px(v: float) -> float:
        return round(left + (fx(v) - x_low) / (x_high - x_low) * pw, 1)

    def py(v: float) -> float:
        return round(top + ph - (v - y_low) / (y_high - y_low) * ph, 1)

    out.append('<g stroke="#ccc">')
    for t in y_ticks:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(t)}" y2="{py(t)}"/>')
    out.append("</g>")
    for t in y_ticks:
        out.append(f'<text x="{left - 6}" y="{py(t) + 4}" text-anchor="end">{html.escape(fmt(t))}</text>')
    last = -1e9
    for v in sorted(set(xs)):
        if px(v) - last < 48:  # too close to the label before it to be read
            continue
        last = px(v)
        out.append(f'<text x="{px(v)}" y="{top + ph + 18}" text-anchor="middle">{html.escape(fmt(v))}</text>')
    axis_x = f"{x} (log scale)" if log_x else x
    out.append(f'<text x="{left + pw / 2}" y="{h - 10}" text-anchor="middle">{html.escape(axis_x)}</text>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="#333"/>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="#333"/>')
    for i, (label, pts) in enumerate(lines.items()):
        colour = COLOURS[i % len(COLOURS)]
        dash = ("", ' stroke-dasharray="6,3"', ' stroke-dasharray="2,3"')[i // len(COLOURS) % 3]
        pts = sorted(pts)
        path = " ".join(f"{px(a)},{py(b)}" for a, b in pts)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{path}"/>')
        out += [f'<circle cx="{px(a)}" cy="{py(b)}" r="3" fill="{colour}"/>' for a, b in pts]
        ly = top + 10 + 18 * i
        out.append(
            f'<line x1="{left + pw + 12}" x2="{left + pw + 32}" y1="{ly}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{left + pw + 38}" y="{ly + 4}">{html.escape(label)}</text>')
    out += ["</svg>", ""]
    return "\n".join(out)


def _run_line(rec: dict[str, Any]) -> list[str]:
    m = rec["machine"]
    load = rec.get("load_average") or []
    cells = [
        f"`{rec['command']}`",
        f"{rec['commit']}{'+' if rec.get('uncommitted_changes') else ''}",
        rec["date"][:10],
        f"{m.get('host')} ({m.get('cpus')} CPUs, Python {m.get('python')})",
        fmt(load[0]) if load else "",
        fmt(rec.get("cpu_seconds")),
        "" if rec.get("wall_seconds") is None else fmt(rec["wall_seconds"]),
        fmt(rec.get("peak_memory_mb")),
    ]
    return [c.replace("|", "\\|") for c in cells]


def index_page(index: dict[str, Any]) -> str:
    """bench/README.md: what bench/ holds, by area, from the index of bench/run.py."""
    text = [
        "# bench/",
        "",
        "What it holds: the benches that measure the product, grouped by area, each with what it measures; the",
        "record helper (`record.py`), the renderer of [docs/benchmarks.md](../docs/benchmarks.md) (`render.py`) and",
        "the index and runner (`run.py`, where this list comes from; `python bench/render.py` regenerates this",
        "file). Run one bench with `python bench/run.py NAME [ARGS...]`, list them with `python bench/run.py --list`;",
        "each writes a record under `bench/results/`. How to run and add benches:",
        "[the development guide](../docs/development.md#benchmarks).",
    ]
    for info in index.values():
        text += ["", f"## {info['title']}", "", info["about"], ""]
        rows = [[f"`{b['script']}`", b["what"]] for b in info["benches"]]
        text += _table(["Bench", "What it measures"], rows)
    return "\n".join(text) + "\n"


def render(
    results: Path | None = None, index: dict[str, Any] | None = None, docs: Path | None = None
) -> dict[Path, str]:
    """The page and its plots (under docs/), each path with its text, from the newest record of each bench."""
    page, plots = _paths(docs)
    records = newest(load(results or RESULTS))
    index = _index() if index is None else index
    areas: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        areas.setdefault(rec["area"], []).append(rec)
    order = [a for a in index if a in areas or index[a]["benches"]] + sorted(set(areas) - set(index))
    out: dict[Path, str] = {}
    text = [
        "# Benchmarks",
        "",
        "What this page is for: the current figures of every bench, each with the command that makes it, the commit",
        "and machine it was measured on, the load at the time, the CPU seconds and the peak memory. It is generated",
        "by `python bench/render.py` from the records under `bench/results/` (one JSON file per bench, commit and",
        "machine, written by each bench through `bench/record.py`); do not edit it by hand. How to run the benches:",
        "[the development guide](development.md#benchmarks); what each bench measures: `python bench/run.py --list`.",
        "",
        "A commit marked `+` had uncommitted changes when it was measured. Load is the one-minute load average when",
        "the figures were recorded: on a busy machine wall times grow while CPU seconds and peak memory hold.",
    ]
    for area in order:
        info = index.get(area, {})
        recs = areas.get(area, [])
        text += ["", f"## {info.get('title', area.capitalize())}", ""]
        if info.get("about"):
            text += [info["about"], ""]
        scalar_rows, tables = [], []
        for rec in recs:
            for label, value in rec["figures"].items():
                if isinstance(value, list):
                    tables.append((rec, label, value))
                else:
                    scalar_rows.append([_cell(label), _cell(value), f"`{rec['command']}`"])
        if scalar_rows:
            text += _table(["Figure", "Value", "Command"], scalar_rows)
        for rec, label, rows in tables:
            cols = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
            text += ["", f"{label} (`{rec['command']}`):", ""]
            text += _table(cols, [[_cell(row.get(c, "")) for c in cols] for row in rows if isinstance(row, dict)])
        for rec in recs:
            for i, spec in enumerate(rec.get("plots") or []):
                name = _plot_name(rec, i)
                out[plots / name] = svg_plot(rec, spec)
                title = spec.get("title") or spec["table"]
                text += ["", f"![{title}](benchmarks/{name})"]
        if recs:
            text += ["", "Runs:", ""]
            text += _table(
                ["Command", "Commit", "Date", "Machine", "Load", "CPU s", "Wall s", "Peak MB"],
                [_run_line(r) for r in recs],
            )
        recorded = {r["name"] for r in recs}
        missing = [b for b in info.get("benches", []) if b["records"] and b["name"] not in recorded]
        if missing:
            text += ["", "No record yet: " + ", ".join(f"`bench/{b['script']}`" for b in missing) + "."]
    out[page] = re.sub(r"\n{3,}", "\n\n", "\n".join(text)) + "\n"
    if index and docs is None:
        out[ROOT / "bench" / "README.md"] = index_page(index)
    return out


def _paths(docs: Path | None) -> tuple[Path, Path]:
    return (PAGE, PLOTS) if docs is None else (docs / PAGE.name, docs / PLOTS.name)


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def differences(expected: dict[Path, str], docs: Path | None = None) -> list[str]:
    """What on disk differs from the rendered page and plots (stale, missing or extra files)."""
    _, plots = _paths(docs)
    out = []
    for path, text in expected.items():
        if not path.exists():
            out.append(f"{_shown(path)} is missing: run python bench/render.py")
        elif path.read_text(encoding="utf-8") != text:
            out.append(f"{_shown(path)} differs from the records: run python bench/render.py")
    for path in sorted(plots.glob("*.svg")) if plots.is_dir() else []:
        if path not in expected:
            out.append(f"{_shown(path)} comes from no record: run python bench/render.py")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the page differs from the records")
    args = ap.parse_args(argv)
    expected = render()
    if args.check:
        problems = differences(expected)
        for p in problems:
            print(p)
        return 1 if problems else 0
    PLOTS.mkdir(parents=True, exist_ok=True)
    for path in PLOTS.glob("*.svg"):
        if path not in expected:
            path.unlink()
    for path, text in expected.items():
        path.write_text(text, encoding="utf-8")
    plots = sum(p.suffix == ".svg" for p in expected)
    print(f"wrote {PAGE.relative_to(ROOT)}, {plots} plot(s) and bench/README.md from {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
