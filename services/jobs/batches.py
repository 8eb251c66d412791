"""Batch runs of DCR over a dataset: create, claim, process, resume, cancel, re-run failed items.

Items are claimed atomically (a conditional UPDATE), so any number of workers, on any number of
machines, can share a batch without doing an item twice. A worker that goes quiet has its claimed
items returned to the queue by `recover`. Finished items are never sent to the model again: their
state is `done`, and every model answer is in the cache as well.
"""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import batches as db_batches
from db import datasets as db_datasets
from db.cache import BufferedSqlCache
from db.models import Batch, BatchOptions, BatchPublic, utcnow
from services import dcr
from services.config import BackendConfig, backend_from_record, get_settings
from services.errors import InputError
from services.jobs import runner as jobrunner
from services.jobs.runner import JobKind, JobTable, heartbeat_period, stale_limit, worker_id
from services.llm import LLMClient, UsageLedger, get_client, summarize_records
from services.nli import paradigms as nli
from services.runs import method_config, recorded_config
from services.text import split_sentences

log = logging.getLogger(__name__)

FLUSH_EVERY = 0.25


JOBS = JobTable(Batch)


# -- creating and steering batches --------------------------------------------------------------
def create_batch(
    engine: Engine,
    *,
    dataset_id: int,
    backend: BackendConfig,
    cfg: dcr.DCRConfig,
    concurrency: int | None = None,
    item_limit: int | None = None,
    name: str = "",
    window: int = 1,
    sample: int = 0,
    repeat_group: str | None = None,
) -> int:
    """A batch over the first `item_limit` items of a dataset, every item pending.

    `window` is Sent-NLI's and QG-QA's window w; `sample` the cache's sample index, so a repeat of the same
    configuration (Table 4's standard deviation) asks the model again instead of reading the cache.
    """
    if window < 1:
        raise InputError("The window w must be 1 or more sentences.")
    is_nli = nli.is_nli(cfg.method)
    with Session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        if ds is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        item_ids = db_datasets.item_ids(session=session, dataset_id=dataset_id, limit=item_limit or None)
        if not item_ids:
            raise InputError(f"Dataset {ds.name!r} has no items.")
        if not name:
            name = f"{ds.name} · {cfg.method}"
            if is_nli:
                name += f" · w={window}" if cfg.method in nli.WINDOWED else ""
            elif cfg.uses_model:
                name += f" · {cfg.amc}"
            name += f" · repeat {sample + 1}" if repeat_group else ""
        recorded = method_config(backend, cfg.method, window) if is_nli else recorded_config(backend, cfg)
        if not is_nli:  # Eq. 3's alpha and beta as set, read back by process_batch
            recorded = {**recorded, "params": {**recorded["params"], **eq3_params(cfg)}}
        batch = Batch(
            name=name,
            dataset_id=dataset_id,
            task=cfg.task,
            criteria=cfg.criteria,
            method=cfg.method,
            amc=cfg.amc,
            max_rounds=0 if is_nli else cfg.max_rounds,  # the paradigms give a verdict, no rewrite
            concurrency=concurrency or backend.concurrency,
            item_limit=item_limit,
            **recorded,
            n_items=len(item_ids),
        )
        batch_id = db_batches.add_batch(
            session=session, data=batch, item_ids=item_ids, window=window, sample=sample, repeat_group=repeat_group
        )
        session.commit()
        return batch_id


def eq3_params(cfg: dcr.DCRConfig) -> dict[str, float]:
    """The alpha and beta of Eq. 3 a batch records in its params (Appendix C.1's 0 unless set)."""
    return {"alpha": float(cfg.alpha), "beta": float(cfg.beta)}


def eq3_of(params: dict | None) -> dict[str, float]:
    """Eq. 3's alpha and beta recorded in a batch's params (0, 0 for batches made before they were)."""
    p = params or {}
    return {"alpha": float(p.get("alpha", dcr.DEFAULT_ALPHA)), "beta": float(p.get("beta", dcr.DEFAULT_BETA))}


def create_repeats(engine: Engine, *, repeats: int, **kwargs: Any) -> list[int]:
    """`repeats` batches of one configuration, each with its own sample index, grouped (Table 4)."""
    if repeats < 1:
        raise InputError("Repeats must be 1 or more.")
    if repeats == 1:
        return [create_batch(engine, **kwargs)]
    group = uuid.uuid4().hex[:12]
    return [create_batch(engine, sample=k, repeat_group=group, **kwargs) for k in range(repeats)]


