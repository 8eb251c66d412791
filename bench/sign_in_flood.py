"""The owner's sign-in while wrong passwords flood from the same address: each browser session of an attacker
sends wrong passwords one after another, all from 127.0.0.1 (as every tab on loopback, or every user behind one
proxy); meanwhile the owner signs in from a session of their own. Prints the owner's wait, and how many wrong
passwords were checked (the gate: 10 at once, then one a second). `python bench/sign_in_flood.py [sessions]`."""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start

from db.engine import make_engine
from services import owners

PASSWORD = "the owner's passphrase"
FLOOD_S = 15.0  # the flood runs this long before the owner's first attempt


def main(sessions: int = 20, tries: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/bench.db")
        stop, checked, lock = threading.Event(), [0], threading.Lock()

        def attacker(i: int) -> None:
            while not stop.is_set():
                owners.attempt_sign_in(engine, "127.0.0.1", f"guess {i}", PASSWORD, session=f"a{i}", sleep=stop.wait)
                with lock:
                    checked[0] += 1

        began = start()
        t0 = time.monotonic()
        threads = [threading.Thread(target=attacker, args=(i,), daemon=True) for i in range(sessions)]
        for t in threads:
            t.start()
        stop.wait(FLOOD_S)
        waits = []
        for k in range(tries):
            t = time.monotonic()
            assert owners.attempt_sign_in(engine, "127.0.0.1", PASSWORD, PASSWORD, session=f"owner{k}")
            waits.append(time.monotonic() - t)
            stop.wait(2.0)
        elapsed = time.monotonic() - t0
        with lock:
            wrong = checked[0]
        stop.set()
        for t in threads:  # those waiting for the gate are let through a second at a time
            t.join(sessions + 30)
        rate = wrong / elapsed
        print(f"{sessions} attacker sessions from one address for {elapsed:.0f} s: {wrong} wrong passwords")
        print(f"checked ({rate:.2f} a second); the owner's sign-in took {', '.join(f'{w:.2f}' for w in waits)} s")
        figures = {
            f"owner's sign-in under a flood of {sessions} sessions, longest of {tries} (s)": max(waits),
            f"wrong passwords checked a second, {sessions} sessions": rate,
        }
        record("pages", "sign_in_flood", figures, started=began)
        engine.dispose()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
