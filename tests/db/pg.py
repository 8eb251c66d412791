"""A throwaway PostgreSQL server for the tests: initdb + pg_ctl into a temporary folder, on loopback.

`POSTGRES_TEST_URL=postgresql://user:pass@host:port/db` uses a server you already run instead (its user
must be allowed to create databases). Without either, the PostgreSQL tests are skipped with the reason,
unless CI=true or CONSISTENCY_REQUIRE_POSTGRES=1, where a missing server fails the run.
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.pool import NullPool

_counter = itertools.count()
_lock = threading.Lock()
_template_lock = threading.Lock()

# What a database's schema is, as one digest: every relation (tables, indexes with their definitions, sequences,
# views), column, default, constraint, trigger, function, schema, type and extension outside PostgreSQL's own, and
# the large objects. Two databases with the same digest have the same schema; data is compared apart.
SCHEMA_DIGEST = """
SELECT md5(coalesce(string_agg(item, E'\\n' ORDER BY item), '')) FROM (
  SELECT 'rel ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
         || CASE WHEN c.relkind = 'i' THEN ' ' || pg_get_indexdef(c.oid) ELSE '' END
         || CASE WHEN c.relkind IN ('v', 'm') THEN ' ' || pg_get_viewdef(c.oid) ELSE '' END AS item
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  UNION ALL
  SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' '
         || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE a.attnum > 0 AND NOT a.attisdropped
     AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  UNION ALL
  SELECT 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL
  SELECT 'trg ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL
  SELECT 'fn ' || p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  UNION ALL
  SELECT 'type ' || n.nspname || '.' || t.typname || ' ' || t.typtype::text FROM pg_type t
    JOIN pg_namespace n ON n.oid = t.typnamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  UNION ALL
  SELECT 'ns ' || nspname FROM pg_namespace
  UNION ALL
  SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
  UNION ALL
  SELECT 'lo ' || count(*) FROM pg_largeobject_metadata
) items
"""
USER_TABLES = """
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1
"""
RESTART_SEQUENCES = """
SELECT setval(s.seqrelid, s.seqstart, false) FROM pg_sequence s
  JOIN pg_class c ON c.oid = s.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
