"""`cli.py compare`: are some systems (prompts, models, versions) more consistent than others, and how sure are we?

    python cli.py compare --input FILE.jsonl --output OUT.json [--alpha 0.05] [--method METHOD]
        [--mode live|planned] [--budget N] [--baseline SYSTEM --fail-if-worse]

Lines are {"id", "system", "score", "label"?}: a judge's score in [0, 1] (1 = consistent) from this app or
any other tool, and label 1/0 on the labelled items; or {"id", "system", "reference", "candidate", "label"?}
with --method to run a judge first (through the batch engine, as `cli.py card` does). Items of different
systems with the same reference are paired. Writes {"reading": {name, meaning, method, citation, budget},
"systems": [{reading, system, n, n_labelled, judge_rate, classical: {estimate, ci}, ppi: {estimate, ci, basis}}],
"differences": [{reading, a, b, estimate, ci, significant, decided, sentence}]}, a's rate minus b's, each
difference's interval Bonferroni-adjusted over the pairs (services.judges.compare).

--mode live (the default): confidence sequences, valid however often the comparison is run as labels arrive;
a pair is decided when its interval excludes 0. --mode planned: fixed-sample intervals, valid once at the
--budget labels a system planned before labelling (a pair is decided once both systems have the budget).
--baseline SYSTEM --fail-if-worse: exit 1 when a system is decided worse than the baseline (a CI gate).

Exit 0; 1 when the judge failed on every line, or with --fail-if-worse when a system is decided worse than the
baseline; 2 with a one-line message on bad input; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from clitools import METHODS, positive_int
from services import tables
from services.formats import percent

FIX_LABEL = 'give "label" as 1 (consistent) or 0 (inconsistent), or leave it out on unlabelled lines'


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `compare` on cli.py's subparsers."""
    p = subparsers.add_parser("compare", help="systems compared: each one's consistency rate and every difference")
    p.add_argument("--input", required=True, help="JSONL: id, system, score (or reference and candidate), label?")
    p.add_argument("--output", required=True, help="the comparison, as one JSON object")
    p.add_argument("--alpha", type=float, default=0.05, help="interval level 1 - alpha (default 0.05)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default=None,
        help="run this judge over reference/candidate lines first (evidence: the offline checker, no model call)",
    )
    p.add_argument(
        "--mode",
        choices=["live", "planned"],
        default="live",
        help="live: valid at every number of labels (default); planned: valid once, at --budget labels a system",
    )
    p.add_argument("--budget", type=positive_int, default=None, help="planned: labels a system planned in advance")
    p.add_argument("--baseline", default=None, help="the system the others are held against (with --fail-if-worse)")
    p.add_argument(
        "--fail-if-worse",
        action="store_true",
        help="exit 1 when a system is decided worse than --baseline, printing why (for CI)",
    )
    p.add_argument("--task", choices=["summarization", "semantic"], default="summarization")
    p.add_argument("--window", type=int, default=1, help="sent-nli / qg-qa: summary sentences per window")
    p.add_argument("--amc", choices=["llm", "rule"], default="rule")
    p.add_argument("--concurrency", type=positive_int, default=None, help="items in flight at once")
    p.set_defaults(func=run)
    return p


class BadLine(ValueError):
    """A line that cannot be used: its message names the line and the fix."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def read_lines(path: Path, *, with_method: bool) -> list[dict]:
    """The file's rows as {id, system, reference, score, label}; BadLine naming the line and the fix."""
    rows: list[dict] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8-sig") as fh:
        for k, text in enumerate(fh, 1):
            if not text.strip():
                continue
            where = f"line {k}"
            keys = tables.too_many_keys(text)
            try:
                row = json.loads(text) if keys is None else None
            except json.JSONDecodeError as exc:
                raise BadLine(f"{where}: not JSON ({exc.msg}); write one JSON object per line") from None
            if keys is not None or (isinstance(row, dict) and len(row) > tables.MAX_COLUMNS):
                raise BadLine(f"{where}: {tables.too_many_fields(keys or len(row))}; keep the fields compare reads")
            if not isinstance(row, dict):
                raise BadLine(f"{where}: not a JSON object; write one object per line, with id and system")
            rid = row.get("id")
            if rid is None or (isinstance(rid, str) and not rid.strip()) or isinstance(rid, dict | list):
                raise BadLine(f'{where}: no "id"; give every line a unique id')
            rid = str(rid)
            if rid in seen:
                raise BadLine(f'{where}: id "{rid}" repeats line {seen[rid]}; give every line a unique id')
            seen[rid] = k
            system = row.get("system")
            if system is None or isinstance(system, dict | list | bool) or not str(system).strip():
                raise BadLine(f'{where}: no "system"; give every line the system (prompt, model) that wrote it')
            label = row.get("label")
            if label is not None:
                x = _number(label)
                if x is None or x not in (0.0, 1.0):
                    raise BadLine(f"{where}: label {json.dumps(label)} is not 0 or 1; {FIX_LABEL}")
                label = x
            reference = row.get("reference")
            score = None
            if with_method:
                for key in ("reference", "candidate"):
                    if not isinstance(row.get(key), str) or not row[key].strip():
                        raise BadLine(f'{where}: no "{key}" text; --method needs reference and candidate on every line')
            else:
                raw = row.get("score")
                if raw is None:
                    fix = "give the judge's score in [0, 1], or --method to run a judge on reference and candidate"
                    raise BadLine(f'{where}: no "score"; {fix}')
                score = _number(raw)
                if score is None or not math.isfinite(score):
                    raise BadLine(f"{where}: score {json.dumps(raw)} is not a finite number; give a number in [0, 1]")
                if not 0.0 <= score <= 1.0:
                    raise BadLine(f"{where}: score {score:g} is outside [0, 1]; rescale the scores to [0, 1]")
            ref = reference if isinstance(reference, str | int) and not isinstance(reference, bool) else None
            rows.append({"id": rid, "system": str(system).strip(), "reference": ref, "score": score, "label": label})
    if not rows:
        raise BadLine("no lines; write one JSON object per line with id, system and score")
    return rows