def options(engine: Engine, batch_id: int) -> BatchOptions:
    """A batch's window, sample index and repeat group (defaults for batches made before they existed)."""
    with Session(engine) as session:
        row = db_batches.get_options(session=session, batch_id=batch_id)
        return BatchOptions(batch_id=batch_id) if row is None else row


def all_options(engine: Engine) -> dict[int, BatchOptions]:
    with Session(engine) as session:
        return db_batches.all_options(session=session)


def request_cancel(engine: Engine, batch_id: int) -> None:
    """Ask the workers to stop; items in flight finish, the rest stay pending (services.jobs.runner)."""
    with engine.begin() as conn:
        JOBS.request_cancel(conn, batch_id)


def mark_enqueued(engine: Engine, batch_id: int) -> None:
    """Note that the batch was handed to the queue (`recover` leaves it alone for a while)."""
    with engine.begin() as conn:
        db_batches.set_enqueued(conn=conn, batch_ids=[batch_id])


def reopen(engine: Engine, batch_id: int, *, failed_too: bool = False) -> int:
    """Make a batch runnable again (resume, or re-run its failed items); returns items pending."""
    with Session(engine) as session:
        n = db_batches.reopen(session=session, batch_id=batch_id, failed_too=failed_too)
        session.commit()
        return n


def delete_batch(engine: Engine, batch_id: int) -> bool:
    with Session(engine) as session:
        deleted = db_batches.delete_batch(session=session, batch_id=batch_id)
        session.commit()
        return deleted


# -- progress -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Progress:
    """Where a batch stands."""

    batch: BatchPublic
    total: int
    done: int
    failed: int
    running: int
    pending: int
    calls: int
    cache_hits: int
    tokens: int
    elapsed_s: float | None
    eta_s: float | None

    @property
    def finished(self) -> int:
        return self.done + self.failed


def progress(engine: Engine, batch_id: int) -> Progress | None:
    """Counts by state, usage totals and an ETA from the rate so far."""
    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            return None
        rows = db_batches.status_totals(session=session, batch_id=batch_id)
        pub = BatchPublic.model_validate(b)
    by = {r[0]: r for r in rows}
    count = {s: int(by[s][1]) if s in by else 0 for s in ("done", "failed", "running", "pending")}
    calls = sum(int(r[2]) for r in rows)
    hits = sum(int(r[3]) for r in rows)
    tokens = sum(int(r[4]) for r in rows)
    elapsed = eta = None
    if pub.started_at is not None:
        end = pub.finished_at if pub.status in ("done", "cancelled") and pub.finished_at else utcnow()
        started = pub.started_at if pub.started_at.tzinfo else pub.started_at.replace(tzinfo=end.tzinfo)
        end = end if end.tzinfo else end.replace(tzinfo=started.tzinfo)
        elapsed = max(0.0, (end - started).total_seconds())
        finished = count["done"] + count["failed"]
        left = count["pending"] + count["running"]
        if finished and left and pub.status == "running":
            eta = elapsed / finished * left
    return Progress(
        batch=pub, total=sum(count.values()), calls=calls, cache_hits=hits, tokens=tokens,
        elapsed_s=elapsed, eta_s=eta, **count,
    )  # fmt: skip


def batch_public(engine: Engine, batch_id: int) -> BatchPublic:
    """A batch's row; InputError if it does not exist."""
    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            raise InputError(f"Batch {batch_id} does not exist.")
        return BatchPublic.model_validate(b)


def list_batches(engine: Engine, limit: int = 200) -> list[BatchPublic]:
    with Session(engine) as session:
        return db_batches.list_batches(session=session, limit=limit)


# -- workers -------------------------------------------------------------------------------------
def heartbeat(engine: Engine, wid: str) -> None:
    """Record that worker `wid` is alive."""
    with engine.begin() as conn:
        db_batches.heartbeat(conn=conn, wid=wid)


def live_workers(engine: Engine) -> list[str]:
    cutoff = utcnow() - stale_limit()
    with Session(engine) as session:
        return db_batches.live_workers(session=session, since=cutoff)


