"""One engine factory and one `get_session()`; schema upgrades run through Alembic.

The data layer is told its URL and options by its caller (services/database.py reads them from the settings).
"""

from __future__ import annotations

import ast
import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Table, event, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.dml import Insert
from sqlmodel import Session, create_engine

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
POOL_MIN = 10  # the app's sessions and a worker's loops, besides the threads that call the model
POOL_SPARE = 4  # a batch's main loop, its progress reader and the app's own sessions, beside its threads
BUSY_TIMEOUT = 30.0  # seconds a SQLite write waits on a locked file (the settings' default)
CONCURRENCY = 4  # model calls in flight (the settings' default)


def pool_size(concurrency: int = CONCURRENCY) -> int:
    """Connections an engine keeps for `concurrency` threads.

    Every thread that calls the model may need a connection at the same moment (a cache read), so the
    pool keeps one per thread and a few more; twice as many again may open on top of it for a burst.
    """
    return max(POOL_MIN, concurrency + POOL_SPARE)


def make_engine(
    url: str, *, migrate: bool = True, concurrency: int = CONCURRENCY, busy_timeout: float = BUSY_TIMEOUT
) -> Engine:
    """An engine for `url`, upgraded to the current schema, with a connection pool for `concurrency` threads
    (see `pool_size`); SQLite writes wait up to `busy_timeout` seconds on a locked file."""
    url = driver_url(url)
    size = pool_size(concurrency)
    if url.startswith("sqlite"):
        busy = busy_timeout  # one setting, below the workers' stale limit
        memory = url in ("sqlite://", "sqlite:///:memory:")
        pool_args = {"poolclass": StaticPool} if memory else {"pool_size": size, "max_overflow": 2 * size}
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": busy}, **pool_args)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            cur = dbapi_conn.cursor()
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
    else:
        # Many app sessions and worker threads share one engine: a pool the size of a worker's threads.
        engine = create_engine(url, pool_pre_ping=True, pool_size=size, max_overflow=2 * size)
    if migrate:
        upgrade(engine)
    return engine


def driver_url(url: str) -> str:
    """`postgresql://` and `postgres://` URLs name the psycopg (3) driver, the one installed."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def alembic_config(engine: Engine):
    """Alembic's configuration for the migrations of db/migrations, on `engine`."""
    from alembic.config import Config  # loaded only when a schema is checked or upgraded

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


# The key of the PostgreSQL advisory lock that one process at a time holds while it upgrades the schema.
MIGRATION_LOCK = 0x436F6E7353747564  # "ConsStud"


def upgrade(engine: Engine, revision: str = "heads") -> None:
    """Bring the database to `revision`; a database made by any earlier version keeps its data.

    Processes that start together (workers, the app, cli.py) upgrade one at a time: each takes a database
    lock first (PostgreSQL: an advisory lock held to the end of the transaction; SQLite: the write lock of
    BEGIN IMMEDIATE, waited on with the busy timeout), so the next one finds the schema current.
    """
    if revision == "heads" and _is_current(engine):
        return  # nothing to do: no lock taken, and Alembic is not even loaded
    from alembic import command

    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


_ASSIGNMENT = re.compile(r"^(revision|down_revision)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)


def script_heads() -> set[str] | None:
    """The head revisions of db/migrations/versions, read from the files' `revision` and `down_revision`
    lines without loading Alembic (None when a file does not say them plainly: Alembic decides then)."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        found = dict((m[1], m[2]) for m in _ASSIGNMENT.finditer(path.read_text(encoding="utf-8")))
        try:
            rev = ast.literal_eval(found["revision"])
            down = ast.literal_eval(found.get("down_revision", "None"))
        except (KeyError, ValueError, SyntaxError):
            return None
        if not isinstance(rev, str):
            return None
        revisions.add(rev)
        downs.update([down] if isinstance(down, str) else list(down or ()))
    return (revisions - downs) or None


def _is_current(engine: Engine) -> bool:
    """Whether the database is at the head revisions already (read without a lock)."""
    heads = script_heads()
    if heads is None:
        return False
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return False
            stamped = set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
    except Exception:  # not readable yet: the upgrade will say why
        return False
    return stamped == heads


def dialect_insert(conn):
    """The INSERT construct with ON CONFLICT of the connection's dialect (PostgreSQL or SQLite)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def insert_ignore(conn: Connection, table: Table) -> Insert:
    """INSERT that skips rows whose key exists, on SQLite and PostgreSQL."""
    return dialect_insert(conn)(table).on_conflict_do_nothing()


_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def get_engine(
    url: str,
    *,
    concurrency: int | None = None,
    default_concurrency: int = CONCURRENCY,
    busy_timeout: float = BUSY_TIMEOUT,
) -> Engine:
    """The process-wide engine for `url` (created and migrated once), its pool fit for `concurrency` threads
    (`default_concurrency` when a new engine is made without one).

    Asked for more threads than its pool holds, the engine is replaced by one with a larger pool (sessions
    open on the old one finish there).
    """
    url = driver_url(url)
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            n = concurrency if concurrency is not None else default_concurrency
            engine = _engines[url] = make_engine(url, concurrency=n, busy_timeout=busy_timeout)
        elif concurrency is not None and _pool_capacity(engine) < pool_size(concurrency):
            engine = _engines[url] = make_engine(url, migrate=False, concurrency=concurrency, busy_timeout=busy_timeout)
        return engine


def made() -> bool:
    """Whether `get_engine` has made an engine in this process."""
    with _lock:
        return bool(_engines)


def dispose_all() -> None:
    """Close the connections of every engine `get_engine` made (before a process exits)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()


def _pool_capacity(engine: Engine) -> int:
    """The connections the engine's pool keeps (a StaticPool's one connection is shared: never waited on)."""
    pool = engine.pool
    return 1 << 30 if isinstance(pool, StaticPool) else pool.size()


@contextmanager
def get_session(engine: Engine) -> Iterator[Session]:
    """A session on `engine` that commits on success and rolls back on error."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except Exception:
            session.rollback()
            raise
