"""Cached values that a newer state of the same data replaces, so a running batch keeps one entry, not dozens.

A page's cached reads are keyed by stamps that change as a batch's results come in (`stamp`, `bstamp`). Keyed
that way, `st.cache_data` keeps every stamp's entry until its `max_entries` or `ttl` pushes it out: while a
100,000-item batch ran, the Meta-evaluation and Judges pages added one entry per visit and the app grew by about
20 MB a visit. `superseding` wraps such a function so that a call with new stamps first clears the entry of the
same arguments with the stamps before: memory follows the number of batches and views open, not how long a
batch has been running. A session still holding an older stamp only computes its value again.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

R = TypeVar("R")

_LOCK = threading.Lock()
# (function, its arguments but the stamps) -> the arguments of its entry in the cache now
_LATEST: dict[tuple[str, Hashable], tuple[Any, ...]] = {}


def superseding(cached: Callable[..., R], *, stamps: tuple[str, ...]) -> Callable[..., R]:
    """`cached` (an `st.cache_data` function), called positionally, clearing its entry for the same arguments
    with older `stamps` (parameter names) before a call with new ones. Arguments named with a leading
    underscore are not part of Streamlit's key; they are not kept here either."""
    names = list(inspect.signature(cached).parameters)
    missing = [s for s in stamps if s not in names]
    if missing:
        raise ValueError(f"{getattr(cached, '__qualname__', cached)} has no parameter {', '.join(missing)}")
    code = getattr(inspect.unwrap(cached), "__code__", None)  # pages all run as __main__: their file tells them apart
    ident = f"{code.co_filename if code else ''}:{getattr(cached, '__qualname__', repr(cached))}"

    def call(*args: Any) -> R:
        keyed = tuple(None if n.startswith("_") else a for n, a in zip(names, args, strict=False))
        group = (ident, tuple(a for n, a in zip(names, keyed, strict=False) if n not in stamps))
        try:
            hash(group)
        except TypeError:  # an argument Streamlit hashes its own way (a list, a frame): no entry is replaced
            return cached(*args)
        with _LOCK:
            before = _LATEST.get(group)
            _LATEST[group] = keyed
        if before is not None and before != keyed:
            cached.clear(*before)  # type: ignore[attr-defined]
        return cached(*args)

    call.__doc__ = cached.__doc__
    call.__name__ = getattr(cached, "__name__", "superseding")
    call.__wrapped__ = cached  # type: ignore[attr-defined]
    call.clear = cached.clear  # type: ignore[attr-defined]
    return call