def recover(engine: Engine, *, stale_after: timedelta | None = None) -> list[int]:
    """Return items claimed by dead workers to the queue; list batches that need a worker now."""
    stale_after = stale_limit() if stale_after is None else stale_after
    cutoff = utcnow() - stale_after
    with Session(engine) as session:
        n = db_batches.release_items_of_dead_workers(session=session, since=cutoff)
        if n:
            log.info("returned %d item(s) of dead workers to the queue", n)
        with_pending = db_batches.unattended(session=session, since=cutoff, enqueued_before=utcnow() - 3 * stale_after)
        if with_pending:
            db_batches.set_enqueued(conn=session.connection(), batch_ids=with_pending)
        session.commit()
    return with_pending


def joinable(engine: Engine) -> list[int]:
    """Batches handed to the workers with items waiting and no cancel request: any worker, on any machine,
    may join them (a batch that cli.py runs in its terminal is its own)."""
    with Session(engine) as session:
        return db_batches.joinable(session=session)


def claim(engine: Engine, batch_id: int, wid: str, limit: int) -> list[int]:
    """Atomically take up to `limit` pending items of a batch for worker `wid`; [] only when none is pending."""
    return list(claim_leases(engine, batch_id, wid, limit))


def claim_leases(engine: Engine, batch_id: int, wid: str, limit: int) -> dict[int, int]:
    """Like `claim`, with each claimed item's attempt number: the fencing token of this claim.

    Every claim raises an item's attempt count, so (worker, attempt) names one claim: a worker that lost the
    item (it paused, another took the item over) can no longer write it. Workers racing for the same items:
    the loser tries again (an empty answer would make it stop), and on PostgreSQL the candidates are locked
    with SKIP LOCKED, so racing workers pick different items.
    """
    while True:
        with engine.begin() as conn:
            got = db_batches.claim_items(conn=conn, batch_id=batch_id, wid=wid, limit=limit)
        if got is not None:
            return got


class LeaseLost(Exception):
    """This worker no longer holds the item (it paused and another worker took the item over)."""


class Leases:
    """The items a worker holds, each with its claim's attempt number, and the worker's heartbeat.

    While the heartbeat is fresh nobody can take an item over, so checking a claim costs nothing; after a
    gap (the process was paused, a write waited on a lock) every item held is checked in the database once,
    after a new heartbeat, before anything more is sent for it.
    """

    def __init__(self, engine: Engine, wid: str) -> None:
        self.engine = engine
        self.wid = wid
        # Trust a claim for half the stale limit after a heartbeat: a wide margin for clocks that differ
        # between machines (recover compares heartbeat times with its own clock).
        self.trust_s = stale_limit().total_seconds() / 2
        self._lock = threading.Lock()
        self._held: dict[int, int] = {}
        self._suspect: set[int] = set()
        self._confirmed = float("-inf")  # when the last successful heartbeat began (monotonic clock)

    def add(self, claimed: dict[int, int]) -> None:
        with self._lock:
            self._held.update(claimed)

    def attempt(self, batch_item_id: int) -> int | None:
        with self._lock:
            return self._held.get(batch_item_id)

    def release(self, batch_item_ids: list[int]) -> None:
        with self._lock:
            for i in batch_item_ids:
                self._held.pop(i, None)
                self._suspect.discard(i)

    def _gap(self, now: float) -> bool:
        """True (and every held item suspect) when the heartbeat is too old to vouch for the claims."""
        if now - self._confirmed < self.trust_s:
            return False
        self._suspect.update(self._held)
        return True

    def beat(self) -> None:
        """Write the heartbeat; a late one first makes every held item suspect."""
        started = time.monotonic()
        with self._lock:
            self._gap(started)
        heartbeat(self.engine, self.wid)
        with self._lock:
            self._confirmed = max(self._confirmed, started)

    def check(self, batch_item_id: int) -> None:
        """Raise LeaseLost unless this worker still holds the item; called before anything is sent for it."""
        with self._lock:
            attempt = self._held.get(batch_item_id)
            if attempt is None:
                raise LeaseLost(f"item {batch_item_id} is not held by {self.wid}")
            gap = self._gap(time.monotonic())
            verify = batch_item_id in self._suspect
        if gap:
            self.beat()  # first be alive again, so the answer below cannot go stale before the send
        if not verify:
            return
        with self.engine.connect() as conn:
            held = db_batches.holds(conn=conn, batch_item_id=batch_item_id, wid=self.wid, attempt=attempt)
        if not held:
            self.release([batch_item_id])
            raise LeaseLost(f"item {batch_item_id} was taken over while {self.wid} was away")
        with self._lock:
            self._suspect.discard(batch_item_id)


