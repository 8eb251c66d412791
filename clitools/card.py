"""`cli.py card`: run a judge over a labelled file and write its judge card (the Judges page's numbers).

    python cli.py card --input FILE.jsonl --method METHOD [--window W] [--amc llm|rule] [--alpha 0.05]
        [--mode live|planned] [--price-input USD] [--price-output USD] [--seed S] --output card.json

Lines carry id, reference, candidate and optionally label (1 consistent, 0 inconsistent) or score (a human
score in [0, 1]). The judge runs on every line through the batch engine (resumable: the same command again
picks it up; answers are cached), then one JSON object is written: judge, n, n_labelled, judge_rate, ppi and
classical ({estimate, ci: [lo, hi]}), agreement ({balanced_accuracy, auroc, kappa, pearson}, each
{value, ci}), cost and the rest of the card. `--method evidence` runs offline. The rates are read as --mode
says, named in "reading" ({name, meaning, method, citation, budget}, as `cli.py compare` writes it): live (the
default), confidence sequences valid at every number of labels at once; planned, fixed-sample intervals valid
only when read once, at a number of labels fixed before labelling.
Exit 0; 1 when every line failed; 2 with a message on bad input; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from clitools import positive_int


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `card` on cli.py's subparsers."""
    p = subparsers.add_parser("card", help="a judge card: agreement, cost and the PPI consistency rate")
    p.add_argument("--input", required=True, help="JSONL (or CSV) with id, reference, candidate, label or score")
    p.add_argument("--output", required=True, help="the card, as one JSON object")
    p.add_argument(
        "--method",
        choices=["dce-amc", "paragraph", "evidence", "summ-nli", "sent-nli", "qg-qa"],
        default="evidence",
        help="the judge's method (evidence: the offline checker, no model call; default)",
    )
    p.add_argument("--task", choices=["summarization", "semantic"], default="summarization")
    p.add_argument("--window", type=int, default=1, help="sent-nli / qg-qa: summary sentences per window")
    p.add_argument("--amc", choices=["llm", "rule"], default="rule")
    p.add_argument("--alpha", type=float, default=0.05, help="interval level: 1 - alpha (default 0.05)")
    p.add_argument(
        "--mode",
        choices=["live", "planned"],
        default="live",
        help="live: valid at every number of labels (default); planned: valid once, at labels fixed in advance",
    )
    p.add_argument("--price-input", type=float, default=None, help="USD per million input tokens (model's default)")
    p.add_argument("--price-output", type=float, default=None, help="USD per million output tokens")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    p.add_argument("--concurrency", type=positive_int, default=None)
    p.set_defaults(func=run)
    return p


@dataclass(frozen=True)
class LabelFile:
    """What `card` reads of its file: id -> (label, score) for every usable row, and the rows refused."""

    labels: dict[str, tuple[float | None, float | None]]
    n_rows: int
    refused: list[tuple[int, str]]  # (line, reason)


def read_labels(path: Path) -> LabelFile:
    """Every row of the file by its id (the line number when it has none, as the import keys it).

    ValueError naming the line for a bad label or score (NaN and Infinity alike) and naming every line of an
    id that repeats; a row without a reference or a candidate is refused with its line and reason."""
    from services import tables
    from services.datasets import parse_label, parse_score

    text = tables.decode(tables.read_file(path, tables.IMPORT_ADVICE), str(path))
    _, records = tables.records(text, tables.format_of(path.name))
    labels: dict[str, tuple[float | None, float | None]] = {}
    lines: dict[str, list[int]] = {}
    refused: list[tuple[int, str]] = []
    n_rows = 0
    for line, row, error in records:
        n_rows += 1
        if error is None and not isinstance(row, dict):
            error = "not a JSON object"
        if error is not None:
            refused.append((line, error))
            continue
        key = str(row.get("id") or "").strip() or str(line)  # exactly as the import keys the row
        lines.setdefault(key, []).append(line)
        try:
            label = parse_label(row.get("label"))
        except ValueError:
            raise ValueError(
                f"line {line}: label must be 1 (consistent) or 0 (inconsistent), got {row['label']!r}"
            ) from None
        try:
            score = parse_score(row.get("score"))
        except ValueError:
            score = math.nan
        if score is not None and not 0.0 <= score <= 1.0:
            raise ValueError(f"line {line}: score must be a number in [0, 1], got {row['score']!r}")
        missing = [k for k in ("reference", "candidate") if not str(row.get(k) or "").strip()]
        if missing:
            refused.append((line, f"no {' and no '.join(missing)}"))
            continue
        labels[key] = (None if label is None else float(label), score)
    repeated = {k: v for k, v in lines.items() if len(v) > 1}
    if repeated:
        shown = "; ".join(f"id {k!r} on lines {', '.join(map(str, v))}" for k, v in list(repeated.items())[:5])
        more = f" (and {len(repeated) - 5} more ids)" if len(repeated) > 5 else ""
        raise ValueError(f"ids repeat: {shown}{more}. Give each row its own id.")
    return LabelFile(labels, n_rows, refused)


