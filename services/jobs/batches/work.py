"""Working on a batch: claim items, process them on threads, write results under the claim, settle.

Finished items are never sent to the model again: their state is `done`, and every model answer is in
the cache as well.
"""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import batches as db_batches
from db import reserve
from db.cache import BufferedSqlCache
from db.cache import store as store_cache
from db.models import Batch, BatchPublic
from services import dcr, result_columns
from services.config import BackendConfig, backend_from_record, check_base_url, get_settings
from services.errors import InputError, is_disk_full
from services.jobs.batches.claims import LeaseLost, Leases, claim_leases, release_gone, release_own
from services.jobs.batches.create import eq3_of, summ_nli_range, too_long
from services.jobs.batches.items import ItemInput, load_inputs, process_item, usage_of
from services.jobs.runner import heartbeat_period, worker_id
from services.llm import UsageLedger, get_client

log = logging.getLogger(__name__)

FLUSH_EVERY = 0.25
OFFLINE_AHEAD = 32  # items queued ahead of a batch that makes no model call (claimed twice as many at a time)
# On a stop (Ctrl-C, SIGTERM, a failed write): nothing more is sent, and the answers already asked for are
# waited for this long, then written with the finished results, so a resumed run never pays for them again.
DRAIN_SECONDS = 10.0
# A worker told to leave (SIGTERM, SIGINT) waits less: a service manager kills it soon after.
SHUTDOWN_DRAIN_SECONDS = 2.0
# The disk full with no reserve left: the held results are tried again this often, said in the log this often,
# and set aside in a file off that disk after this long without room (the next run writes them).
HELD_RETRY_EVERY = 2.0
HELD_SAY_EVERY = 30.0
HOLD_SECONDS = 300.0
_shutdown = threading.Event()  # set once for the whole process: every batch it works on stops


