"""Waiting for something to happen in another thread or process, however busy the machine is.

Tests wait for an event or a state, never for time to pass. Where the state is in a database or a log (another
process), `wait_until` polls it; its limit only ends a test that would otherwise hang, so it is far above
what any machine needs (TEST_WAIT_LIMIT seconds, 600 by default).

A test that asks a real model first checks that it answers at all (services.embedded.measure_speed, within
WAIT_LIMIT), then gives each request `model_timeout`: SAFETY times what a request of its size takes at the speed
just measured on this machine. Slow is waited for; only a server that stops answering fails. How long the model
takes is a benchmark's figure (bench/dcr_embedded.py), never a test's limit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.embedded import ModelSpeed

WAIT_LIMIT = float(os.environ.get("TEST_WAIT_LIMIT", "600"))
WAIT_MS = int(WAIT_LIMIT * 1000)  # the same, for Playwright's expect
# The client timeout of tests that are not about timeouts: a local fake answers in milliseconds, but a thread of a
# loaded machine can wait seconds for the CPU, and a timeout there would be the machine's, not the code's.
HEALTHY_TIMEOUT = 60.0
POLL = 0.05
# How many times the measured time a model request may take: the machine's load can grow after the measurement.
SAFETY = 4.0
MODEL_TIMEOUT_FLOOR = 60.0


def wait_until(cond: Callable[[], object], what: str, *, about: Callable[[], object] = lambda: "") -> None:
    """Return once cond() is true; AssertionError naming `what` (and `about()`) if it never becomes so."""
    deadline = time.monotonic() + WAIT_LIMIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what} {about()}")
        time.sleep(POLL)


def model_timeout(speed: ModelSpeed, *, prompt_chars: int, max_tokens: int) -> float:
    """A request's timeout for a real model: SAFETY times its time at the measured speed (English runs about four
    characters a token; three is counted, and the whole `max_tokens` written), at least MODEL_TIMEOUT_FLOOR."""
    return max(MODEL_TIMEOUT_FLOOR, SAFETY * speed.seconds_for(prompt_chars // 3 + 1, max_tokens))
