"""`cli.py evaluate`: evaluate (and optionally improve) a file of reference/candidate pairs as a batch.

    python cli.py evaluate --input pairs.jsonl --output out.jsonl [--task summarization|semantic|custom]
        [--method dce-amc|paragraph|evidence|summ-nli|sent-nli|qg-qa] [--window W] [--amc llm|rule]
        [--alpha A] [--beta B] [--rounds N] [--concurrency C] [--evidence]

The file runs as a batch (the app's Batches page); the same command again resumes it. One JSONL line per input
row; exit 0; 1 when every row failed or some item is left unevaluated (the same command again finishes it); 2
with a message on bad input; 130 when interrupted (Ctrl-C or SIGTERM: the items not finished go back to the
queue, and a rerun resumes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from clitools import METHODS, TASKS, positive_int


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `evaluate` on cli.py's subparsers."""
    ev = subparsers.add_parser("evaluate", help="evaluate (and optionally improve) reference/candidate pairs")
    ev.add_argument("--input", required=True, help="JSONL or CSV with id, reference, candidate")
    ev.add_argument("--output", required=True, help="JSONL file to write, one line per input row")
    ev.add_argument("--task", choices=TASKS, default="summarization")
    ev.add_argument("--criteria", help="criteria text for --task custom")
    ev.add_argument(
        "--method",
        choices=METHODS,
        default="dce-amc",
        help="evidence: the offline evidence checker (no model call); summ-nli, sent-nli, qg-qa: the "
        "factual-inconsistency paradigms (verdict only)",
    )
    ev.add_argument("--window", type=int, default=1, help="sent-nli / qg-qa: summary sentences per window (default 1)")
    ev.add_argument("--amc", choices=["llm", "rule"], default="rule", help="converter (default: rule)")
    ev.add_argument("--alpha", type=float, default=0.0, help="Eq. 3 alpha (default 0, Appendix C.1)")
    ev.add_argument("--beta", type=float, default=0.0, help="Eq. 3 beta (default 0, Appendix C.1)")
    ev.add_argument("--rounds", type=int, default=0, help="improvement rounds m (default 0: evaluate only)")
    ev.add_argument("--concurrency", type=positive_int, default=None, help="items in flight at once")
    ev.add_argument(
        "--evidence",
        action="store_true",
        help="add each sentence's evidence (top reference sentences, novel spans, support) to the output; "
        "computed after the model calls, once per distinct sentence (the evidence method always has it)",
    )
    ev.add_argument(
        "--embeddings",
        action="store_true",
        help="the evidence checker (and the evidence with --evidence) aligns with MiniLM embeddings too; "
        "slower (default: lexical overlap, or EVIDENCE_EMBEDDINGS_IN_BULK=1)",
    )
    ev.set_defaults(func=run)
    return ev


def run(args: argparse.Namespace) -> int:
    """Evaluate a file of pairs through the batch engine and write one JSONL line per row."""
    from clitools.batch import disk_full_message
    from services.errors import is_disk_full

    try:
        return _run(args)
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        print(f"error: {disk_full_message(exc)}; then run the same command again to resume", file=sys.stderr)
        return 1


def _labels_kept(engine, batch_id: int) -> int:
    """How many of the batch's dataset items carry a human label (from the rows' "label")."""
    from services.datasets.store import get_dataset
    from services.jobs import batches

    ds = get_dataset(engine, batches.batch_public(engine, batch_id).dataset_id)
    return int(((ds.meta if ds else {}).get("label_counts") or {}).get("binary", 0))


