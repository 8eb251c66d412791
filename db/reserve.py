"""Room kept on the database's disk for the answers in flight: a reserve file beside a SQLite database.

A batch pays for answers before it writes them. When the disk fills, the write that fails is the one that
would have kept them; the reserve is then deleted, which frees its room for that write and for giving the
claims back, and the batch stops with a message. The next batch makes the reserve again where there is
room (a database server's disk is its own: nothing is reserved there).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

RESERVE_BYTES = 8 * 1024 * 1024  # answers are kilobytes: this holds thousands, with SQLite's journal pages


def reserve_path(engine: Engine) -> Path | None:
    """Where the reserve of this database lives: beside its file; None for a server or an in-memory database."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).with_name(Path(url.database).name + ".reserve")


def ensure(engine: Engine, size: int | None = None) -> bool:
    """Make the reserve if it is missing; False when the disk has no room for it (said in the log)."""
    path = reserve_path(engine)
    size = RESERVE_BYTES if size is None else size
    if path is None:
        return True
    if path.is_file() and path.stat().st_size >= size:
        return True
    try:
        with path.open("wb") as f:
            os.posix_fallocate(f.fileno(), 0, size)  # blocks really taken, not a sparse file
        return True
    except OSError as exc:
        path.unlink(missing_ok=True)
        log.warning("no room for the %d MB reserve beside %s (%s)", size // (1024 * 1024), path, exc)
        return False


def release(engine: Engine) -> bool:
    """Delete the reserve, freeing its room; False when there was none."""
    path = reserve_path(engine)
    if path is None or not path.is_file():
        return False
    path.unlink()
    log.warning("the disk is full: the reserve %s is freed to write the answers in flight", path)
    return True