def shutdown(timeout: float = SHUTDOWN_DRAIN_SECONDS + 3.0) -> bool:
    """Stop every batch this process works on (nothing more sent; the answers in flight waited for, at most
    SHUTDOWN_DRAIN_SECONDS, and written; the other items given back); True when all have left in `timeout`."""
    _shutdown.set()
    deadline = time.monotonic() + timeout
    while active_batches() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not active_batches()


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
    """Work on a batch until nothing is left to claim (or it is cancelled); safe to run on many workers.

    When `stop` is set the worker leaves at once: results already in are written, and the items in flight
    go back to the queue (the same happens when an error ends the loop).
    """
    wid = wid or worker_id()
    stats = RunStats()
    t0 = time.perf_counter()
    with Session(engine) as session:
        b = db_batches.get_batch(session=session, batch_id=batch_id)
        if b is None:
            raise InputError(f"Batch {batch_id} does not exist.")
        if b.cancel_requested or b.status in ("done", "cancelled"):
            return stats
        cfg = dcr.DCRConfig(
            task=b.task,
            criteria=b.criteria,
            method=b.method,
            amc=b.amc,
            max_rounds=b.max_rounds,  # type: ignore[arg-type]
            **eq3_of(b.params),
        )
        score_range = summ_nli_range(b.params) if b.method == "summ-nli" else None
        opts = db_batches.get_options(session=session, batch_id=batch_id)
        window, sample = (opts.window, opts.sample) if opts is not None else (1, 0)
        backend = backend or backend_for(b)
        concurrency = max(1, b.concurrency)
        # Without model calls (the evidence checker) an item is pure Python work: more threads only contend for
        # the interpreter lock (1.5 ms an item at 4 threads). One thread then, with a deeper queue so that
        # claims stay few.
        threads, ahead = (concurrency, concurrency) if cfg.uses_model else (1, max(concurrency, OFFLINE_AHEAD))
        endpoints = worker_endpoints(backend)
        for e in endpoints:  # a URL that cannot be used stops here, the batch not marked running
            if not e.is_embedded:
                check_base_url(e.base_url, name="The batch's base URL")
        db_batches.mark_running(session=session, batch=b)
        session.commit()
    restore_set_aside(engine)  # answers an earlier run could not write on a full disk: written first
    cache = BufferedSqlCache(engine, backend.model)
    reserve.ensure(engine)  # room for the answers in flight, should the disk fill
    clients = [get_client(b, cache=cache, sample=sample) for b in endpoints]
    if cfg.uses_model:
        for c in clients:
            c.sdk()  # build the HTTP clients before the threads start
    turn = itertools.count()
    limit = get_settings().max_input_chars
    # read once: settings are looked up by comparing the whole environment, a cost per item at 10,000 items
    embeddings = get_settings().evidence_embeddings_in_bulk if cfg.method == "evidence" else None
    leases = Leases(engine, wid)
    leases.beat()
    beat_every = heartbeat_period()
    results: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
    finished: queue.Queue[None] = queue.Queue()  # one entry per item whose thread is done with it
    last_flush = last_beat = last_cancel_check = time.monotonic()
    cancelled = False
    deleting = False  # the batch is being deleted: nothing more is sent and no result is written
    # Items submitted and not finished. Waiting on the futures themselves (wait(FIRST_COMPLETED)) would hang a
    # waiter on each of them at every turn of the loop and have every finishing thread notify it: at 64 in
    # flight, more CPU than the loop's own work.
    inflight: list[Future] = []
    pending = 0
    stopping = threading.Event()  # set on a stop or a failed write: nothing more is sent
    held: list[dict[str, Any]] = []  # results not written yet (a failed write keeps them for the next)
    # The disk is full and no reserve is left: nothing more is claimed, and the results (with the answers in the
    # cache's buffer) stay in memory, at most the items claimed, until a write goes through.
    full: dict[str, Any] = {"since": None, "error": None, "said": float("-inf"), "counts": None}

    def before_send(bid: int) -> None:
        if stopping.is_set() or _shutdown.is_set() or (stop is not None and stop.is_set()):  # before the loop sees it
            raise LeaseLost(f"item {bid}: the batch is stopping; nothing more is sent for it")
        leases.check(bid)

    def run(item: ItemInput) -> None:
        try:
            work(item)
        finally:
            finished.put(None)  # the loop counts items in flight by these, not by waiting on their futures

    def work(item: ItemInput) -> None:
        bid = item.batch_item_id
        attempt = leases.attempt(bid)
        # Every request for the item first checks that this worker still holds it.
        client = copy.copy(clients[next(turn) % len(clients)])
        client.before_send = functools.partial(before_send, bid)
        client.refresh = item.refresh  # a re-run of a failed item asks again and replaces its cached answer
        texts = (("reference", item.reference), ("candidate", item.candidate))
        over = [(what, len(t)) for what, t in texts if len(t) > limit]
        ledger = UsageLedger()  # every call the item makes, whatever becomes of its result
        try:
            leases.check(bid)
            if over:  # never sent: the same bound as a single run's, whatever path made the batch
                out = {"status": "failed", "error": too_long(*over[0], limit)}
            else:
                out = process_item(
                    client, item, cfg, window=window, score_range=score_range, embeddings=embeddings, ledger=ledger
                )
        except LeaseLost as exc:
            log.info("batch %s: %s; its result is dropped", batch_id, exc)
            leases.release([bid])
            if ledger.records:  # what it sent before it stopped was paid for: counted, with no result
                results.put((bid, {"usage_only": True, "attempt": attempt} | usage_of(ledger.records)))
            return
        except Exception as exc:  # a bug or a server fault on one item must not stop the batch
            log.exception("batch %s item %s failed", batch_id, bid)
            out = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        results.put((bid, out | usage_of(ledger.records) | {"attempt": attempt}))

    def collect() -> None:
        while True:
            try:
                bid, out = results.get_nowait()
            except queue.Empty:
                break
            # what the pages read of the result, written next to it (services/result_columns.py)
            held.append({"b_id": bid, **out, **result_columns.columns(out.get("result"))})
        if deleting:  # the batch goes: its results are not written (the answers stay in the cache)
            held[:] = []

    def unwritten() -> int:
        """Results and answers waiting to be written."""
        collect()
        return len(held) + len(cache)

    def disk_full(exc: BaseException) -> bool:
        """Whether `exc` is a full disk this batch holds its answers through (no reserve left to free)."""
        if not is_disk_full(exc) or reserve.exists(engine):
            return False
        if full["since"] is None:
            full["since"] = time.monotonic()
            stats.notes.append("the disk was full: answers held in memory until there was room")
        full["error"] = exc
        return True

    def say_held() -> None:
        """Say how much is held: when the disk fills, when the items in flight have all come in, and every
        HELD_SAY_EVERY seconds after, if the count changed."""
        now, counts = time.monotonic(), (len(held), len(cache))
        if counts == full["counts"] and now - full["said"] < HELD_SAY_EVERY:
            return
        if full["said"] > full["since"] and now - full["said"] < HELD_SAY_EVERY and pending:
            return
        full["said"], full["counts"] = now, counts
        log.warning(
            "batch %s: the disk holding the database is full: %d finished item(s) and %d model answer(s) held in "
            "memory%s; nothing more is claimed, and they are written as soon as there is room (free space there)",
            batch_id,
            *counts,
            f", {pending} item(s) still in flight" if pending else "",
        )

    def flush() -> bool:
        """Write the results and answers in; False when the disk is full (everything kept for the next try)."""
        collect()
        taken = cache.take()
        try:
            with engine.begin() as conn:
                cache.write(conn, taken)
                written = db_batches.write_results(conn=conn, rows=held, wid=wid) if held else []
        except BaseException as exc:
            cache.restore(taken)  # paid for: kept for the next write
            if disk_full(exc):
                return False
            raise
        rows, held[:] = list(held), []
        if full["since"] is not None:
            log.warning("batch %s: room again on the disk: %d held result(s) written", batch_id, len(rows))
            full["since"] = None
        leases.release([r["b_id"] for r in rows])
        results_in = [r for r in rows if not r.get("usage_only")]
        if len(written) < len(results_in):
            log.info("batch %s: %d result(s) dropped, their items taken over", batch_id, len(results_in) - len(written))
        stats.processed += len(written)
        stats.failed += sum(r["status"] == "failed" for r in written)
        if written and on_progress:
            on_progress(len(written))
        return True

    def set_aside() -> None:
        """Leaving with results or answers the full disk would not take: put them in a file off that disk, for
        the next run to write (db.reserve.spill); nothing paid for is dropped."""
        if not unwritten():
            return
        taken = cache.take()
        kept = {"wid": wid, "batch_id": batch_id, "cache": taken[0], "replace": sorted(taken[1]), "results": held}
        path = reserve.spill(engine, kept)
        if path is None:
            log.error(
                "batch %s: %d result(s) and %d answer(s) could not be written or set aside: no room anywhere",
                batch_id,
                len(held),
                len(taken[0]),
            )
            cache.restore(taken)
            return
        log.warning(
            "batch %s: %d result(s) and %d answer(s) set aside in %s; the next run writes them (free space on "
            "the database's disk, then resume)",
            batch_id,
            len(held),
            len(taken[0]),
            path,
        )
        held[:] = []

    def drain(timeout: float | None = None) -> None:
        """Send nothing more; wait, at most DRAIN_SECONDS, for the answers already asked for (once)."""
        if stopping.is_set():
            return
        stopping.set()
        for f in inflight:
            f.cancel()  # an item not started yet stays unsent
        if timeout is None:
            timeout = SHUTDOWN_DRAIN_SECONDS if _shutdown.is_set() else DRAIN_SECONDS
        wait(inflight, timeout=timeout)

    def finished_items(timeout: float) -> int:
        """How many items ended, waiting up to `timeout` for the first."""
        try:
            finished.get(timeout=timeout)
        except queue.Empty:
            return 0
        n = 1
        while True:
            try:
                finished.get_nowait()
            except queue.Empty:
                return n
            n += 1

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"batch{batch_id}")
    leaving = False
    try:
        exhausted = False
        while True:
            if _shutdown.is_set() or (stop is not None and stop.is_set()):
                leaving = True  # the answers in flight are written below; the rest goes back to the queue
                drain()
                break
            # Keep between one and two rounds of work queued; claim in large chunks (few transactions).
            if not cancelled and not exhausted and full["since"] is None and pending <= ahead:
                try:
                    ids = claim_leases(engine, batch_id, wid, ahead * 2 - pending)
                except Exception as exc:
                    if not disk_full(exc):
                        raise
                    ids = None
                if ids is not None:
                    if not ids:
                        exhausted = True
                    leases.add(ids)
                    inflight = [f for f in inflight if not f.done()]
                    for item in load_inputs(engine, list(ids)):
                        inflight.append(pool.submit(run, item))
                        pending += 1
            if not pending and full["since"] is None:
                break
            if not pending and not unwritten():
                raise full["error"]  # the disk is full and nothing is held: the run stops, saying so
            pending -= finished_items(FLUSH_EVERY)
            now = time.monotonic()
            if now - last_flush >= (HELD_RETRY_EVERY if full["since"] is not None else FLUSH_EVERY):
                flush()
                last_flush = now
                if full["since"] is not None:
                    say_held()
                if full["since"] is not None and not pending and now - full["since"] >= HOLD_SECONDS:
                    raise full["error"]  # no room for so long: set aside below, and the run stops saying so
            if now - last_beat >= beat_every:
                try:
                    leases.beat()
                except Exception as exc:
                    if not disk_full(exc):
                        raise
                last_beat = now
            if now - last_cancel_check >= 1.0:
                last_cancel_check = now
                cancelled, deleting = stop_state(engine, batch_id)
                if deleting:  # stop at once: nothing more sent, the answers in flight not waited for
                    leaving = True
                    drain(timeout=0)
                    break
        if not flush() and not deleting:
            raise full["error"]  # stopped while the disk is full: what is held is set aside below
    except BaseException as exc:
        leaving = True
        drain()
        if is_disk_full(exc) and reserve.release(engine):
            try:
                flush()  # in the room the reserve kept: the answers paid for are written
            except Exception as again:
                log.warning("batch %s: %d result(s) could not be written (%s)", batch_id, len(held), again)
        if full["since"] is not None and not is_disk_full(exc):  # interrupted while holding: one last try
            try:
                flush()
            except Exception as again:
                log.warning("batch %s: the held results could not be written (%s)", batch_id, again)
        if is_disk_full(exc) or full["since"] is not None:
            set_aside()
        _give_back(engine, batch_id, wid, leases)  # every item not written can be claimed again
        raise
    finally:
        # Leaving early, the requests in flight are not waited for: their items go back to the queue and
        # their threads find the lease gone at their next request.
        pool.shutdown(wait=not leaving, cancel_futures=leaving)
    _give_back(engine, batch_id, wid, leases)
    if deleting:
        finish_delete(engine, batch_id)
    else:
        settle(engine, batch_id)
    stats.seconds = time.perf_counter() - t0
    log.info("batch %s: %s leaves it (%d item(s) written, %d failed)", batch_id, wid, stats.processed, stats.failed)
    return stats


