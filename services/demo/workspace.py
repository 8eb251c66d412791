"""Where the demo workspace lives: a SQLite file of its own in the data folder, never the user's database.

The file is built once (services/demo/build.py) into a temporary name and moved into place when complete, so a
second open is instant and a build that stops half way leaves nothing behind. Its name carries a fingerprint of
the code that made it and of the schema, so a new version of the app builds a new workspace instead of reading
a stale one. DEMO_WORKSPACE=0 (services/config.py) turns the demo off.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

from sqlalchemy.engine import Engine

from db import engine as db_engine
from services.config import PROJECT_ROOT, get_settings
from services.demo.build import FULL, Size, Tour, build
from services.errors import InputError

log = logging.getLogger(__name__)

FOLDER = "demo"
DISABLED = "The demo workspace is turned off on this deployment (DEMO_WORKSPACE=0)."
BANNER = "Demo workspace: labels come from how the texts were made"
# The tour's steps: (label, page, anchor on the page).
TOUR: tuple[tuple[str, str, str], ...] = (
    ("1. Judges: which judge to trust", "Judges", ""),
    ("2. Compare systems", "Judges", "compare-systems"),
    ("3. Label next", "Judges", "label-next"),
    ("4. Evaluate one document", "Evaluate", ""),
    ("5. Share the report", "Reports", ""),
)
_SOURCES = ("services/demo/texts.py", "services/demo/raters.py", "services/demo/build.py")


def enabled() -> bool:
    """Whether this deployment offers the demo workspace (DEMO_WORKSPACE, on by default)."""
    return get_settings().demo_workspace


def fingerprint() -> str:
    """Changes with the code that builds the workspace and with the schema's migrations."""
    h = hashlib.sha256()
    for rel in _SOURCES:
        h.update((PROJECT_ROOT / rel).read_bytes())
    for path in sorted((db_engine.MIGRATIONS / "versions").glob("*.py")):
        h.update(path.name.encode())
    return h.hexdigest()[:12]


def folder() -> Path:
    return get_settings().data_dir / FOLDER


def path() -> Path:
    """The workspace's database file for this version of the app."""
    return folder() / f"demo-{fingerprint()}.db"


def url(p: Path | None = None) -> str:
    return f"sqlite:///{p or path()}"


def tour_path(p: Path | None = None) -> Path:
    return (p or path()).with_suffix(".json")


_lock = threading.Lock()


def is_built() -> bool:
    return path().is_file() and tour_path().is_file()


def ensure(*, size: Size | None = None) -> Tour:
    """The workspace's tour, building the workspace first when this version has none (InputError when the
    deployment turned the demo off)."""
    if not enabled():
        raise InputError(DISABLED)
    with _lock:
        target = path()
        if not (target.is_file() and tour_path(target).is_file()):
            make(target, size=size or FULL)
        return Tour.from_json(tour_path(target).read_text(encoding="utf-8"))


def make(target: Path, *, size: Size = FULL) -> Tour:
    """Build the workspace into `target` (a file beside it while it is built, moved into place when done)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}-{os.getpid()}.building.db")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}.reserve")):
        p.unlink(missing_ok=True)
    eng = db_engine.make_engine(url(tmp), concurrency=4)
    try:
        tour = build(eng, size=size)
    finally:
        eng.dispose()  # the last connection closed folds the write-ahead log into the file
    os.replace(tmp, target)
    for p in (Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}.reserve")):  # a batch's disk reserve too
        p.unlink(missing_ok=True)
    tour_path(target).write_text(tour.to_json(), encoding="utf-8")
    _drop_older(target)
    log.info("demo workspace built in %.1f CPU s: %s", tour.cpu_seconds, target)
    return tour


def _drop_older(keep: Path) -> None:
    """Workspaces of earlier versions of the app (their files only)."""
    for p in keep.parent.glob("demo-*"):
        if not p.name.startswith(keep.stem):
            p.unlink(missing_ok=True)


def engine() -> Engine:
    """The workspace's engine (the process-wide one for its file)."""
    return db_engine.get_engine(url(), busy_timeout=get_settings().db_busy_timeout)