@dataclass
class ItemInput:
    batch_item_id: int
    reference: str
    candidate: str
    sentences: list[str]


def load_inputs(engine: Engine, batch_item_ids: list[int]) -> list[ItemInput]:
    with engine.connect() as conn:
        rows = db_batches.item_inputs(conn=conn, batch_item_ids=batch_item_ids)
    return [ItemInput(r[0], r[1], r[2], list(r[3] or [])) for r in rows]


def round_record(rnd: dcr.Round) -> dict[str, Any]:
    """A round as plain data (the CLI's output shape).

    A sentence judged by the evidence checker also carries its "evidence" (top reference sentences, novel
    spans, support); other methods leave it out here, so a batch spends no time on it.
    """
    return {
        "round": rnd.index,
        "candidate": rnd.text,
        **rnd.evaluation.score_fields(),
        "error": rnd.evaluation.error,
        "model_is_consistent": rnd.evaluation.model_is_consistent,
        "sentences": [
            {
                "index": v.index,
                "text": v.text,
                "verdict": v.verdict,
                "reason": v.reason,
                "mark": v.mark,
                "rule_mark": v.rule_mark,
                "error": v.error,
            }
            | ({"evidence": v.evidence} if v.evidence is not None else {})
            for v in rnd.evaluation.sentences
        ],  # fmt: skip
        "extras": [{"text": x.text, "mark": x.mark} for x in rnd.evaluation.extras],
        "rewrites": [
            {"index": w.index, "before": w.before, "after": w.after, "reason": w.reason} for w in rnd.rewrites
        ],
        "improve_error": rnd.improve_error,
    }


def process_nli_item(client: LLMClient, item: ItemInput, method: str, window: int) -> dict[str, Any]:
    """Summ-NLI, Sent-NLI or QG-QA on one item; the result keeps a round 0 of per-sentence verdicts, so the
    sentence-level meta-evaluation reads it like DCE's."""
    ledger = UsageLedger()
    c = client.fork(ledger)
    summary = " ".join(item.sentences) if item.sentences else item.candidate
    started = time.perf_counter()
    result = nli.run_method(c, item.reference, summary, method, window=window)
    record = nli.result_record(result, method, summary, window=window)
    usage = summarize_records(ledger.records)
    units = [record.get("summary") or {}, *record.get("windows", []), *record.get("pairs", [])]
    errors = [u["error"] for u in units if u.get("error")]
    label = record["label"]
    n_unknown = sum(s["verdict"] == "unknown" for s in record["sentences"])
    round0 = {
        "round": 0, "candidate": summary, "score": record["score"], "k": len(record["sentences"]),
        "alpha": 0.0, "beta": 0.0, "n_unknown": n_unknown, "error": errors[0] if errors else None,
        "model_is_consistent": None if label is None else label == "consistent",
        "sentences": record["sentences"], "extras": [], "rewrites": [], "improve_error": None,
    }  # fmt: skip
    return {
        "status": "failed" if label is None else "done",
        "error": (f"{len(errors)} of {record['n_units']} unit(s) unreadable: {errors[0]}" if errors else None),
        "score": record["score"],
        "final_score": record["score"],
        "n_sentences": len(split_sentences(summary)),
        "n_unknown": record["n_failed"],
        "n_rounds": 1,
        "calls": usage["calls"],
        "cache_hits": usage["cache_hits"],
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "latency_ms": (time.perf_counter() - started) * 1000,
        "result": record | {"rounds": [round0], "final_candidate": summary},
    }


def process_item(client: LLMClient, item: ItemInput, cfg: dcr.DCRConfig, *, window: int = 1) -> dict[str, Any]:
    """Algorithm 1 (or an NLI paradigm) on one item; returns the batch_item columns to write."""
    if nli.is_nli(cfg.method):
        return process_nli_item(client, item, cfg.method, window)
    if cfg.method == "evidence":
        from services.dcr import evidence

        with evidence.bulk():  # lexical alignment unless EVIDENCE_EMBEDDINGS_IN_BULK
            return _process_dcr_item(client, item, cfg)
    return _process_dcr_item(client, item, cfg)


