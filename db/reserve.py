"""Room kept on the database's disk for the answers in flight: a reserve file beside a SQLite database.

A batch pays for answers before it writes them. When the disk fills, the write that fails is the one that
would have kept them; the reserve is then deleted, which frees its room for that write and for giving the
claims back, and the batch stops with a message. The next batch makes the reserve again where there is
room (a database server's disk is its own: nothing is reserved there). On a disk too small for the whole
reserve a smaller one is made; with none at all, the batch holds its answers in memory until there is room
(services.jobs.batches.work), and answers it must leave with are set aside in a file on another disk
(`spill`), written to the database by the next batch (`take_spilled`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

RESERVE_BYTES = 8 * 1024 * 1024  # answers are kilobytes: this holds thousands, with SQLite's journal pages
SMALLEST_BYTES = 256 * 1024  # on a small disk a smaller reserve, down to this, still keeps the answers in flight


def reserve_path(engine: Engine) -> Path | None:
    """Where the reserve of this database lives: beside its file; None for a server or an in-memory database."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).with_name(Path(url.database).name + ".reserve")


def ensure(engine: Engine, size: int | None = None) -> bool:
    """Make the reserve if it is missing, halving its size down to SMALLEST_BYTES on a disk without room for
    it all; False when the disk has no room even for that (said in the log once)."""
    path = reserve_path(engine)
    size = RESERVE_BYTES if size is None else size
    if path is None:
        return True
    if path.is_file() and path.stat().st_size >= min(size, SMALLEST_BYTES):
        return True
    want, error = size, None
    while want >= min(size, SMALLEST_BYTES):
        try:
            with path.open("wb") as f:
                os.posix_fallocate(f.fileno(), 0, want)  # blocks really taken, not a sparse file
            if want < size:
                log.warning("only %d KB of reserve beside %s: the disk is small", want // 1024, path)
            return True
        except OSError as exc:
            path.unlink(missing_ok=True)
            error, want = exc, want // 2
    log.warning(
        "no room for a reserve beside %s (%s): should the disk fill, the answers in flight are held in memory "
        "until there is room",
        path,
        error,
    )
    return False


def exists(engine: Engine) -> bool:
    """Whether this database has a reserve to free now."""
    path = reserve_path(engine)
    return path is not None and path.is_file()


def release(engine: Engine) -> bool:
    """Delete the reserve, freeing its room; False when there was none."""
    path = reserve_path(engine)
    if path is None or not path.is_file():
        return False
    path.unlink()
    log.warning("the disk is full: the reserve %s is freed to write the answers in flight", path)
    return True


# -- answers set aside when the database's disk stays full ------------------------------------------------------
SPILL_PREFIX = "consistency-held-"


def _spill_key(engine: Engine) -> str:
    return hashlib.sha256(engine.url.render_as_string(hide_password=True).encode()).hexdigest()[:16]


def spill_dirs() -> list[Path]:
    """Where answers that cannot be written are set aside: the temporary directory, then the user's cache."""
    return [Path(tempfile.gettempdir()), Path.home() / ".cache" / "consistency-studio"]


def _plain(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return {"__datetime__": obj.isoformat()}
    raise TypeError(f"{type(obj).__name__} is not JSON")


def _revive(obj: dict[str, Any]) -> Any:
    return datetime.fromisoformat(obj["__datetime__"]) if set(obj) == {"__datetime__"} else obj


def spill(engine: Engine, held: dict[str, Any]) -> Path | None:
    """Set aside, in a file off the database's disk, what could not be written there (model answers for the
    cache, usage rows, items whose answers they are); its path, or None when no directory had room either."""
    name = f"{SPILL_PREFIX}{_spill_key(engine)}-{os.getpid()}-{time.time_ns()}.json"
    data = json.dumps(held, default=_plain)
    for where in spill_dirs():
        path = where / name
        tmp = path.with_suffix(".part")
        try:
            where.mkdir(parents=True, exist_ok=True)
            # The documents and the model's answers: readable by this user only, in a shared temporary directory
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
                f.write(data)
            tmp.replace(path)
            return path
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            log.warning("could not set the held answers aside in %s (%s)", where, exc)
    return None


def spilled(engine: Engine) -> list[Path]:
    """Files of answers set aside for this database, oldest first."""
    found: list[Path] = []
    for where in spill_dirs():
        try:
            found += where.glob(f"{SPILL_PREFIX}{_spill_key(engine)}-*.json")
            # taken by a process that died while writing it to the database: free again
            found += [p for p in where.glob(f"{SPILL_PREFIX}{_spill_key(engine)}-*.json.*") if _gone(p)]
        except OSError:
            continue
    return sorted(found, key=lambda p: p.name.split(".json")[0].rsplit("-", 1)[-1])


def _gone(path: Path) -> bool:
    pid = path.name.rsplit(".", 1)[-1]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def read_spill(path: Path) -> dict[str, Any] | None:
    """What a spill file holds; None when it cannot be read (it is left for a look)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"), object_hook=_revive)
    except (OSError, ValueError) as exc:
        log.warning("could not read the answers set aside in %s (%s)", path, exc)
        return None
