"""Waiting for something to happen in another thread or process, however busy the machine is.

Tests wait for an event or a state, never for time to pass. Where the state is in a database or a log (another
process), `wait_until` polls it; its limit only ends a test that would otherwise hang, so it is far above
what any machine needs (TEST_WAIT_LIMIT seconds, 600 by default).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

WAIT_LIMIT = float(os.environ.get("TEST_WAIT_LIMIT", "600"))
WAIT_MS = int(WAIT_LIMIT * 1000)  # the same, for Playwright's expect
# The client timeout of tests that are not about timeouts: a local fake answers in milliseconds, but a thread of a
# loaded machine can wait seconds for the CPU, and a timeout there would be the machine's, not the code's.
HEALTHY_TIMEOUT = 60.0
POLL = 0.05


def wait_until(cond: Callable[[], object], what: str, *, about: Callable[[], object] = lambda: "") -> None:
    """Return once cond() is true; AssertionError naming `what` (and `about()`) if it never becomes so."""
    deadline = time.monotonic() + WAIT_LIMIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what} {about()}")
        time.sleep(POLL)
