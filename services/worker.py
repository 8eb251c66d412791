"""The worker: `python -m services.worker [--threads N]`, for every kind of job (services.jobs.runner).

Runs the Huey consumer, writes a heartbeat, and every few seconds hands back to the queue the jobs of
dead workers (batch items, ConsEval studies, DHP runs) and batches that have work left and nobody on
them. Start as many as you like, on as many machines as share the database (and, for other machines,
HUEY_URL).
"""

from __future__ import annotations

import argparse
import logging
import threading
import time

from db.redact import redact_logs
from services.database import get_engine
from services.jobs import batches
from services.jobs import runner as jobrunner
from services.jobs.queue import huey, submit

log = logging.getLogger("services.worker")


class Joiner:
    """Joins batches that have items waiting, up to `threads` at once, whichever worker or machine queued
    them: workers on other machines need only the shared database (claims are atomic)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._running: dict[int, threading.Thread] = {}

    def __call__(self, engine) -> None:
        self._running = {b: t for b, t in self._running.items() if t.is_alive()}
        busy = batches.active_batches() | set(self._running)
        for batch_id in batches.joinable(engine):
            if len(busy) >= self.threads:
                return
            if batch_id in busy:
                continue
            log.info("joining batch %s", batch_id)
            t = threading.Thread(target=self._work, args=(engine, batch_id), daemon=True, name=f"join-{batch_id}")
            self._running[batch_id] = t
            busy.add(batch_id)
            t.start()

    @staticmethod
    def _work(engine, batch_id: int) -> None:
        try:
            batches.process_batch(engine, batch_id)
        except Exception:  # one batch's trouble must not stop the worker
            log.exception("batch %s failed in a joined worker", batch_id)


def housekeeping(
    stop: threading.Event,
    every: float | None = None,
    recover_every: float | None = None,
    join: Joiner | None = None,
) -> None:
    every = jobrunner.heartbeat_period() if every is None else every
    if recover_every is None:
        recover_every = min(5.0, jobrunner.stale_limit().total_seconds() / 4)
    engine = get_engine()
    wid = jobrunner.worker_id()
    last = 0.0
    while True:
        try:
            batches.heartbeat(engine, wid)
            if time.monotonic() - last >= recover_every:
                last = time.monotonic()
                for kind in jobrunner.kinds().values():
                    for ident in kind.recover(engine) if kind.recover else []:
                        log.info("%s %s has work left and no worker: enqueued", kind.name, ident)
                        submit(kind.name, ident)
                if join is not None:
                    join(engine)
        except Exception:  # the database may be briefly locked or away; try again next beat
            log.exception("housekeeping failed")
        if stop.wait(every):
            return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m services.worker", description=__doc__)
    p.add_argument("--threads", type=int, default=2, help="jobs worked on at once (default 2)")
    p.add_argument(
        "--no-join",
        action="store_true",
        help="only take batches from the queue (default: also join any batch in the database with items waiting)",
    )
    args = p.parse_args(argv)
    if args.threads < 1:
        p.error(f"--threads must be 1 or more, not {args.threads}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    redact_logs()  # the HTTP client logs each URL it calls, credentials and all
    get_engine()  # migrate before the first task
    jobrunner.kinds()  # load every kind of job before the threads start
    stop = threading.Event()
    join = None if args.no_join else Joiner(args.threads)
    threading.Thread(target=housekeeping, args=(stop,), kwargs={"join": join}, daemon=True, name="housekeeping").start()
    consumer = huey.create_consumer(workers=args.threads, worker_type="thread", periodic=False)
    on_signal = consumer._handle_signal  # Huey's handler, installed when the consumer starts

    def stop_batches(signum, frame) -> None:
        # Before Huey's graceful shutdown joins its threads: the batches they run stop now, not when done.
        threading.Thread(target=batches.shutdown, daemon=True, name="shutdown").start()
        on_signal(signum, frame)

    consumer._handle_signal = stop_batches
    try:
        consumer.run()
    finally:
        stop.set()
        left = batches.shutdown()
        log.info("worker stopped%s", "" if left else " (a batch was still leaving)")
    return 0


def exit_now(code: int) -> None:
    """Leave without waiting for request threads still open: their items were given back (batches.shutdown)
    and the interpreter would otherwise join each one at exit, until its request ends."""
    import os

    from db.engine import dispose_all

    dispose_all()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