def _process_dcr_item(client: LLMClient, item: ItemInput, cfg: dcr.DCRConfig) -> dict[str, Any]:
    ledger = UsageLedger()
    # fork() builds the HTTP client, which starts the embedded model: the evidence checker needs neither.
    c = client.fork(ledger) if cfg.uses_model else client
    sentences = item.sentences or split_sentences(item.candidate)
    units = dcr.candidate_units(item.candidate, cfg, sentences)
    started = time.perf_counter()
    if not units:
        return {"status": "failed", "error": "The candidate has no sentence to check."}
    rounds = [dcr.first_round(c, item.reference, units, cfg)]
    if cfg.max_rounds > 0:
        dcr.continue_rounds(c, item.reference, rounds, cfg)
    first, last = rounds[0].evaluation, rounds[-1].evaluation
    usage = summarize_records(ledger.records)
    # A document with an unjudged sentence has no score (services.dcr.Evaluation.failure): it counts as failed.
    return {
        "status": "failed" if first.failure else "done",
        "error": first.failure,
        "score": first.score.z_hat if first.score else None,
        "final_score": last.score.z_hat if last.score else None,
        "n_sentences": len(first.sentences),
        "n_unknown": first.n_unknown,
        "n_rounds": len(rounds),
        "calls": usage["calls"],
        "cache_hits": usage["cache_hits"],
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "latency_ms": (time.perf_counter() - started) * 1000,
        "result": {"rounds": [round_record(r) for r in rounds], "final_candidate": " ".join(dcr.compose_final(rounds))},
    }


def backend_for(batch: BatchPublic | Batch) -> BackendConfig:
    """The batch's recorded backend; its key (never stored) comes from this worker's environment."""
    params = {k: v for k, v in dict(batch.params).items() if k != "concurrency"}
    return backend_from_record(
        batch.backend_kind, base_url=batch.base_url, model=batch.model, params=params, concurrency=batch.concurrency
    )


def worker_endpoints(backend: BackendConfig) -> list[BackendConfig]:
    """The endpoints this worker sends a batch to: LLM_WORKER_BASE_URLS (the batch's model on each of
    this worker's servers, items spread over them), else the endpoint the batch recorded."""
    urls = [u.strip().rstrip("/") for u in (get_settings().llm_worker_base_urls or "").split(",") if u.strip()]
    if backend.is_embedded or not urls:
        return [backend]
    return [backend.with_changes(base_url=u) for u in urls]


@dataclass
class RunStats:
    processed: int = 0
    failed: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


_active: set[int] = set()
_active_lock = threading.Lock()


def active_batches() -> set[int]:
    """The batches this process is working on."""
    with _active_lock:
        return set(_active)


def process_batch(engine: Engine, batch_id: int, **kw: Any) -> RunStats:
    """Work on a batch until nothing is left to claim (or it is cancelled); safe to run on many workers.

    Within one process a batch is worked on once at a time (a queued task and a worker joining it
    meet here); other processes and machines share it through atomic claims.
    """
    with _active_lock:
        if batch_id in _active:
            return RunStats(notes=["this process is working on the batch already"])
        _active.add(batch_id)
    try:
        return _process_batch(engine, batch_id, **kw)
    finally:
        with _active_lock:
            _active.discard(batch_id)


