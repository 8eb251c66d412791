"""Evaluating a file of documents headless (`cli.py evaluate`): the batch engine, and its results as lines.

The file is imported as a dataset (once: a file seen before is found by its hash) and evaluated as a batch,
so a headless run has the batch engine's speed, progress, resume and failure reporting. Running the same
command again resumes the unfinished batch of the same configuration instead of starting over.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.engine import Engine

from db import batches as db_batches
from services import datasets, dcr
from services.config import BackendConfig
from services.datasets.pairs import NAME_PREFIX, import_pairs
from services.jobs import batches
from services.nli import paradigms as nli
from services.runs import check_context, method_config, recorded_config
from services.text import InputError

EVIDENCE_CHUNK = 256  # documents whose evidence is computed in one call (one embedding pass)


@dataclass(frozen=True)
class Prepared:
    """The batch that evaluates a file, whether it was resumed, its items left to send, and the rows that
    could not be read."""

    batch_id: int
    resumed: bool
    n_items: int
    pending: int
    rejected: list[datasets.RejectedRow]
    note: str | None = None  # why an unfinished batch of the same file was not resumed


def prepare(
    engine: Engine,
    *,
    path: Path,
    backend: BackendConfig,
    cfg: dcr.DCRConfig,
    window: int = 1,
    concurrency: int | None = None,
    output: Path | None = None,
) -> Prepared:
    """Import the file (rows with id, reference, candidate) and find or create its batch: one of the same
    configuration with work left, else (`output`) a finished one whose lines that file never received, else a
    new one.

    Raises InputError when the file cannot be used at all; rows that cannot be read are listed in `rejected`.
    """
    saved, result = import_pairs(engine, path=path, task=cfg.task)
    rejected = result.rejected if result is not None else datasets.rejected_rows(engine, saved.id)
    bid, note, _ = _unfinished(engine, saved.id, backend, cfg, window)
    if bid is None and output is not None:
        bid = _unwritten(engine, saved.id, backend, cfg, window, output)
    resumed = bid is not None
    if bid is not None:
        # Items claimed by a run that is gone go back to the queue: at once for a process of this machine
        # that no longer runs (interrupted, killed), after the stale limit for a silent worker elsewhere.
        batches.release_gone(engine, bid, active=batches.active_batches)
        batches.recover(engine)
    else:
        bid = batches.create_batch(
            engine,
            dataset_id=saved.id,
            backend=backend,
            cfg=cfg,
            concurrency=concurrency,
            window=window,
            name=f"{NAME_PREFIX}{path.name} · {cfg.method}"[:200],
        )
        if backend.is_embedded and cfg.uses_model and not nli.is_nli(cfg.method):
            _refuse_what_the_embedded_model_cannot_read(engine, bid, backend)
    pending = batches.reopen(engine, bid)  # a batch with nothing left to send is done here
    n = batches.batch_public(engine, bid).n_items
    return Prepared(bid, resumed=resumed, n_items=int(n), pending=pending, rejected=rejected, note=note)


def _refuse_what_the_embedded_model_cannot_read(engine: Engine, batch_id: int, backend: BackendConfig) -> None:
    """Fail at once, with what to do instead, the items longer than the embedded model's context."""
    with engine.connect() as conn:
        rows = db_batches.item_texts(conn=conn, batch_id=batch_id)
    refused = []
    for item_id, reference, candidate in rows:
        try:
            check_context(backend, reference, candidate)
        except InputError as exc:
            refused.append({"b_id": item_id, "error": str(exc)})
    if refused:
        with engine.begin() as conn:
            db_batches.fail_items(conn=conn, errors=refused)


def _unwritten(
    engine: Engine, dataset_id: int, backend: BackendConfig, cfg: dcr.DCRConfig, window: int, output: Path
) -> int | None:
    """The newest finished headless batch of this configuration when `output` never received its lines: the
    file is missing, or older than the batch's finish (writing it failed). Its results are written again rather
    than a new batch made from the cache."""
    bid, _note, finished = _unfinished(engine, dataset_id, backend, cfg, window, statuses=("done",))
    if bid is None:
        return None
    try:
        written = output.stat().st_mtime
    except OSError:
        return bid
    if finished is None:
        return None
    at = finished if finished.tzinfo else finished.replace(tzinfo=UTC)
    return bid if at.timestamp() > written else None


def _unfinished(
    engine: Engine,
    dataset_id: int,
    backend: BackendConfig,
    cfg: dcr.DCRConfig,
    window: int,
    *,
    statuses: tuple[str, ...] = ("queued", "running", "cancelled"),
) -> tuple[int | None, str | None, datetime | None]:
    """The newest headless batch over this dataset with the same configuration, endpoint and model that has
    work left (or is in one of `statuses`), with its finish time; else None and, when one differs only by its
    endpoint or its model, a note that names both."""
    is_nli = nli.is_nli(cfg.method)
    recorded = method_config(backend, cfg.method, window) if is_nli else recorded_config(backend, cfg, bulk=True)
    match = {
        "task": cfg.task,
        "criteria": cfg.criteria,
        "method": cfg.method,
        "amc": cfg.amc,
        "max_rounds": 0 if is_nli else cfg.max_rounds,
        "backend_kind": recorded["backend_kind"],
    }
    with engine.connect() as conn:
        rows = db_batches.same_configuration(
            conn=conn, dataset_id=dataset_id, name_prefix=NAME_PREFIX, match=match, statuses=statuses
        )
    other = None
    for bid, w, sample, group, params, base_url, model, finished in rows:
        same_eq3 = is_nli or batches.eq3_of(params) == batches.eq3_params(cfg)
        if (w or 1) != window or sample or group is not None or not same_eq3:
            continue
        same_url = _endpoint(base_url) == _endpoint(recorded["base_url"])
        if same_url and model == recorded["model"]:
            return int(bid), None, finished
        if other is None and not same_url:
            other = (
                f"batch {bid} over this file with the same settings used {base_url or 'the embedded model'}; "
                f"this run uses {recorded['base_url'] or 'the embedded model'}, so it starts a new batch "
                "(answers from two servers are never mixed in one batch)"
            )
        elif other is None:
            other = (
                f"batch {bid} over this file with the same settings used the model {model!r} (LLM_MODEL); this "
                f"run uses {recorded['model']!r}, so it starts a new batch (answers of two models are never mixed "
                f"in one batch; LLM_MODEL={model} resumes batch {bid})"
            )
    return None, other, None


