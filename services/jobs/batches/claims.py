"""Workers and their claims: heartbeats, atomic claims with fencing, leases, and recovery from dead workers.

Items are claimed atomically (a conditional UPDATE), so any number of workers, on any number of
machines, can share a batch without doing an item twice. A worker that goes quiet has its claimed
items returned to the queue by `recover`.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import batches as db_batches
from db.models import utcnow
from services.jobs.runner import heartbeat_period, stale_limit

log = logging.getLogger(__name__)


def heartbeat(engine: Engine, wid: str) -> None:
    """Record that worker `wid` is alive."""
    with engine.begin() as conn:
        db_batches.heartbeat(conn=conn, wid=wid)


def live_workers(engine: Engine) -> list[str]:
    cutoff = utcnow() - stale_limit()
    with Session(engine) as session:
        return db_batches.live_workers(session=session, since=cutoff)


def recover(engine: Engine, *, stale_after: timedelta | None = None) -> list[int]:
    """Return items claimed by dead workers to the queue; list batches that need a worker now.

    A worker is dead when its heartbeat is older than the stale limit, or at once when it ran on this machine
    and its process is gone (`release_gone_here`). Batches being deleted whose workers have let go are
    deleted here.
    """
    stale_after = stale_limit() if stale_after is None else stale_after
    cutoff = utcnow() - stale_after
    freed = release_gone_here(engine)
    with Session(engine) as session:
        n = db_batches.release_items_of_dead_workers(session=session, since=cutoff)
        if n:
            log.info("returned %d item(s) of dead workers to the queue", n)
        with_pending = db_batches.unattended(session=session, since=cutoff, enqueued_before=utcnow() - 3 * stale_after)
        # A batch whose only workers died here has nobody on it now, though its items were touched just now.
        alone = db_batches.needing_a_worker(session=session, batch_ids=freed)
        with_pending += [b for b in alone if b not in with_pending]
        if with_pending:
            db_batches.set_enqueued(conn=session.connection(), batch_ids=with_pending)
        going = db_batches.deleting(session=session)
        session.commit()
    for batch_id in going:
        with Session(engine) as session:
            if db_batches.delete_batch(session=session, batch_id=batch_id, if_free=True):
                log.info("batch %s deleted: its workers have let go", batch_id)
            session.commit()
    return with_pending


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def release_own(engine: Engine, batch_id: int, wid: str) -> int:
    """Return to the queue the items of a batch that worker `wid` still holds (it is leaving); how many."""
    with engine.begin() as conn:
        return db_batches.release_claims(conn=conn, batch_id=batch_id, workers=[wid])


def pid_running(pid: int) -> bool:
    """Whether a process with this pid runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    except OSError:
        return True  # cannot tell: count it as running (its heartbeat decides)
    return True


def _gone_here(holders: list[str], *, active: Callable[[], set[int]] | None, batch_id: int | None) -> list[str]:
    """Of these claim holders (host:pid), the processes of this machine that no longer run. This process counts
    as gone for a batch it is not working on (`active`: the batches it works on); with no batch named, never."""
    host, me = socket.gethostname(), os.getpid()
    gone = []
    for wid in holders:
        h, _, pid = wid.rpartition(":")
        if h != host or not pid.isdigit():
            continue
        if int(pid) == me:
            if batch_id is not None and (active is None or batch_id not in active()):
                gone.append(wid)
        elif not pid_running(int(pid)):
            gone.append(wid)
    return gone


def release_gone(engine: Engine, batch_id: int, *, active: Callable[[], set[int]] | None = None) -> int:
    """Return to the queue the items of a batch held by processes of this machine that no longer run.

    A claim names its worker as host:pid, so on the same host a process that is gone (interrupted, killed)
    gives its items back at once instead of after the stale limit. This process's own claims count as gone
    when it is not working on the batch (`active`: the batches it is working on). Workers on other machines
    keep their items until their heartbeat goes stale (`recover`).
    """
    with engine.connect() as conn:
        holders = db_batches.claim_holders(conn=conn, batch_id=batch_id)
    gone = _gone_here(holders, active=active, batch_id=batch_id)
    if not gone:
        return 0
    with engine.begin() as conn:
        n = db_batches.release_claims(conn=conn, batch_id=batch_id, workers=gone)
    log.info("batch %s: %d item(s) of processes that are gone (%s) back in the queue", batch_id, n, ", ".join(gone))
    return n


def release_gone_here(engine: Engine) -> list[int]:
    """Return to the queue the items, in any batch, of processes of this machine that no longer run (a worker
    killed here is known dead at once: no need to wait for its heartbeat to go stale); the batches freed."""
    with engine.connect() as conn:
        holders = db_batches.claim_holders(conn=conn, batch_id=None)
        gone = _gone_here(holders, active=None, batch_id=None)
        # A process in another pid namespace under the same host name (containers on the host's network) looks
        # gone from here, but it beats: only a worker silent for two heartbeats is taken to be dead.
        quiet = utcnow() - timedelta(seconds=2 * heartbeat_period())
        beats = db_batches.heartbeats(conn=conn, workers=gone) if gone else {}
    gone = [w for w in gone if w not in beats or _aware(beats[w]) < quiet]
    if not gone:
        return []
    with engine.begin() as conn:
        freed = db_batches.release_claims_of(conn=conn, workers=gone)
    log.info("%d batch(es): items of processes that are gone (%s) back in the queue", len(freed), ", ".join(gone))
    return freed


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

    def held(self) -> list[int]:
        with self._lock:
            return list(self._held)

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