def _run(args: argparse.Namespace) -> int:
    from services.config import backend_from_settings, check_base_url
    from services.errors import InputError
    from services.tables import IMPORT_ADVICE, check_path

    if args.task == "custom" and not args.criteria:
        print("error: --task custom needs --criteria", file=sys.stderr)
        return 2
    if args.rounds < 0:
        print("error: --rounds must be 0 or more", file=sys.stderr)
        return 2
    if args.window < 1:
        print("error: --window must be 1 or more", file=sys.stderr)
        return 2
    if args.embeddings:  # the batch engine's threads read it through Settings
        os.environ["EVIDENCE_EMBEDDINGS_IN_BULK"] = "1"
    try:
        backend = backend_from_settings()
        check_base_url(backend.base_url)  # before any batch exists: a bad URL leaves nothing behind
        check_path(Path(args.input), IMPORT_ADVICE)  # a file over the limit leaves no database behind either
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    child = import_beside(Path(args.input), args.task) if getattr(args, "standalone", False) else None
    from clitools.batch import print_estimate, run_here
    from services import dcr, headless
    from services.database import get_engine
    from services.errors import is_disk_full
    from services.jobs import batches
    from services.nli import paradigms as nli

    if child is not None:
        child.join()  # its work is this process's next step: wait however long the file takes
    if args.concurrency:
        backend = backend.with_changes(concurrency=args.concurrency)
    is_nli = nli.is_nli(args.method)
    cfg = dcr.DCRConfig(
        task=args.task, criteria=args.criteria or "", method=args.method, amc=args.amc, alpha=args.alpha, beta=args.beta
    )
    cfg = replace(cfg, max_rounds=args.rounds if cfg.uses_model and not is_nli else 0)  # only a model rewrites
    engine = get_engine(concurrency=backend.concurrency)
    try:
        prep = headless.prepare(
            engine,
            path=Path(args.input),
            backend=backend,
            cfg=cfg,
            window=args.window,
            concurrency=backend.concurrency,
            output=Path(args.output),
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    n = prep.n_items + len(prep.rejected)
    if is_nli:
        print(f"{n} item(s) · {backend.label} · {args.method} · window {args.window}", file=sys.stderr)
        if args.rounds > 0:
            print(f"note: --rounds ignored: {args.method} gives a verdict, not a rewrite", file=sys.stderr)
    elif cfg.uses_model:
        print(
            f"{n} item(s) · {backend.label} · {args.method} · converter {args.amc} · rounds {args.rounds}",
            file=sys.stderr,
        )
    else:
        from services.dcr import evidence

        with evidence.bulk(args.embeddings or None):
            print(f"{n} item(s) · {evidence.model_name()} · no model call", file=sys.stderr)
        if args.rounds > 0:
            print(f"note: --rounds ignored: {dcr.NO_IMPROVE_REASON}", file=sys.stderr)
    if prep.note:
        print(f"note: {prep.note}", file=sys.stderr)
    unread = f"; {len(prep.rejected)} row(s) cannot be read" if prep.rejected else ""
    print(f"batch {prep.batch_id}" + (" resumed" if prep.resumed else "") + unread, file=sys.stderr)
    labels = _labels_kept(engine, prep.batch_id)
    if labels:
        print(
            f'{labels:,} label(s) kept from the rows\' "label" as the human labels: `cli.py report --run '
            f"{prep.batch_id}` compares the scores with them",
            file=sys.stderr,
        )
    if not prep.resumed:
        print_estimate(engine, prep.batch_id, backend)
    started = time.perf_counter()
    if prep.pending:
        code = run_here(engine, prep.batch_id, backend, resume="run the same command again to resume")
        if code == 1 and _left(batches, engine, prep.batch_id):
            return code  # stopped by a full disk: nothing to write yet
        interrupted = code == 130
    else:
        interrupted = False
    if args.evidence and not interrupted:
        from services.dcr import evidence  # numpy and the checker load only when evidence is asked for

        bulk = evidence.bulk(args.embeddings or None)
        lines = headless.output_lines(engine, prep, with_evidence=True)
    else:
        bulk, lines = contextlib.nullcontext(), headless.output_lines(engine, prep)
    out_path = Path(args.output)
    # Written as read from the database (a chunk at a time: memory does not grow with the file), into a file
    # beside the output that takes its name once complete, so a run that stops half-way leaves no half file.
    part = out_path.with_name(out_path.name + ".part")
    failed = 0
    errors: list[str] = []
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        with bulk, part.open("w", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                if line.get("error") and not (interrupted and str(line["error"]).startswith("not evaluated")):
                    failed += 1
                    if failed <= 20:
                        errors.append(f"{line['id']}: {line['error']}")
        os.replace(part, out_path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # the folder itself may be what cannot be made
            part.unlink(missing_ok=True)
        why = f"the disk holding {out_path.resolve().parent} is full" if is_disk_full(exc) else f"{exc}"
        print(
            f"error: cannot write {out_path}: {why}; the results are kept: the same command again writes them "
            f"(batch {prep.batch_id})",
            file=sys.stderr,
        )
        return 1
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    for message in errors:
        print(message, file=sys.stderr)
    if failed > 20:
        print(f"... and {failed - 20} more with errors", file=sys.stderr)
    print(
        f"wrote {out_path} ({n} lines, {failed} with errors) in {time.perf_counter() - started:.1f} s", file=sys.stderr
    )
    left = _left(batches, engine, prep.batch_id)
    if interrupted:
        p = batches.progress(engine, prep.batch_id)
        done = 0 if p is None else p.finished
        print(
            f"interrupted: {done} of {prep.n_items} item(s) finished and written, {left} left (their lines say "
            f"'not evaluated'{'; no evidence added' if args.evidence else ''}); run the same command again to "
            f"finish them (batch {prep.batch_id})",
            file=sys.stderr,
        )
        return 130
    if left:
        print(
            f"error: {left} item(s) not evaluated (another process holds them, or the run stopped early); "
            "run the same command again to finish them",
            file=sys.stderr,
        )
        return 1
    return 1 if failed == n else 0


def _left(batches, engine, batch_id: int) -> int:
    """Items of the batch still to evaluate (pending, or running in some process)."""
    p = batches.progress(engine, batch_id)
    return 0 if p is None else p.pending + p.running


def import_beside(path: Path, task: str):
    """Import the file as a dataset in a forked child while this process loads the model client and the batch
    engine: on a second core, reading the file and splitting its sentences (a quarter of a second for 500
    documents) no longer delay the first request. The database models load before the fork, once for both.

    The child only imports (its output discarded; a file imported before is found by its hash), so
    `headless.prepare` finds the dataset, or imports it with its own messages when the child could not.
    Only cli.py itself forks (never cli.main called from other code), and only where it is safe: Linux, a
    second core, no other thread, no database engine made yet. None otherwise.
    """
    import threading

    if not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2 or threading.active_count() > 1:
        return None  # forking is safe on Linux (macOS's system libraries may not survive it)
    import multiprocessing

    from db import engine as db_engine  # with the database models: loaded once, before the fork
    from services.datasets import pairs  # noqa: F401

    if db_engine.made():
        return None

    child = multiprocessing.get_context("fork").Process(target=_import_child, args=(path, task), daemon=True)
    child.start()
    return child


def _import_child(path: Path, task: str) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once; its transaction is rolled back
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    from services.database import get_engine
    from services.datasets.pairs import import_pairs

    import_pairs(get_engine(), path=path, task=task)