def restore_set_aside(engine: Engine) -> int:
    """Write the results and answers runs set aside when the database's disk was full (db.reserve.spill); the
    files written are removed, the others kept for the next run. Returns the results written."""
    n = 0
    for path in reserve.spilled(engine):
        taken = path.with_name(f"{path.name.split('.json')[0]}.json.{os.getpid()}")
        try:
            path.rename(taken)  # one process takes the file: its usage is added once
        except OSError:
            continue  # another process took it
        kept = reserve.read_spill(taken)
        try:
            if kept is None:
                raise ValueError("unreadable")
            with engine.begin() as conn:
                store_cache(conn, (kept.get("cache") or [], set(kept.get("replace") or [])))
                n += db_batches.write_set_aside(conn=conn, rows=kept.get("results") or [], wid=kept.get("wid", ""))
        except Exception as exc:
            log.warning("the answers set aside in %s could not be written yet (%s)", path, exc)
            taken.rename(taken.with_name(taken.name.rsplit(".", 1)[0]))  # free for the next run
            continue
        taken.unlink(missing_ok=True)
        log.warning("the answers set aside in %s are written (%d result(s))", path, n)
    return n


def _give_back(engine: Engine, batch_id: int, wid: str, leases: Leases) -> None:
    """Return to the queue the items this worker claimed and did not write (none after a full run)."""
    held = leases.held()
    leases.release(held)
    try:
        n = release_own(engine, batch_id, wid)
    except Exception as exc:  # the database may be full or away: the next run takes the items back (release_gone)
        log.warning("batch %s: could not return %s's items to the queue (%s)", batch_id, wid, exc)
        return
    if n:
        log.info("batch %s: %d unfinished item(s) of %s back in the queue", batch_id, n, wid)


