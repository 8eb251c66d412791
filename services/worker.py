"""A batch worker: `python -m services.worker [--threads N]`.

Runs the Huey consumer, writes a heartbeat, and every few seconds returns the items of dead workers
to the queue and re-enqueues batches that have work left and nobody on them. Start as many as you
like, on as many machines as share the database (and, for other machines, HUEY_URL).
"""

from __future__ import annotations

import argparse
import logging
import threading
import time

from db.engine import get_engine
from services import batches, dhp
from services.jobs import enqueue, enqueue_dhp, huey

log = logging.getLogger("services.worker")


def housekeeping(stop: threading.Event, every: float = batches.HEARTBEAT_EVERY, recover_every: float = 5.0) -> None:
    engine = get_engine()
    wid = batches.worker_id()
    last = 0.0
    while True:
        try:
            batches.heartbeat(engine, wid)
            if time.monotonic() - last >= recover_every:
                last = time.monotonic()
                for batch_id in batches.recover(engine):
                    log.info("batch %s has work left and no worker: enqueued", batch_id)
                    enqueue(batch_id)
                for kind, ident in dhp.recover(engine):
                    log.info("dhp %s %s has work left and no worker: enqueued", kind, ident)
                    enqueue_dhp(kind, ident)
        except Exception:  # the database may be briefly locked or away; try again next beat
            log.exception("housekeeping failed")
        if stop.wait(every):
            return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m services.worker", description=__doc__)
    p.add_argument("--threads", type=int, default=2, help="batches worked on at once (default 2)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    get_engine()  # migrate before the first task
    stop = threading.Event()
    threading.Thread(target=housekeeping, args=(stop,), daemon=True, name="housekeeping").start()
    consumer = huey.create_consumer(workers=args.threads, worker_type="thread", periodic=False)
    try:
        consumer.run()
    finally:
        stop.set()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
