"""The databases a test can run on: SQLite (a copy of a migrated template) and PostgreSQL (tests/db/pg.py).

A conftest calls `run_on_both(metafunc, name)` from `pytest_generate_tests`: every test that takes the fixture
`name` (directly or through another fixture) runs once per kind, ids `[sqlite]` and `[postgresql]`. Tests about
SQLite itself carry `@pytest.mark.sqlite_only` and run once. On PostgreSQL a missing server skips the test, or
fails it under CI=true (see tests/db/pg.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from db.engine import make_engine
from tests.db import pg

KINDS = ("sqlite", "postgresql")


def run_on_both(metafunc: pytest.Metafunc, name: str) -> None:
    if name in metafunc.fixturenames:
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize(name, KINDS[:1] if sqlite_only else KINDS, indirect=True)


def kind(request: pytest.FixtureRequest) -> str:
    """The kind a parametrized fixture was asked for (SQLite when the test was not parametrized)."""
    return getattr(request, "param", "sqlite")


def sqlite_memory_copy(template: Engine) -> Engine:
    """A fresh in-memory database: a page-by-page copy of the migrated one."""
    eng = make_engine("sqlite://", migrate=False)
    with template.connect() as src, eng.connect() as dst:
        src.connection.driver_connection.backup(dst.connection.driver_connection)
    return eng


def sqlite_file_copy(template: Path, folder: Path) -> Engine:
    """A SQLite file at the current schema in `folder` (several connections, several threads)."""
    path = folder / "test.db"
    shutil.copyfile(template, path)
    return make_engine(f"sqlite:///{path}", migrate=False)


@contextmanager
def postgres_database() -> Iterator[str]:
    """The URL of a new PostgreSQL database at the current schema (a copy of the migrated template, or a used one
    emptied again), emptied or dropped after (tests/db/pg.py)."""
    cluster = pg.cluster()
    url = cluster.new_database(migrated=True)
    try:
        yield url
    finally:
        cluster.recycle_database(url)


@contextmanager
def postgres_engine() -> Iterator[Engine]:
    with postgres_database() as url:
        eng = make_engine(url)
        try:
            yield eng
        finally:
            eng.dispose()
