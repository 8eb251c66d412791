"""The benches, by area: what each measures, and one command to run them.

    python bench/run.py --list                 # every bench, grouped by area, with what it measures
    python bench/run.py NAME [ARGS...]         # one bench (NAME is its file name without .py)
    python bench/run.py --area judges          # every bench of an area, with its default arguments
    python bench/run.py --all                  # the benches `make bench` runs

Each bench prints its figures and writes a record under bench/results/ (bench/record.py);
`python bench/render.py` then regenerates docs/benchmarks.md from the records.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Bench:
    """One bench script: its area, what it measures, and how `--all` runs it."""

    area: str
    script: str
    what: str
    args: tuple[str, ...] = ()  # the arguments `--all` and `--area` give it
    make: bool = False  # part of `make bench`
    records: bool = True  # writes a record (False: a helper the benches use, or a tool that prints only)

    @property
    def name(self) -> str:
        return Path(self.script).stem


AREAS = {
    "dcr": ("DCR: evaluation on the embedded model", "The DCE-AMC-RAI loop and its converters."),
    "evidence": ("The offline evidence checker", "Verdicts, calibration and speed of the checker that needs no model."),
    "baselines": ("Baselines and human agreement", "Local baselines and the annotators' own agreement on QAGS-CNN/DM."),
    "nli": ("NLI paradigms", "Cost and accuracy of each factual-inconsistency method."),
    "metaeval": ("Meta-evaluation", "The DCR paper's meta-evaluation figures on QAGS-CNN/DM."),
    "judges": (
        "Judges: intervals and comparisons",
        "Coverage and width of the judge cards' intervals on simulated data.",
    ),
    "conseval": ("ConsEval", "Krippendorff's alpha and a consistency study."),
    "dhp": ("DHP", "The discernment statistics at the paper's scale."),
    "datasets": ("Datasets and uploads", "Import speed, and what refusing hostile input costs."),
    "batches": ("Batches and workers", "Throughput against a server with a fixed latency, with one or more workers."),
    "cli": ("The command line", "Start-up and throughput of `cli.py`."),
    "scale": ("Scale: cost against items", "CPU seconds and peak memory of each step at 1k to 100k items."),
    "pages": ("Pages", "Render times of the pages, server side and in a browser."),
    "suite": ("The test suite", "Where the suite's time goes, and whether it holds on a busy machine."),
}

BENCHES = [
    Bench(
        "dcr",
        "dcr_embedded.py",
        "DCE + AMC wall time on the embedded model, cache hits, converter agreement",
        make=True,
    ),
    Bench("dcr", "verdict_agreement.py", "rule against LLM converter on the committed phrasing corpus (Table 9)"),
    Bench("evidence", "evidence_verdicts.py", "the shipped checker's sentence verdicts on QAGS-CNN/DM (no refitting)"),
    Bench(
        "evidence", "evidence_qags.py", "the checker on QAGS-CNN/DM and rule-built cases, weights refitted", make=True
    ),
    Bench("evidence", "evidence_calibration.py", "fits and cross-validates calibration and abstention", make=True),
    Bench("evidence", "evidence_speed.py", "seconds for 1,000 documents, lexical and with MiniLM", make=True),
    Bench(
        "evidence", "evidence_cases.py", "(helper) builds the rule-made test cases from QAGS articles", records=False
    ),
    Bench("baselines", "baselines_qags.py", "workers' alpha, ROUGE and MiniLM against the human score", make=True),
    Bench("nli", "nli_methods.py", "calls, tokens, seconds and balanced accuracy per method on the embedded model"),
    Bench("metaeval", "metaeval_qags.py", "Figure 3, correlations and Table 4 with the evidence checker"),
    Bench("judges", "judges_coverage.py", "coverage and width over true rates 0.01-0.99 and 10-500 labels", make=True),
    Bench("judges", "judges_qags.py", "the evidence checker's judge card on QAGS-CNN with 50 labels", make=True),
    Bench("judges", "compare_coverage.py", "systems compared: interval coverage, wrong-sign calls", make=True),
    Bench(
        "judges",
        "compare_sequential.py",
        "live against planned: false claims when stopping early, coverage at every n, width, labels to decide",
    ),
    Bench("conseval", "conseval_alpha.py", "alpha's time at 1,000 units; a study on the embedded model"),
    Bench("dhp", "dhp_stats.py", "`cli.py dhp stats` at 6 x 12 x 4 x 100, in process and cold"),
    Bench("datasets", "datasets_import.py", "import of QAGS and of 10,000 synthetic items"),
    Bench("datasets", "upload_memory.py", "the app's memory through an upload on the Datasets page, in Chromium"),
    Bench("datasets", "upload_bounds.py", "refusing zip bombs and oversize files; the worst accepted .docx", make=True),
    Bench("batches", "batch_throughput.py", "500 documents at 64 in flight against a 200 ms server", make=True),
    Bench("batches", "workers_scaling.py", "throughput with 1, 2 and 4 worker processes"),
    Bench("batches", "workers_100k.py", "100,000 items on PostgreSQL with 4 workers while pages are opened"),
    Bench("batches", "interrupt_calls.py", "calls paid twice when `cli.py evaluate` is interrupted and resumed"),
    Bench("batches", "latency_server.py", "(helper) an OpenAI-compatible server with a fixed latency", records=False),
    Bench("cli", "cli_startup.py", "`cli.py` start-up: help, errors, first request, whole process", make=True),
    Bench("cli", "cli_throughput.py", "`cli.py evaluate` beside a batch on the same documents", make=True),
    Bench("scale", "scale.py", "CPU seconds and peak memory of each step at 1k-100k items", make=True),
    Bench("pages", "pages_render.py", "Meta-evaluation and History pages at 10,000 items (AppTest)", make=True),
    Bench("pages", "scale_pages.py", "pages in Chromium at 1k-50k items", args=("1000", "10000", "50000"), make=True),
    Bench("pages", "page_reads.py", "what the Judges and Meta-evaluation pages read of each method's batch, 1k-100k"),
    Bench(
        "pages", "method_batches.py", "(helper) finished batches of every method for the page benches", records=False
    ),
    Bench("pages", "pages_small.py", "ConsEval, DHP and Judges pages at the browser tests' sizes, in Chromium"),
    Bench("pages", "streamlit_floor.py", "a bare Streamlit page in the same browser: the floor under any page"),
    Bench("pages", "owner_session.py", "what keeping the owner signed in costs a page run"),
    Bench("pages", "sign_in_flood.py", "the owner's sign-in while wrong passwords flood from the same address"),
    Bench("pages", "demo_build.py", "Home's demo workspace: CPU seconds and database size of building it"),
    Bench("pages", "profile_page.py", "(tool) cProfile of one page's script run", records=False),
    Bench("suite", "suite_times.py", "(tool) where the test suite's time went in its last run", records=False),
    Bench("suite", "suite_stress.py", "`make test` again and again beside stress-ng"),
]

BY_AREA = {
    area: {
        "title": title,
        "about": about,
        "benches": [
            {"name": b.name, "script": b.script, "what": b.what, "records": b.records}
            for b in BENCHES
            if b.area == area
        ],
    }
    for area, (title, about) in AREAS.items()
}


def listing() -> str:
    """Every bench, grouped by area, with what it measures."""
    lines = []
    for area, (title, _) in AREAS.items():
        lines.append(f"{area}: {title}")
        for b in (b for b in BENCHES if b.area == area):
            mark = " [make bench]" if b.make else ""
            lines.append(f"  {b.name:22} {b.what}{mark}")
    return "\n".join(lines)


def _run(bench: Bench, extra: list[str]) -> int:
    cmd = [sys.executable, str(HERE / bench.script), *(extra or bench.args)]
    print(f"$ {' '.join(cmd)}", flush=True)
    return subprocess.run(cmd, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list the benches by area")
    ap.add_argument("--area", choices=sorted(AREAS), help="run every bench of this area")
    ap.add_argument("--all", action="store_true", help="run the benches `make bench` runs")
    ap.add_argument("name", nargs="?", help="the bench to run (its file name without .py)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the bench")
    args = ap.parse_args(argv)
    if args.list or not (args.name or args.area or args.all):
        print(listing())
        return 0
    if args.name:
        found = [b for b in BENCHES if b.name == args.name]
        if not found:
            print(f"no bench named {args.name!r}; `python bench/run.py --list` lists them", file=sys.stderr)
            return 2
        return _run(found[0], args.args)
    chosen = [b for b in BENCHES if b.records and (b.area == args.area if args.area else b.make)]
    failed = [b.name for b in chosen if _run(b, []) != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