def settle(engine: Engine, batch_id: int) -> None:
    """Mark the batch done or cancelled once no item is pending or running."""
    with Session(engine) as session:
        db_batches.settle(session=session, batch_id=batch_id)
        session.commit()


DELETE_WAIT_SECONDS = 10.0  # how long a delete waits for the workers of a running batch to let go


def stop_state(engine: Engine, batch_id: int) -> tuple[bool, bool]:
    """(cancel requested, being deleted) of a batch, which its workers read every second."""
    with engine.connect() as conn:
        return db_batches.stop_state(conn=conn, batch_id=batch_id)


def finish_delete(engine: Engine, batch_id: int) -> bool:
    """Delete a batch marked for deletion once no worker holds an item of it; True when it is gone."""
    with Session(engine) as session:
        if db_batches.get_batch(session=session, batch_id=batch_id) is None:
            return True
        deleted = db_batches.delete_batch(session=session, batch_id=batch_id, if_free=True)
        session.commit()
    return deleted


def delete_batch(engine: Engine, batch_id: int, *, wait: float | None = None) -> bool | None:
    """Delete a batch: first its workers stop (nothing more is sent, the items in flight write no result), then
    it goes with its results. True once deleted; False when there is no such batch; None when a worker still
    holds items after `wait` seconds (DELETE_WAIT_SECONDS): the batch shows as "deleting" and goes as soon as its
    workers let go (the last one to leave deletes it, or the workers' housekeeping does)."""
    with engine.begin() as conn:
        if not db_batches.mark_deleting(conn=conn, batch_id=batch_id):
            return False
    deadline = time.monotonic() + (DELETE_WAIT_SECONDS if wait is None else wait)
    while True:
        release_gone(engine, batch_id, active=active_batches)  # processes of this machine that are gone
        if finish_delete(engine, batch_id):
            return True
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)
