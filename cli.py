"""Consistency Studio from a terminal: the same services as the app, headless.

    python cli.py evaluate --input pairs.jsonl --output out.jsonl [--task summarization|semantic|custom]
        [--method dce-amc|paragraph|evidence|summ-nli|sent-nli|qg-qa] [--window W] [--amc llm|rule]
        [--alpha A] [--beta B] [--rounds N] [--concurrency C] [--evidence]
    python cli.py batch --dataset FILE --format qags|summeval|paws|jsonl|csv [--method ...] [--window W]
        [--repeats N] [--amc ...] [--rounds N] [--concurrency C] [--limit N] [--output FILE.jsonl]
    python cli.py report --run ID [--output FILE.json]
    python cli.py alpha --input RATINGS.csv --level nominal|ordinal|interval|ratio
    python cli.py card --input LABELLED.jsonl --method METHOD [--alpha A] [--price-input USD] --output card.json
    python cli.py compare --input FILE.jsonl --output OUT.json [--alpha A] [--method METHOD]
        [--mode live|planned] [--budget N] [--baseline SYSTEM --fail-if-worse]

The backend comes from LLM_BASE_URL, LLM_API_KEY (or OPENAI_API_KEY) and LLM_MODEL (none set: the embedded
model); the database from DATABASE_URL (default: data/consistency.db). `evaluate` runs the file as a batch
(the app's Batches page); the same command again resumes it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

# Subcommands, each a module of its own in clitools/ with its one-line help. Only the module of the command
# in use is imported, and `cli.py --help` imports none: a command starts without loading what the others
# need (scipy, pandas, openai, alembic, torch).
SUBCOMMANDS = {
    "evaluate": "evaluate (and optionally improve) reference/candidate pairs",
    "batch": "run the evaluator over a dataset with human judgments",
    "alpha": "Krippendorff's alpha of a ratings CSV (unit,rater,value)",
    "report": "meta-evaluation tables of a batch as JSON",
    "distill": "training examples with and without reasoning from labelled batches",
    "conseval": "ConsEval: self- and inter-consistency (Krippendorff's alpha) and accuracy of an LLM evaluator",
    "dhp": "DHP: discernment of LLM evaluators by hierarchical perturbation",
    "card": "a judge card: agreement with human labels, cost, and the prediction-powered consistency rate",
    "compare": "systems compared: each one's consistency rate and every pairwise difference, with intervals",
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, it loads only the subcommand they name (none for the overall help)."""
    p = argparse.ArgumentParser(prog="cli.py", description="Consistency Studio, headless.")
    sub = p.add_subparsers(dest="command", required=True)
    command = next((a for a in argv or [] if not a.startswith("-")), None)
    for name, help_line in SUBCOMMANDS.items():
        if name == command:
            importlib.import_module(f"clitools.{name}").add_parser(sub)
        else:
            sub.add_parser(name, help=help_line)
    return p


def main(argv: list[str] | None = None, *, standalone: bool = False) -> int:
    """Run a subcommand; `standalone` when this process is cli.py itself (it may then fork, see evaluate)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from db.redact import redact_logs

    redact_logs()
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    args.standalone = standalone
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


def exit_now(code: int) -> None:
    """Leave `evaluate` without tearing the interpreter down object by object (seconds after a large run).

    Everything is written first: the output file is closed and the batch's threads joined by then; logs and
    streams are flushed here, and the database connections closed (SQLite checkpoints its write-ahead log).
    """
    from db.engine import dispose_all

    dispose_all()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    status = main(standalone=True)
    if sys.argv[1:2] == ["evaluate"] or status == 130:
        exit_now(status)
    sys.exit(status)
