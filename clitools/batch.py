"""`cli.py batch`: import a dataset (or reuse it) and run a batch over it, printing progress."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from clitools import METHODS, TASKS, positive_int

FORMATS = ("qags", "summeval", "paws", "jsonl", "csv")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("batch", help="run the evaluator over a dataset with human judgments")
    p.add_argument("--dataset", required=True, help="the dataset file")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--name", help="dataset name (default: the file name)")
    p.add_argument("--task", choices=TASKS, help="default: the dataset's")
    p.add_argument("--criteria", default="", help="criteria text for --task custom")
    p.add_argument(
        "--method",
        choices=METHODS,
        default="dce-amc",
        help="evidence: the offline evidence checker (no model call); summ-nli, sent-nli, qg-qa: the "
        "factual-inconsistency paradigms",
    )
    p.add_argument("--window", type=int, default=1, help="sent-nli / qg-qa: summary sentences per window")
    p.add_argument(
        "--summ-nli-mode",
        choices=["auto", "score", "label"],
        default="auto",
        help="summ-nli: ask for a score in the dataset's range (score) or Consistent/Inconsistent (label); "
        "auto scores when the dataset has human scores (paper 003, section 3.1)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run the configuration N times, each asking the model again (standard deviation over runs)",
    )
    p.add_argument("--output", default=None, help="write each item's result (verdicts, windows or QA pairs) here")
    p.add_argument("--amc", choices=["llm", "rule"], default="rule")
    p.add_argument("--rounds", type=int, default=0, help="improvement rounds (default 0: evaluate only)")
    p.add_argument("--alpha", type=float, default=0.0, help="Eq. 3 alpha (default 0, Appendix C.1)")
    p.add_argument("--beta", type=float, default=0.0, help="Eq. 3 beta (default 0, Appendix C.1)")
    p.add_argument("--concurrency", type=positive_int, default=None)
    p.add_argument("--limit", type=int, default=None, help="only the first N items")
    p.add_argument(
        "--reference-column", default="reference", help="jsonl/csv: the reference column (default reference)"
    )
    p.add_argument("--candidate-column", default="candidate")
    p.add_argument("--score-column", default=None)
    p.add_argument("--label-column", default=None)
    p.add_argument("--enqueue", action="store_true", help="hand the batch to the workers and return at once")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Import the dataset (or find it imported) and run its batch here, or hand it to the workers."""
    from services import datasets, tables
    from services.config import backend_from_settings, check_base_url
    from services.database import get_engine
    from services.dcr import DCRConfig
    from services.errors import InputError
    from services.jobs import batches
    from services.nli import paradigms as nli

    path = Path(args.dataset)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    if args.rounds < 0 or (args.limit is not None and args.limit < 1):
        print("error: --rounds must be 0 or more and --limit 1 or more", file=sys.stderr)
        return 2
    if args.window < 1 or args.repeats < 1:
        print("error: --window and --repeats must be 1 or more", file=sys.stderr)
        return 2
    if args.enqueue and args.output:
        print("error: --output needs the batch to run here; leave out --enqueue", file=sys.stderr)
        return 2
    try:
        backend = backend_from_settings()
        check_base_url(backend.base_url)
        tables.check_path(path, datasets.IMPORT_ADVICE)  # refused by its size before any database is made
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    engine = get_engine()
    mapping = None
    if args.format in ("jsonl", "csv"):
        mapping = datasets.ColumnMapping(
            reference=args.reference_column,
            candidate=args.candidate_column,
            id="id",
            human_score=args.score_column,
            human_label=args.label_column,
        )
    try:
        saved, result = datasets.import_file(
            engine,
            name=args.name or path.name,
            data=path,  # read from disk a chunk at a time
            fmt=args.format,
            mapping=mapping,
            task=args.task or "summarization",
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ds = datasets.get_dataset(engine, saved.id)
    assert ds is not None
    if result is not None:
        print(f"imported {ds.name}: {ds.n_items} items, {ds.n_rejected} rejected (dataset {ds.id})", file=sys.stderr)
        for r in result.rejected[:10]:
            print(f"  rejected row {r.row}: {r.reason}", file=sys.stderr)
    else:
        print(f"dataset {ds.id} ({ds.name}) was imported before; reusing it", file=sys.stderr)
    is_nli = nli.is_nli(args.method)
    cfg = DCRConfig(
        task=args.task or ds.task,
        criteria=args.criteria,
        method=args.method,
        amc=args.amc,
        max_rounds=0 if is_nli else args.rounds,
        alpha=args.alpha,
        beta=args.beta,
    )
    try:
        ids = batches.create_repeats(
            engine,
            repeats=args.repeats,
            dataset_id=ds.id,
            backend=backend,
            cfg=cfg,
            concurrency=args.concurrency,
            item_limit=args.limit,
            window=args.window,
            summ_nli_mode=args.summ_nli_mode,
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    how = backend.label if cfg.uses_model else "no model call"
    opts = f"window {args.window}" if is_nli else f"converter {args.amc}, rounds {args.rounds}"
    for k, bid in enumerate(ids):
        note = f" (repeat {k + 1} of {len(ids)})" if len(ids) > 1 else ""
        print(f"batch {bid}: {how}, {args.method}, {opts}{note}", file=sys.stderr)
    print_estimate(engine, ids[0], backend, repeats=len(ids))
    if args.enqueue:
        from services.jobs import queue as jobs  # the task queue, only when handing the batch to the workers

        for bid in ids:
            jobs.enqueue(bid)
            print(bid)
        return 0
    code = 0
    out = open(args.output, "w", encoding="utf-8") if args.output else None
    try:
        for bid in ids:
            code = max(code, run_here(engine, bid, backend, resume="resume with the app's Batches page"))
            if code == 130:
                return code
            print(bid)
            if out is not None:
                for line in item_lines(engine, bid):
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
    finally:
        if out is not None:
            out.close()
            print(f"wrote {args.output}", file=sys.stderr)
    return code


def item_lines(engine, batch_id: int) -> list[dict]:
    """One output line per item: id, status, score and the method's result (windows, QA pairs or rounds)."""
    from services.headless import item_rows

    return [
        {
            "batch": batch_id,
            "id": r.external_id,
            "status": r.status,
            "score": r.score,
            "error": r.error,
            "usage": r.usage,
            **r.result,
        }
        for chunk in item_rows(engine, batch_id)
        for r in chunk
    ]


def run_here(engine, bid: int, backend, *, resume: str) -> int:
    """Run one batch in this process with progress lines on stderr; its exit code (130: interrupted).

    `resume` says how to pick the batch up again after an interruption. Ctrl-C or SIGTERM stops the batch at
    once: results already in are written and every other item goes back to the queue (a second Ctrl-C leaves
    without that; the next run takes the items back, this process being gone). A full disk ends it with a
    message, every item not written still to do.
    """
    from services.errors import is_disk_full
    from services.jobs import batches

    stop = threading.Event()
    interrupted = threading.Event()

    def report() -> None:
        while not stop.wait(2.0):
            try:
                p = batches.progress(engine, bid)
            except Exception:  # progress is a courtesy: never let it print a traceback
                continue
            if p:
                eta = f", ETA {p.eta_s:.0f} s" if p.eta_s else ""
                print(f"  {p.finished}/{p.total} done ({p.failed} failed), {p.calls} calls{eta}", file=sys.stderr)

    def on_signal(signum, _frame) -> None:
        if interrupted.is_set():
            os._exit(130)
        interrupted.set()
        print(f"\n{signal.Signals(signum).name}: stopping (again to leave at once)", file=sys.stderr)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    threading.Thread(target=report, daemon=True).start()
    t = time.perf_counter()
    try:
        batches.process_batch(engine, bid, backend=backend, stop=interrupted)
    except Exception as exc:
        if is_disk_full(exc):
            print(f"error: {disk_full_message(exc)}; then {resume} (batch {bid})", file=sys.stderr)
            return 1
        if not interrupted.is_set():
            raise
        print(f"error on the way out: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        stop.set()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if interrupted.is_set():
        try:
            batches.request_cancel(engine, bid)  # cancelled, not left for the workers to pick up
            batches.settle(engine, bid)
        except Exception as exc:  # the next run takes the batch up all the same
            print(f"note: the batch could not be marked cancelled ({type(exc).__name__}: {exc})", file=sys.stderr)
        print(f"cancelled; {resume} (batch {bid})", file=sys.stderr)
        return 130
    p = batches.progress(engine, bid)
    assert p is not None
    print(
        f"batch {bid} {p.batch.status}: {p.done} done, {p.failed} failed, {p.calls} calls, "
        f"{p.cache_hits} cache hits, {time.perf_counter() - t:.1f} s",
        file=sys.stderr,
    )
    return 0 if p.failed < p.total else 1


def print_estimate(engine, bid: int, backend, *, repeats: int = 1) -> None:
    """The batch's pre-run estimate on stderr: calls, input tokens (with the largest call's), time, cost, and the
    documents refused for their size; nothing for a method that makes no model call."""
    from services import estimates
    from services.jobs import batches

    b = batches.batch_public(engine, bid)
    opts = batches.options(engine, bid)
    est = estimates.batch_estimate(
        engine,
        backend,
        b.dataset_id,
        method=b.method,
        window=opts.window,
        amc=b.amc,
        rounds=b.max_rounds,
        concurrency=b.concurrency,
        item_limit=b.item_limit,
        repeats=repeats,
    )
    if est.calls or est.n_refused:
        print(est.plain(), file=sys.stderr)


def disk_full_message(exc: BaseException) -> str:
    """Which disk is full: the one holding DATA_DIR (or the SQLite file), or the database server's."""
    from services.config import get_settings

    settings = get_settings()
    url = settings.resolved_database_url()
    if not url.startswith("sqlite"):
        return "the disk of the database server (DATABASE_URL) is full: free space there"
    path = Path(url.split("///", 1)[-1]).resolve().parent if "///" in url else None
    data_dir = Path(settings.data_dir).resolve()
    if path is None or path == data_dir:
        return f"the disk holding DATA_DIR ({data_dir}) is full: free space there"
    return f"the disk holding the database ({path}) is full: free space there"


def judge_batch(args: argparse.Namespace, path: Path, backend):
    """Import the file and run the judge of `args` (task, method, amc, window) over it as a batch, resumable and
    cached, as `card` and `compare` do: (engine, the import's result, the batch), or an exit code."""
    from services import dcr, headless, judges
    from services.database import get_engine
    from services.errors import InputError
    from services.nli import paradigms as nli

    cfg = dcr.DCRConfig(task=args.task, method=args.method, amc=args.amc, max_rounds=0)
    engine = get_engine(concurrency=backend.concurrency)
    try:
        prep = headless.prepare(engine, path=path, backend=backend, cfg=cfg, window=args.window)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    how = "no model call" if not cfg.uses_model else backend.label
    window = f" · window {args.window}" if nli.is_nli(args.method) else ""
    print(f"{prep.n_items} item(s) · {args.method}{window} · {how}", file=sys.stderr)
    print(f"batch {prep.batch_id}" + (" resumed" if prep.resumed else ""), file=sys.stderr)
    if not prep.resumed:
        print_estimate(engine, prep.batch_id, backend)
    if prep.pending and run_here(engine, prep.batch_id, backend, resume="run the same command again") == 130:
        return 130
    return engine, prep, judges.data.batches(engine, [prep.batch_id])[0]
