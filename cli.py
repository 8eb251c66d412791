"""Consistency Studio from a terminal: the same services as the app, headless.

    python cli.py evaluate --input pairs.jsonl --output out.jsonl [--task summarization|semantic|custom]
        [--method dce-amc|paragraph|evidence|summ-nli|sent-nli|qg-qa] [--window W] [--amc llm|rule]
        [--rounds N] [--concurrency C]
    python cli.py batch --dataset FILE --format qags|summeval|paws|jsonl|csv [--method ...] [--window W]
        [--repeats N] [--amc ...] [--rounds N] [--concurrency C] [--limit N] [--output FILE.jsonl]
    python cli.py report --run ID [--output FILE.json]
    python cli.py alpha --input RATINGS.csv --level nominal|ordinal|interval|ratio

The backend comes from LLM_BASE_URL, LLM_API_KEY (or OPENAI_API_KEY) and LLM_MODEL (none set: the embedded
model); the database from DATABASE_URL (default: data/consistency.db). Runs show up in the app's History.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import clitools.alpha
import clitools.batch
import clitools.conseval
import clitools.dhp
import clitools.distill
import clitools.report
from db.engine import get_engine
from services import dcr, evidence, nli, runs
from services.config import backend_from_settings
from services.redact import redact_logs
from services.text import InputError, read_records


class InputFileError(Exception):
    """The input file cannot be used; the message says why."""


def read_items(path: Path) -> list[dict[str, str]]:
    """Rows with `id`, `reference`, `candidate` from JSONL or CSV."""
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    try:
        rows = read_records(path.read_bytes(), str(path))
    except InputError as exc:
        raise InputFileError(str(exc)) from None
    if not rows:
        raise InputFileError(f"{path}: no rows")
    missing = [c for c in ("reference", "candidate") if c not in rows[0]]
    if missing:
        raise InputFileError(f"{path}: missing column(s) {', '.join(missing)}; need id, reference, candidate")
    return [
        {
            "id": str(r.get("id") or i),
            "reference": str(r.get("reference") or ""),
            "candidate": str(r.get("candidate") or ""),
        }
        for i, r in enumerate(rows, 1)
    ]


def sentences_out(rnd: dcr.Round, reference: str | None = None, *, task: str = "summarization") -> list[dict[str, Any]]:
    """Each sentence's verdict, reason and mark; with the reference, also its evidence (services.evidence)."""
    out = [
        {"index": s.index, "text": s.text, "verdict": s.verdict, "reason": s.reason, "mark": s.mark, "error": s.error}
        for s in rnd.evaluation.sentences
    ]
    if reference is not None and out:
        found = evidence.analyse(reference, [s["text"] for s in out], noun=dcr.REFERENCE_NOUN.get(task, "reference"))
        for row, se in zip(out, found, strict=True):
            row["evidence"] = se.record()
    return out


def result_line(item_id: str, detail) -> dict[str, Any]:  # noqa: ANN001
    """The output record of one item: round 0's score and verdicts, every round, usage."""
    first = detail.rounds[0] if detail.rounds else None
    score = first.evaluation.score if first else None
    ref, task = detail.reference, detail.run.task
    return {
        "id": item_id,
        "run_id": detail.run.id,
        "score": score.z_hat if score else None,
        "k": score.k if score else 0,
        "alpha": score.alpha if score else 0.0,
        "beta": score.beta if score else 0.0,
        "sentences": sentences_out(first, ref, task=task) if first else [],
        "rounds": [
            {
                "round": r.index,
                "candidate": r.text,
                "score": r.evaluation.score.z_hat if r.evaluation.score else None,
                "sentences": sentences_out(r, ref, task=task),
                "rewrites": [
                    {"index": w.index, "before": w.before, "after": w.after, "reason": w.reason} for w in r.rewrites
                ],
            }
            for r in detail.rounds
        ],
        "final_candidate": runs.final_text(detail),
        "usage": detail.usage,
        "error": detail.run.error,
    }


METHODS = [*dcr.METHOD_LABELS, *nli.METHOD_LABELS]


def method_line(item_id: str, detail, method) -> dict[str, Any]:  # noqa: ANN001
    """The output record of a Summ-NLI / Sent-NLI / QG-QA run: verdict, per-sentence verdicts, and its
    windows with their reasoning or its question-answer pairs, with the document sentences used."""
    rec = dict(method.detail) if method is not None else {}
    rec.pop("usage", None)
    return {"id": item_id, "run_id": detail.run.id, **rec, "usage": detail.usage, "error": detail.run.error}


