"""`cli.py distill`: training data for a smaller judge from batches over labelled data (paper 003, section 4).

    python cli.py distill --run ID [--run ID ...] --split in-domain|ood --format chat|plain --output DIR
        [--seed S] [--test-share 0.2] [--test-dataset ID] [--answer json|text]

`--run` is a batch id (as on the Batches page); give it more than once to pool batches: the reasoning of an
item judged correctly comes from Summ-NLI, else Sent-NLI (section 4.1), else a DCR evaluator, and an
out-of-domain split needs
batches over two or more datasets. `--answer json` (default) writes the app's JSON answers, so the trained
model plugs into the app as an endpoint; `text` the paper's plain lines. Writes DIR/train.jsonl,
DIR/test.jsonl and DIR/manifest.json, and prints the Table 7 row. Exit 0, or 2 with a message.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clitools import DISTILL_SEED, DISTILL_TEST_SHARE


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `distill` on cli.py's subparsers."""
    p = subparsers.add_parser(
        "distill",
        help="training examples with and without reasoning from labelled batches",
        description="Prompts with reasoning where the judge matched the gold label, prompts without reasoning "
        "(gold label) for every labelled item; in-domain split by document or out-of-domain by dataset.",
    )
    p.add_argument(
        "--run",
        required=True,
        type=int,
        action="append",
        metavar="ID",
        help="a batch id; repeat to pool batches (first correct judgement gives the reasoning)",
    )
    p.add_argument("--split", choices=["in-domain", "ood"], default="in-domain")
    p.add_argument(
        "--format",
        choices=["chat", "plain"],
        default="chat",
        dest="fmt",
        help="chat: {messages: [...]} lines; plain: {prompt, completion} lines",
    )
    p.add_argument("--output", required=True, type=Path, metavar="DIR", help="directory for the files")
    p.add_argument("--seed", type=int, default=DISTILL_SEED, help="split and shuffle seed (default 0)")
    p.add_argument(
        "--test-share",
        type=float,
        default=DISTILL_TEST_SHARE,
        help="in-domain: share of documents held out (default 0.2)",
    )
    p.add_argument(
        "--test-dataset",
        type=int,
        metavar="ID",
        help="ood: the held-out dataset id (default: the dataset of the last --run)",
    )
    p.add_argument(
        "--answer",
        choices=["json", "text"],
        default="json",
        help="json: the app's JSON answers (default); text: the paper's 'Judgement: ...' lines",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Build and write the set; 2 with a message for what the user must fix."""
    from services.database import get_engine
    from services.errors import InputError
    from services.nli import distill

    try:
        ds = distill.build(
            get_engine(),
            args.run,
            split=args.split,
            seed=args.seed,
            test_share=args.test_share,
            test_dataset_id=args.test_dataset,
            answer=args.answer,
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    paths = distill.write(ds, args.output, args.fmt)
    print(ds.table7().to_string(index=False))
    for note in ds.notes:
        print(f"note: {note}", file=sys.stderr)
    s = ds.stats
    print(
        f"wrote {', '.join(str(p) for p in paths)}: {s.n_train:,} training examples ({s.n_with_reasoning:,} with "
        f"reasoning), {s.n_test:,} test examples",
        file=sys.stderr,
    )
    return 0