def check_systems(rows: list[dict]) -> None:
    """At least two systems, each with at least two labelled lines; BadLine otherwise."""
    systems: dict[str, int] = {}
    for r in rows:
        systems[r["system"]] = systems.get(r["system"], 0) + (r["label"] is not None)
    if len(systems) < 2:
        (only,) = systems
        raise BadLine(f'only one system ("{only}"); a comparison needs lines of at least two systems')
    few = {s: n for s, n in systems.items() if n < 2}
    if few:
        s, n = next(iter(few.items()))
        raise BadLine(f'system "{s}" has {n} labelled line(s); label at least 2 lines of each system ({FIX_LABEL})')


def _judge_scores(args: argparse.Namespace, path: Path) -> dict[str, tuple[float, float]] | int:
    """Run the judge over the file as a batch: id -> (prediction, verdict) (NaN when it failed); an exit code
    when it cannot run."""
    import numpy as np

    from clitools.batch import judge_batch
    from services import judges
    from services.config import backend_from_settings

    backend = backend_from_settings()
    if args.concurrency:
        backend = backend.with_changes(concurrency=args.concurrency)
    ran = judge_batch(args, path, backend)
    if isinstance(ran, int):
        return ran
    engine, _, batch = ran
    human = judges.human_frame(engine, batch.dataset_id, source="dataset")
    judge = judges.judge_frame(engine, batch).merge(human[["item_id", "external_id"]], on="item_id")
    if not np.isfinite(judge["prediction"].to_numpy(float)).any():
        print("error: the judge failed on every line; see the batch's errors in the app", file=sys.stderr)
        return 1
    return {
        str(e): (float(p), float(v))
        for e, p, v in zip(judge["external_id"], judge["prediction"], judge["verdict"], strict=True)
    }


def run(args: argparse.Namespace) -> int:
    """Read the file (running the judge with --method), compare the systems, write the JSON."""
    if not 0.0 < args.alpha < 1.0:
        print("error: --alpha must be between 0 and 1 (e.g. 0.05 for 95% intervals)", file=sys.stderr)
        return 2
    if args.window < 1:
        print("error: --window must be 1 or more", file=sys.stderr)
        return 2
    if args.budget is not None and args.mode != "planned":
        print("error: --budget goes with --mode planned (the live reading needs no budget)", file=sys.stderr)
        return 2
    if args.fail_if_worse and not args.baseline:
        print("error: --fail-if-worse needs --baseline SYSTEM, the system the others are held against", file=sys.stderr)
        return 2
    path = Path(args.input)
    try:
        tables.check_path(path, tables.IMPORT_ADVICE)  # no such file, or over the upload limit
    except tables.InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        rows = read_lines(path, with_method=args.method is not None)
        check_systems(rows)
        if args.baseline is not None and args.baseline not in {r["system"] for r in rows}:
            names = ", ".join(sorted({r["system"] for r in rows}))
            raise BadLine(f'no system "{args.baseline}" for --baseline; the systems are {names}')
    except (BadLine, UnicodeDecodeError) as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    import pandas as pd

    from services.errors import InputError
    from services.judges.compare import compare

    frame = pd.DataFrame(rows)
    frame["label"] = frame["label"].astype(float)
    if args.method is None:
        frame["prediction"] = frame["score"].astype(float)
    else:
        scores = _judge_scores(args, path)
        if isinstance(scores, int):
            return scores
        got = [scores.get(i, (math.nan, math.nan)) for i in frame["id"]]
        frame["prediction"] = [p for p, _ in got]
        frame["verdict"] = [v for _, v in got]
    try:
        result = compare(frame.drop(columns="score"), alpha=args.alpha, mode=args.mode, budget=args.budget)
    except InputError as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for s in result.systems:
        p = s.ppi
        iv = "—" if p.estimate is None else f"{p.estimate:.3f} [{p.ci_low:.3f}, {p.ci_high:.3f}]"
        what = f"{p.basis} ({iv})" if p.labels_only else f"PPI {iv}"
        print(f"{s.system}: {s.n_labelled} labelled of {s.n}; {what}", file=sys.stderr)
    level = percent(1 - result.pair_alpha)
    reading = result.reading()
    print(f"reading: {reading['name']} ({reading['meaning']})", file=sys.stderr)
    print(f"differences at {level} each (Bonferroni over {result.n_pairs} pair(s)):", file=sys.stderr)
    for d in result.differences:
        print(f"  {d.sentence}", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    if args.baseline is not None:
        worse = worse_than(result, args.baseline)
        for d in worse:
            print(f"worse than {args.baseline}: {d.sentence}", file=sys.stderr)
        if not worse:
            print(f"no system is decided worse than {args.baseline}", file=sys.stderr)
        if worse and args.fail_if_worse:
            return 1
    return 0


def worse_than(result, baseline: str) -> list:
    """The decided differences where a system is less consistent than the baseline."""
    out = []
    for d in result.differences:
        if not d.decided or baseline not in (d.a, d.b) or d.estimate is None:
            continue
        baseline_minus_other = d.estimate if d.a == baseline else -d.estimate
        if baseline_minus_other > 0:
            out.append(d)
    return out