def run(args: argparse.Namespace) -> int:
    """Run the judge over the file as a batch, then write its card."""
    from clitools.batch import judge_batch
    from services import judges
    from services.config import backend_from_settings
    from services.errors import InputError

    if not 0.0 < args.alpha < 1.0:
        print("error: --alpha must be between 0 and 1", file=sys.stderr)
        return 2
    if args.window < 1:
        print("error: --window must be 1 or more", file=sys.stderr)
        return 2
    for name in ("price_input", "price_output"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            print(f"error: --{name.replace('_', '-')} must be 0 or more", file=sys.stderr)
            return 2
    path = Path(args.input)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    try:
        read = read_labels(path)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    labels = read.labels
    backend = backend_from_settings()
    if args.concurrency:
        backend = backend.with_changes(concurrency=args.concurrency)
    default_in, default_out = judges.prices_of(backend)
    price_in = args.price_input if args.price_input is not None else default_in
    price_out = args.price_output if args.price_output is not None else default_out
    ran = judge_batch(args, path, backend)
    if isinstance(ran, int):
        return ran
    engine, prep, batch = ran
    human = judges.human_frame(engine, batch.dataset_id, source="dataset")
    found = [labels.get(str(x), (None, None)) for x in human["external_id"]]
    human["label"] = [math.nan if lab is None else lab for lab, _ in found]
    human["hscore"] = [math.nan if s is None else s for _, s in found]
    judge = judges.judge_frame(engine, batch)
    card = judges.card_from_frames(
        batch, judge, human, alpha=args.alpha, price_input=price_in, price_output=price_out, seed=args.seed
    )
    refused = dict(read.refused)
    for r in prep.rejected:  # rows the import could not use (no sentence in the candidate, ...)
        refused.setdefault(r.row, r.reason)
    shown = card.as_dict(args.mode) | {
        "rows": read.n_rows,
        "refused": len(refused),
        "refused_rows": [{"line": k, "reason": v} for k, v in sorted(refused.items())],
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    r = card.rates
    classical, ppi = r.read(args.mode)

    def fmt(e) -> str:
        if e.estimate is None:
            return "—"
        return f"{e.estimate:.3f}" + ("" if e.ci_low is None else f" [{e.ci_low:.3f}, {e.ci_high:.3f}]")

    print(
        f"{card.judge}: {card.n_labelled} labelled of {card.n} item(s) from {read.n_rows} row(s), "
        f"{len(refused)} refused; judge rate "
        f"{'—' if r.judge_rate is None else f'{r.judge_rate:.3f}'}; classical {fmt(classical)}; PPI {fmt(ppi)} "
        f"(reading: {args.mode}, {r.reading(args.mode)['meaning']})",
        file=sys.stderr,
    )
    for line, reason in sorted(refused.items())[:10]:
        print(f"  refused line {line}: {reason}", file=sys.stderr)
    if len(refused) > 10:
        print(f"  ... and {len(refused) - 10} more refused (the card's refused_rows lists them)", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 1 if card.n_done == 0 else 0
