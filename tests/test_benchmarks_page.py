"""docs/benchmarks.md is generated from the bench records: it cannot drift from them, and every bench is indexed."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import record as bench_record  # noqa: E402
import render  # noqa: E402
import run  # noqa: E402

TOOLS = {"record.py", "render.py", "run.py"}  # the record helper, the renderer and the index themselves


def test_the_benchmarks_page_and_its_plots_agree_with_the_records() -> None:
    assert render.differences(render.render()) == []


def _one_record(results: Path, figures: dict, **kw) -> Path:
    return bench_record.record("judges", "toy", figures, argv=["bench/toy.py", "--draws", "10"], results=results, **kw)


def test_a_record_holds_the_command_commit_machine_load_cpu_memory_and_figures(tmp_path: Path) -> None:
    import numpy as np

    started = bench_record.start()
    sum(i * i for i in range(200_000))
    path = _one_record(tmp_path, {"coverage": np.float64(0.95), "draws": np.int64(10), "kind": "PPI"}, started=started)
    body = json.loads(path.read_text())
    assert path.parent == tmp_path / "judges" and path.name.startswith(f"toy-{body['commit']}-")
    assert body["command"] == "python bench/toy.py --draws 10"
    assert body["figures"] == {"coverage": 0.95, "draws": 10, "kind": "PPI"}
    assert body["machine"]["cpus"] >= 1 and body["machine"]["python"].startswith("3.")
    assert len(body["load_average"]) == 3
    assert 0 <= body["cpu_seconds"] and 0 <= body["wall_seconds"] and body["peak_memory_mb"] > 1
    assert body["date"].endswith("+00:00")


def test_a_record_refuses_a_bad_name_no_figures_and_a_plot_of_no_table(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lower-case"):
        bench_record.record("Judges", "toy", {"x": 1}, argv=["x"], results=tmp_path)
    with pytest.raises(ValueError, match="at least one figure"):
        bench_record.record("judges", "toy", {}, argv=["x"], results=tmp_path)
    with pytest.raises(ValueError, match="no table"):
        _one_record(tmp_path, {"x": 1}, plot={"table": "by items", "x": "items", "y": ["s"]})


def test_the_page_shows_the_newest_record_and_the_check_notices_a_stale_page(tmp_path: Path) -> None:
    results, docs = tmp_path / "results", tmp_path / "docs"
    rows = [{"items": n, "CPU s": n / 1000} for n in (1000, 10_000, 100_000)]
    old = _one_record(results, {"coverage": 0.5})
    body = json.loads(old.read_text())
    body["date"] = "2000-01-01T00:00:00+00:00"
    old.rename(old.with_name("toy-0000000000-old.json")).write_text(json.dumps(body))
    _one_record(
        results,
        {"coverage": 0.951, "by items": rows},
        plot={"table": "by items", "x": "items", "y": ["CPU s"], "log_x": True},
    )
    pages = render.render(results, index={}, docs=docs)
    page = pages[docs / "benchmarks.md"]
    assert "| coverage | 0.951 | `python bench/toy.py --draws 10` |" in page
    assert "| coverage | 0.5 |" not in page
    assert "![by items](benchmarks/judges-toy.svg)" in page
    svg = pages[docs / "benchmarks" / "judges-toy.svg"]
    assert svg.count("<circle") == 3 and "items (log scale)" in svg
    assert render.differences(pages, docs=docs) == [f"{p} is missing: run python bench/render.py" for p in pages]
    (docs / "benchmarks").mkdir(parents=True)
    for path, text in pages.items():
        path.write_text(text)
    assert render.differences(pages, docs=docs) == []
    (docs / "benchmarks.md").write_text(page.replace("0.951", "0.960"))
    (docs / "benchmarks" / "gone.svg").write_text("<svg/>")
    assert [p.split(" ", 1)[1] for p in render.differences(pages, docs=docs)] == [
        "differs from the records: run python bench/render.py",
        "comes from no record: run python bench/render.py",
    ]


def test_every_script_in_bench_is_indexed_and_every_indexed_bench_exists() -> None:
    scripts = {p.name for p in (ROOT / "bench").glob("*.py")} - TOOLS
    indexed = [b.script for b in run.BENCHES]
    assert sorted(indexed) == sorted(scripts), "list each bench in BENCHES of bench/run.py, with what it measures"
    assert {b.area for b in run.BENCHES} <= set(run.AREAS)


def _calls_record(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "record"
        for node in ast.walk(tree)
    )


@pytest.mark.parametrize("bench", [b for b in run.BENCHES if b.records], ids=lambda b: b.name)
def test_every_bench_writes_a_record(bench: run.Bench) -> None:
    assert _calls_record(ROOT / "bench" / bench.script), f"bench/{bench.script} writes no record (bench/record.py)"
