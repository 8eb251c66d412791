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
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

_counter = itertools.count()
_lock = threading.Lock()
_template_lock = threading.Lock()


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
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(datadir), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            env=env,
            cwd=root,
            **run_as,
        )
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
        return cls(
            f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", datadir=datadir, bindir=bindir, user=user
        )

    def new_database(self, prefix: str = "t", *, migrated: bool = False) -> str:
        """The URL of a new database: empty, or (`migrated`) a copy of one brought to the current schema.

        Running every migration takes seconds on PostgreSQL; copying the migrated template takes a fraction.
        """
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
                self._template_name = name
            return self._template_name

    def drop_database(self, url: str) -> None:
        name = make_url(url).database
        with self._admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def stop(self) -> None:
        if self._template_name is not None:
            with self._admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{self._template_name}" WITH (FORCE)'))
        self._admin.dispose()
        if self.datadir is None or self.bindir is None:
            return
        run_as = {"user": self._user.pw_uid, "group": self._user.pw_gid} if self._user else {}
        subprocess.run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            cwd=self.datadir.parent,
            **run_as,
        )
        shutil.rmtree(self.datadir.parent, ignore_errors=True)


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