def cmd_evaluate(args: argparse.Namespace) -> int:
    try:
        items = read_items(Path(args.input))
    except InputFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    backend = backend_from_settings()
    if args.concurrency:
        backend = backend.with_changes(concurrency=args.concurrency)
    cfg = dcr.DCRConfig(
        task=args.task, criteria=args.criteria or "", method=args.method, amc=args.amc, max_rounds=args.rounds
    )
    engine = get_engine()
    if args.window < 1:
        print("error: --window must be 1 or more", file=sys.stderr)
        return 2
    if nli.is_nli(args.method):
        print(f"{len(items)} item(s) · {backend.label} · {args.method} · window {args.window}", file=sys.stderr)
        if args.rounds > 0:
            print(f"note: --rounds ignored: {args.method} gives a verdict, not a rewrite", file=sys.stderr)
    elif cfg.uses_model:
        print(f"{len(items)} item(s) · {backend.label} · {args.method} · converter {args.amc} · rounds {args.rounds}",
              file=sys.stderr)  # fmt: skip
    else:
        with evidence.bulk(args.embeddings or None):
            print(f"{len(items)} item(s) · {evidence.model_name()} · no model call", file=sys.stderr)
        if args.rounds > 0:
            print(f"note: --rounds ignored: {dcr.NO_IMPROVE_REASON}", file=sys.stderr)

    def one(item: dict[str, str]) -> dict[str, Any]:
        with evidence.bulk(args.embeddings or None):  # lexical alignment unless asked for MiniLM
            return one_item(item)

    def one_item(item: dict[str, str]) -> dict[str, Any]:
        if nli.is_nli(args.method):
            try:
                run_id = runs.start_method_run(
                    engine, backend, item["reference"], item["candidate"], args.method, window=args.window,
                    source="cli", title=f"cli: {item['id']}",
                )  # fmt: skip
            except InputError as exc:
                return {"id": item["id"], "error": str(exc)}
            detail = runs.load(engine, run_id)
            line = method_line(item["id"], detail, runs.load_method(engine, run_id))
            return line if line.get("label") is not None else line | {"error": line["error"] or "no verdict"}
        try:
            run_id = runs.start_run(
                engine, backend, item["reference"], item["candidate"], cfg, source="cli", title=f"cli: {item['id']}"
            )
        except InputError as exc:
            return {"id": item["id"], "error": str(exc)}
        detail = runs.improve_run(engine, backend, run_id) if args.rounds > 0 else runs.load(engine, run_id)
        return result_line(item["id"], detail)

    started = time.perf_counter()
    failed = 0
    out_path = Path(args.output)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        out_path.open("w", encoding="utf-8") as out,
        ThreadPoolExecutor(max_workers=max(1, backend.concurrency)) as pool,
    ):
        for n, line in enumerate(pool.map(one, items), 1):
            failed += bool(line.get("error"))
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
            score = line.get("score")
            shown = f"{score:.3f}" if isinstance(score, float) else "n/a"
            if line.get("method") in nli.NLI_METHODS:
                shown += f" · {line.get('label') or 'no verdict'}"
            err = f" · {line['error']}" if line.get("error") else ""
            print(f"[{n}/{len(items)}] {line['id']}: score {shown}{err}", file=sys.stderr)
    print(f"wrote {out_path} ({len(items)} lines, {failed} with errors) in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)  # fmt: skip
    return 1 if failed == len(items) else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cli.py", description="Consistency Studio, headless.")
    sub = p.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="evaluate (and optionally improve) reference/candidate pairs")
    ev.add_argument("--input", required=True, help="JSONL or CSV with id, reference, candidate")
    ev.add_argument("--output", required=True, help="JSONL file to write, one line per input row")
    ev.add_argument("--task", choices=["summarization", "semantic", "custom"], default="summarization")
    ev.add_argument("--criteria", help="criteria text for --task custom")
    ev.add_argument(
        "--method", choices=METHODS, default="dce-amc",
        help="evidence: the offline evidence checker (no model call); summ-nli, sent-nli, qg-qa: the "
        "factual-inconsistency paradigms (verdict only)",
    )  # fmt: skip
    ev.add_argument("--window", type=int, default=1, help="sent-nli / qg-qa: summary sentences per window (default 1)")
    ev.add_argument("--amc", choices=["llm", "rule"], default="rule", help="converter (default: rule)")
    ev.add_argument("--rounds", type=int, default=0, help="improvement rounds m (default 0: evaluate only)")
    ev.add_argument("--concurrency", type=int, default=None, help="items in flight at once")
    ev.add_argument(
        "--embeddings", action="store_true",
        help="the evidence checker (and the evidence shown with every method) aligns with MiniLM embeddings too; "
        "slower (default: lexical overlap, or EVIDENCE_EMBEDDINGS_IN_BULK=1)",
    )  # fmt: skip
    ev.set_defaults(func=cmd_evaluate)
    for module in (clitools.batch, clitools.alpha, clitools.report, clitools.distill, clitools.conseval, clitools.dhp):
        module.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    redact_logs()
    args = build_parser().parse_args(argv)
    if args.command == "evaluate" and args.task == "custom" and not args.criteria:
        print("error: --task custom needs --criteria", file=sys.stderr)
        return 2
    if args.command == "evaluate" and args.rounds < 0:
        print("error: --rounds must be 0 or more", file=sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