def _process_batch(
    engine: Engine,
    batch_id: int,
    *,
    wid: str | None = None,
    backend: BackendConfig | None = None,
    on_progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> RunStats:
    """Work on a batch until nothing is left to claim (or it is cancelled); safe to run on many workers."""
    wid = wid or worker_id()
    stats = RunStats()
    t0 = time.perf_counter()
    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            raise InputError(f"Batch {batch_id} does not exist.")
        if b.cancel_requested or b.status in ("done", "cancelled"):
            return stats
        cfg = dcr.DCRConfig(task=b.task, criteria=b.criteria, method=b.method, amc=b.amc, max_rounds=b.max_rounds,  # type: ignore[arg-type]
                            **eq3_of(b.params))  # fmt: skip
        opts = db_batches.get_options(session=session, batch_id=batch_id)
        window, sample = (opts.window, opts.sample) if opts is not None else (1, 0)
        backend = backend or backend_for(b)
        concurrency = max(1, b.concurrency)
        db_batches.mark_running(session=session, batch=b)
        session.commit()
    cache = BufferedSqlCache(engine, backend.model)
    clients = [get_client(b, cache=cache, sample=sample) for b in worker_endpoints(backend)]
    if cfg.uses_model:
        for c in clients:
            c.sdk()  # build the HTTP clients before the threads start
        dcr.preload()
    turn = itertools.count()
    leases = Leases(engine, wid)
    leases.beat()
    beat_every = heartbeat_period()
    results: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
    last_flush = last_beat = last_cancel_check = time.monotonic()
    cancelled = False
    inflight: set[Future] = set()

    def run(item: ItemInput) -> None:
        bid = item.batch_item_id
        attempt = leases.attempt(bid)
        # Every request for the item first checks that this worker still holds it.
        client = copy.copy(clients[next(turn) % len(clients)])
        client.before_send = functools.partial(leases.check, bid)
        try:
            leases.check(bid)
            out = process_item(client, item, cfg, window=window)
        except LeaseLost as exc:
            log.info("batch %s: %s; its result is dropped", batch_id, exc)
            leases.release([bid])
            return
        except Exception as exc:  # a bug or a server fault on one item must not stop the batch
            log.exception("batch %s item %s failed", batch_id, bid)
            out = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        results.put((bid, out | {"attempt": attempt}))

    def flush() -> None:
        rows = []
        while True:
            try:
                bid, out = results.get_nowait()
            except queue.Empty:
                break
            rows.append({"b_id": bid, **out})
        with engine.begin() as conn:
            cache.flush(conn)
            written = db_batches.write_results(conn=conn, rows=rows, wid=wid) if rows else []
        leases.release([r["b_id"] for r in rows])
        if len(written) < len(rows):
            log.info("batch %s: %d result(s) dropped, their items taken over", batch_id, len(rows) - len(written))
        stats.processed += len(written)
        stats.failed += sum(r["status"] == "failed" for r in written)
        if written and on_progress:
            on_progress(len(written))

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"batch{batch_id}") as pool:
        exhausted = False
        while True:
            # Keep between one and two rounds of work queued; claim in large chunks (few transactions).
            if not cancelled and not exhausted and len(inflight) <= concurrency:
                ids = claim_leases(engine, batch_id, wid, concurrency * 2 - len(inflight))
                if not ids:
                    exhausted = True
                leases.add(ids)
                for item in load_inputs(engine, list(ids)):
                    inflight.add(pool.submit(run, item))
            if not inflight:
                break
            done, inflight = wait(inflight, timeout=FLUSH_EVERY, return_when=FIRST_COMPLETED)
            inflight = set(inflight)
            now = time.monotonic()
            if now - last_flush >= FLUSH_EVERY:
                flush()
                last_flush = now
            if now - last_beat >= beat_every:
                leases.beat()
                last_beat = now
            if now - last_cancel_check >= 1.0 or (stop is not None and stop.is_set()):
                last_cancel_check = now
                cancelled = JOBS.cancel_requested(engine, batch_id) or (stop is not None and stop.is_set())
        flush()
    _settle(engine, batch_id)
    stats.seconds = time.perf_counter() - t0
    log.info("batch %s: %s leaves it (%d item(s) written, %d failed)", batch_id, wid, stats.processed, stats.failed)
    return stats


def _settle(engine: Engine, batch_id: int) -> None:
    """Mark the batch done or cancelled once no item is pending or running."""
    with Session(engine) as session:
        db_batches.settle(session=session, batch_id=batch_id)
        session.commit()


def items_frame(engine: Engine, batch_id: int) -> Any:
    """One row per item: state, scores, human judgments, usage and error."""
    import pandas as pd

    with engine.connect() as conn:
        rows = db_batches.item_table(conn=conn, batch_id=batch_id)
    cols = [
        "item", "external_id", "status", "score", "final score", "human score", "human label", "sentences",
        "unknown", "rounds", "calls", "attempts", "error",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


jobrunner.register(JobKind("batch", process=process_batch, recover=recover, on_enqueue=mark_enqueued))