def _endpoint(url: str | None) -> str | None:
    """A base URL as recorded (credentials removed), compared without case in the scheme and host and without
    a trailing slash."""
    if not url:
        return None
    parts = urlsplit(url.rstrip("/"))
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


# -- results as output lines --------------------------------------------------------------------
@dataclass(frozen=True)
class ItemRow:
    """One item of a batch as stored: its id in the input, reference, state, usage and result."""

    external_id: str
    reference: str
    status: str
    score: float | None
    error: str | None
    usage: dict[str, Any]
    result: dict[str, Any]


def item_rows(engine: Engine, batch_id: int, *, chunk: int = 500) -> Iterator[list[ItemRow]]:
    """A batch's items in input order, `chunk` at a time."""
    last = -1
    while True:
        with engine.connect() as conn:
            rows = db_batches.output_rows(conn=conn, batch_id=batch_id, after_idx=last, limit=chunk)
        if not rows:
            return
        last = rows[-1][0]
        yield [
            ItemRow(
                external_id=r[1],
                reference=r[2],
                status=r[3],
                score=r[4],
                error=r[5],
                usage={
                    "calls": r[6],
                    "cache_hits": r[7],
                    "prompt_tokens": r[8],
                    "completion_tokens": r[9],
                    "latency_s": round((r[10] or 0.0) / 1000, 2),
                },
                result=dict(r[11] or {}),
            )
            for r in rows
        ]


def dcr_line(row: ItemRow) -> dict[str, Any]:
    """The output line of a DCE, paragraph or evidence item: round 0's score and verdicts, every round, usage.

    The rounds are the batch engine's records (`batches.round_record`); round 0's sentences are the same
    records as its entry in `rounds`.
    """
    rounds = row.result.get("rounds") or []
    first = rounds[0] if rounds else {}
    error = row.error or (None if row.status == "done" else f"not evaluated ({row.status})")
    return {
        "id": row.external_id,
        "score": first.get("score"),
        "k": first.get("k", 0),
        "alpha": first.get("alpha", 0.0),
        "beta": first.get("beta", 0.0),
        **{k: first[k] for k in ("partial_score", "n_unknown", "n_judged", "checker_score") if k in first},
        "sentences": first.get("sentences", []),
        "rounds": rounds,
        "final_candidate": row.result.get("final_candidate", ""),
        "usage": row.usage,
        "error": error,
    }


def method_line(row: ItemRow) -> dict[str, Any]:
    """The output line of a Summ-NLI / Sent-NLI / QG-QA item: verdict, per-sentence verdicts, and its windows
    with their reasoning or its question-answer pairs, with the document sentences used."""
    rec = {k: v for k, v in row.result.items() if k not in ("usage", "rounds", "final_candidate")}
    error = row.error or (None if rec.get("label") is not None else "no verdict")
    return {"id": row.external_id, **rec, "usage": row.usage, "error": error}


def attach_evidence(lines: Sequence[dict[str, Any]], references: Sequence[str], *, task: str) -> None:
    """Add each sentence's evidence (services.dcr.evidence) to every round of each line, in place.

    Every distinct sentence of a document is analysed once (a sentence a round kept has the evidence it
    had), and the documents go to the checker together, so their sentences are embedded in one pass.
    """
    from services.dcr import evidence  # the embedding model loads only when evidence is asked for

    todo = []
    for line, ref in zip(lines, references, strict=True):
        sentences = [s for r in line.get("rounds", []) for s in r.get("sentences", []) if "evidence" not in s]
        if sentences:
            todo.append((ref, sentences))
    pairs = [(ref, list(dict.fromkeys(s["text"] for s in sentences))) for ref, sentences in todo]
    found = evidence.analyse_many(pairs, noun=dcr.REFERENCE_NOUN.get(task, "reference"))
    for (_, sentences), (_, texts), per_doc in zip(todo, pairs, found, strict=True):
        by_text = {t: se.record() for t, se in zip(texts, per_doc, strict=True)}
        for s in sentences:
            s["evidence"] = by_text[s["text"]]


def output_lines(engine: Engine, prepared: Prepared, *, with_evidence: bool = False) -> Iterator[dict[str, Any]]:
    """One line per input row: the batch's items in input order, then the rows that could not be read."""
    batch = batches.batch_public(engine, prepared.batch_id)
    method, task = batch.method, batch.task
    for chunk in item_rows(engine, prepared.batch_id, chunk=EVIDENCE_CHUNK):
        if nli.is_nli(method):
            lines = [method_line(r) for r in chunk]
        else:
            lines = [dcr_line(r) for r in chunk]
            if with_evidence:
                attach_evidence(lines, [r.reference for r in chunk], task=task)
        for line in lines:
            yield {"id": line.pop("id"), "batch": prepared.batch_id, **line}
    for r in prepared.rejected:
        yield {"id": str(r.row), "batch": prepared.batch_id, "error": f"row {r.row}: {r.reason}"}
