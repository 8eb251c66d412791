"""`cli.py report`: the meta-evaluation of a batch as JSON (every table, the human alpha and its n, the bundle),
and/or the stakeholder report as one self-contained HTML file.

    python cli.py report --run ID [--output FILE.json] [--threshold T] [--seed S] [--boot N]
        [--compare ID] [--baselines] [--embeddings]
    python cli.py report --run ID --html FILE.html [--kind batch|run|...]

Writes the JSON to FILE (or prints it, unless only --html is given); --html writes the HTML report (offline,
no secret). Exit 0, or 2 with a message when the batch does not exist or an option is out of range.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clitools import REPORT_BOOT, REPORT_KINDS, REPORT_PROBABILITY_THRESHOLD, REPORT_SEED, REPORT_THRESHOLD


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `report` on cli.py's subparsers."""
    p = subparsers.add_parser(
        "report",
        help="meta-evaluation tables of a batch as JSON",
        description="Correlations with human scores, AUROC, classification at a threshold (consistent = "
        "positive), sentence level, Figure 3, baselines, RAI, Krippendorff's alpha, reproducibility bundle.",
    )
    p.add_argument("--run", required=True, type=int, metavar="ID", help="the batch id (as on the Batches page)")
    p.add_argument("--output", type=Path, metavar="FILE.json", help="write here (default: print to stdout)")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="a score below it flags a summary as inconsistent (default: the method's own, "
        f"{REPORT_THRESHOLD:g} for DCE, paragraph and the NLI paradigms: any inconsistent sentence; "
        f"{REPORT_PROBABILITY_THRESHOLD:g} for the evidence checker, whose score is a probability)",
    )
    p.add_argument("--seed", type=int, default=REPORT_SEED, help="bootstrap seed (default 0)")
    p.add_argument("--boot", type=int, default=REPORT_BOOT, help="bootstrap resamples (default 1000)")
    p.add_argument("--compare", type=int, metavar="ID", help="a second batch over the same dataset (Figure 3)")
    p.add_argument("--baselines", action="store_true", help="compute missing ROUGE values first (stored)")
    p.add_argument("--embeddings", action="store_true", help="with --baselines: the embedding similarity too")
    p.add_argument("--html", type=Path, metavar="FILE.html", help="write the report as one self-contained HTML file")
    p.add_argument(
        "--kind",
        default="batch",
        choices=REPORT_KINDS,
        help="with --html: what --run designates: a batch (default), a run, a batch compared with every batch "
        "over its dataset (nli), a ConsEval study, a DHP run or a survey",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Build the report; 2 for an unknown batch or an option out of range."""
    from services import metaeval
    from services.database import get_engine
    from services.errors import InputError

    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        print("error: --threshold must be between 0 and 1", file=sys.stderr)
        return 2
    if args.boot < 0:
        print("error: --boot must be 0 or more", file=sys.stderr)
        return 2
    engine = get_engine()
    if args.html is not None:
        code = write_html(engine, args)
        if code or args.output is None:
            return code
    elif args.kind != "batch":
        print("error: --kind needs --html (the JSON report is the meta-evaluation of a batch)", file=sys.stderr)
        return 2
    try:
        rep = metaeval.report(
            engine,
            args.run,
            threshold=args.threshold,
            seed=args.seed,
            n_boot=args.boot,
            other_batch_id=args.compare,
            compute_baselines_first=args.baselines,
            with_embeddings=args.embeddings,
        )
    except InputError as exc:
        print(f"error: {exc} List batches on the app's Batches page.", file=sys.stderr)
        return 2
    text = metaeval.report_json(rep)
    if args.output is None:
        print(text)
        for line in binary_lines(rep["binary"]):
            print(line, file=sys.stderr)
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n", encoding="utf-8")
    h = rep["human_agreement"]
    alpha = f"{h['alpha']:.4f} over {h['n_sentences']:,} sentences" if h["alpha"] is not None else "n/a"
    print(
        f"wrote {args.output}: batch {args.run}, {rep['summary_level']['n_items']:,} items, human alpha {alpha}",
        file=sys.stderr,
    )
    for line in binary_lines(rep["binary"]):
        print(f"  {line}", file=sys.stderr)
    return 0


def binary_lines(binary: dict) -> list[str]:
    """The report's two balanced accuracies, each with its name and what it rests on."""
    out = []
    for m in (binary.get("score"), binary.get("verdicts")):
        if m:
            key = "balanced_accuracy" if "balanced_accuracy" in m else "value"
            value = "—" if m[key] is None else f"{m[key]:.3f}"
            out.append(f"{m['name']}: {value} ({m['rests_on']})")
    return out


def write_html(engine, args: argparse.Namespace) -> int:
    """The stakeholder report of `--kind` `--run` as one HTML file; 2 when it cannot be built."""
    from services.errors import InputError
    from services.reports import build, to_html

    options: dict = {}
    if args.kind == "batch":  # threshold None: the method's own
        options = {"threshold": args.threshold, "seed": args.seed, "n_boot": args.boot, "other_batch_id": args.compare}
    try:
        report = build(engine, args.kind, args.run, **options)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.html.parent.mkdir(parents=True, exist_ok=True)
    args.html.write_text(to_html(report), encoding="utf-8")
    size = args.html.stat().st_size
    print(
        f"wrote {args.html}: {report.title}, {len(report.figures)} chart(s), {len(report.tables)} table(s), "
        f"{len(report.examples)} example(s), {size / 1e6:.1f} MB",
        file=sys.stderr,
    )
    for h in report.headlines:
        if h.label.startswith("Balanced accuracy"):
            print(f"  {h.label}: {h.value_text()} ({h.note})", file=sys.stderr)
    return 0
