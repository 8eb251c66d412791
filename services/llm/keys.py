"""What this process has seen of an endpoint's need for an API key: it answered a call sent without one, or it
refused one with 401. The app warns that a key must be typed again only when a call would lack a key the
endpoint asks for (components/ui.py); this is how it knows an endpoint asks for none."""

from __future__ import annotations

import threading

_seen: dict[str, bool] = {}  # public base URL -> the endpoint asks for a key
_lock = threading.Lock()


def remember(public_url: str, *, asks: bool) -> None:
    """Record what a call sent without a key showed: answered (`asks=False`) or refused with 401 (`asks=True`)."""
    if public_url:
        with _lock:
            _seen[public_url.rstrip("/")] = asks


def asks_for_key(public_url: str) -> bool | None:
    """Whether the endpoint asked for a key when called without one in this process (None: not seen yet)."""
    with _lock:
        return _seen.get((public_url or "").rstrip("/"))


def forget() -> None:
    """Forget everything seen (tests)."""
    with _lock:
        _seen.clear()