"""


def required() -> bool:
    """A missing PostgreSQL fails the run instead of skipping (CI, `make test`)."""
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("CONSISTENCY_REQUIRE_POSTGRES") == "1"


def find_bindir() -> Path | None:
    """The folder of initdb, pg_ctl and postgres: PG_BINDIR, Debian's /usr/lib/postgresql/N/bin, or PATH."""
    candidates = [os.environ.get("PG_BINDIR", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    if shutil.which("pg_ctl"):
        candidates.append(str(Path(shutil.which("pg_ctl")).resolve().parent))
    for c in candidates:
        if c and all((Path(c) / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(c)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A PostgreSQL cluster in a temporary folder; `new_database()` hands out empty databases."""

    def __init__(self, admin_url: str, *, datadir: Path | None = None, bindir: Path | None = None, user=None):
        self.admin_url = admin_url
        self.datadir, self.bindir, self._user = datadir, bindir, user
        self._admin: Engine = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
        self._template_name: str | None = None
        self._template_state: tuple[str, dict[str, str]] | None = None  # its schema digest, its seeded tables' rows
        self._spare: list[str] = []  # used copies of the template, emptied again (recycle_database)
        self._watchdog: subprocess.Popen | None = None

    @classmethod
    def start(cls) -> Cluster:
        """Start a cluster; raises RuntimeError with the reason when it cannot."""
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL's initdb/pg_ctl not found (Debian: apt-get install postgresql)")
        user = None
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as the package's own user
            try:
                user = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise RuntimeError("running as root and there is no 'postgres' user to run the server") from exc
        root = Path(tempfile.mkdtemp(prefix="consistency-pg-"))
        datadir = root / "data"
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        run_as = {"user": user.pw_uid, "group": user.pw_gid} if user else {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"LC_ALL": "C"}
        try:
            subprocess.run(
                [str(bindir / "initdb"), "-D", str(datadir), "-U", "postgres", "-A", "trust", "-E", "UTF8"]
                + ["--no-sync"],
                check=True,
                capture_output=True,
                env=env,
                cwd=root,
                **run_as,
            )
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        port = _free_port()
        opts = f"-h 127.0.0.1 -p {port} -k {root} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        opts += " -c max_connections=200"
        proc = subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(datadir), "-o", opts, "-l", str(root / "server.log"), "-w", "start"],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            **run_as,
        )
        if proc.returncode != 0:
            log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"pg_ctl start failed: {proc.stderr.strip()} {log[-2000:]}")
        cluster = cls(
            f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", datadir=datadir, bindir=bindir, user=user
        )
        cluster._watchdog = _watch(datadir, bindir, user)
        return cluster

    def new_database(self, prefix: str = "t", *, migrated: bool = False) -> str:
        """The URL of a new database: empty, or (`migrated`) one at the current schema holding what the migrations
        leave in it and nothing else: a copy of the migrated template, or one that `recycle_database` emptied.

        Running every migration takes seconds on PostgreSQL; copying the migrated template takes a fraction.
        """
        if migrated:
            with _lock:
                spare = self._spare.pop() if self._spare else None
            if spare is not None:
                return self._url(spare)
        template = self._template() if migrated else None
        with _lock:
            name = f"{prefix}_{os.getpid()}_{next(_counter)}"
        with self._admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
        return self._url(name)

    def _url(self, name: str) -> str:
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def _template(self) -> str:
        """A database at the current schema, made once per process, for `new_database` to copy."""
        with _template_lock:
            if self._template_name is None:
                from db.engine import make_engine  # the schema as the app makes it: every migration

                name = f"template_{os.getpid()}_{next(_counter)}"
                with self._admin.connect() as conn:
                    conn.execute(text(f'CREATE DATABASE "{name}"'))
                make_engine(self._url(name)).dispose()  # a template must have no open connection
                self._template_state = self._state(name)
                self._template_name = name
            return self._template_name

    def _state(self, name: str) -> tuple[str, dict[str, str]]:
        """A database's schema digest, and the rows of each table that has any (what the migrations seeded)."""
        engine = create_engine(self._url(name), poolclass=NullPool)
        try:
            with engine.connect() as conn:
                return conn.execute(text(SCHEMA_DIGEST)).scalar_one(), self._seeded(conn)
        finally:
            engine.dispose()

    @staticmethod
    def _seeded(conn: Connection, tables: list[str] | None = None) -> dict[str, str]:
        """The rows of each of these tables (every user table by default) that has any, as one digest a table."""
        rows = {}
        for table in conn.execute(text(USER_TABLES)).scalars() if tables is None else tables:
            digest = conn.execute(text(f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t"))
            if (value := digest.scalar_one()) is not None:
                rows[table] = value
        return rows

    def recycle_database(self, url: str) -> None:
        """Done with a database from `new_database(migrated=True)`: empty it for the next test, or drop it.

        Copying the template costs the server about 0.4 CPU s (PostgreSQL 15 WAL-logs every page of the copy, its
        system catalogs too); emptying a used copy costs a small part of that. A database is emptied only while it
        still has the template's schema digest and the template's rows in the tables the migrations seeded: its
        other connections are ended, every other table emptied, every sequence restarted, and it is renamed, so
        the next test gets a name no engine cache has seen. Anything else, or any error, drops it.
        """
        name = make_url(url).database
        try:
            fresh = self._emptied(name)
        except Exception:  # whatever went wrong, a dropped database cannot be handed on wrong
            fresh = None
        if fresh is None:
            self.drop_database(url)
            return
        with _lock:
            self._spare.append(fresh)

    def _emptied(self, name: str) -> str | None:
        """Empty a used copy of the template and rename it; None when it is no longer like the template."""
        if self._template_state is None:
            return None
        digest, seeded = self._template_state
        with self._admin.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )
        engine = create_engine(self._url(name), poolclass=NullPool)
        try:
            with engine.begin() as conn:
                if conn.execute(text(SCHEMA_DIGEST)).scalar_one() != digest:
                    return None
                if self._seeded(conn, list(seeded)) != seeded:
                    return None
                # DELETE, not TRUNCATE: truncating 36 tables makes new files for each and its indexes (0.2 CPU s);
                # with the foreign keys' triggers off for this transaction the order of the tables does not matter
                conn.execute(text("SET LOCAL session_replication_role = replica"))
                for table in conn.execute(text(USER_TABLES)).scalars().all():
                    if table not in seeded:
                        conn.execute(text(f"DELETE FROM {table}"))
                conn.execute(text(RESTART_SEQUENCES)).all()
        finally:
            engine.dispose()
        with _lock:
            fresh = f"r_{os.getpid()}_{next(_counter)}"
        with self._admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" RENAME TO "{fresh}"'))
        return fresh

    def drop_database(self, url: str) -> None:
        name = make_url(url).database
        with self._admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def stop(self) -> None:
        """Drop the databases it handed out; a server it started is stopped and its folder removed, whatever
        failed before (a server that is gone already, a connection refused)."""
        try:
            if self.datadir is None:  # a server someone else runs: only what the tests made is dropped
                with self._admin.connect() as conn:
                    for name in [*self._spare, *([self._template_name] if self._template_name else [])]:
                        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        finally:
            self._spare.clear()
            self._admin.dispose()
            if self.datadir is not None and self.bindir is not None:
                _stop_server(self.datadir, self.bindir, self._user)
                watchdog, self._watchdog = self._watchdog, None
                if watchdog is not None:  # its pipe closes: it finds nothing left to do
                    watchdog.stdin.close()
                    watchdog.wait(timeout=30)


def _stop_server(datadir: Path, bindir: Path, user: pwd.struct_passwd | None) -> None:
    """Stop the server of `datadir` at once and remove its folder."""
    run_as = {"user": user.pw_uid, "group": user.pw_gid} if user else {}
    if datadir.exists():
        subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            cwd=datadir.parent,
            **run_as,
        )
    shutil.rmtree(datadir.parent, ignore_errors=True)


# A process of its own that outlives the tests' process only to stop its server: it waits for its standard
# input to close (the tests' process ended, however: even killed), then stops the server and removes its folder.
_WATCHDOG = """
import os, shutil, subprocess, sys
datadir, pg_ctl, uid, gid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.stdin.buffer.read()
if os.path.isdir(datadir):
    run_as = {"user": uid, "group": gid} if uid >= 0 else {}
    subprocess.run([pg_ctl, "-D", datadir, "-m", "immediate", "-w", "stop"], capture_output=True, **run_as)
shutil.rmtree(os.path.dirname(datadir), ignore_errors=True)
"""


def _watch(datadir: Path, bindir: Path, user: pwd.struct_passwd | None) -> subprocess.Popen:
    ids = [str(user.pw_uid), str(user.pw_gid)] if user else ["-1", "-1"]
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(datadir), str(bindir / "pg_ctl"), *ids],
        stdin=subprocess.PIPE,
        start_new_session=True,  # a Ctrl-C to the tests' process group does not end it first
    )


def _on_signal(signum: int, _frame) -> None:
    """SIGTERM or SIGHUP: stop the server, then end as the signal would have."""
    stop_cluster()
    signal.signal(signum, _previous.get(signum, signal.SIG_DFL))
    os.kill(os.getpid(), signum)


_previous: dict[int, object] = {}


def _stop_on_signals() -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # handlers can be set from the main thread only (the watchdog still stops the server)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(signum)
        if previous in (signal.SIG_DFL, None):  # a handler someone else set is left alone
            _previous[signum] = signal.signal(signum, _on_signal)


_cluster: Cluster | None = None
_failure: str | None = None


def cluster() -> Cluster:
    """The session's cluster (started on first use); skips, or fails where PostgreSQL is required."""
    global _cluster, _failure
    with _lock:
        if _cluster is None and _failure is None:
            try:
                url = os.environ.get("POSTGRES_TEST_URL")
                if url:
                    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
                    _cluster = Cluster(url)
                else:
                    _cluster = Cluster.start()
                    atexit.register(stop_cluster)
                    _stop_on_signals()
            except Exception as exc:
                _failure = f"PostgreSQL unavailable: {exc}"
    if _cluster is None:
        if required():
            pytest.fail(f"{_failure} (required because CI=true or CONSISTENCY_REQUIRE_POSTGRES=1)")
        pytest.skip(_failure or "PostgreSQL unavailable")
    return _cluster


def stop_cluster() -> None:
    global _cluster
    if _cluster is not None:
        _cluster.stop()
        _cluster = None
