"""The database tests run on SQLite and on a real PostgreSQL server (tests/db/pg.py starts one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from db.engine import make_engine
from tests.db import pg


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A new, empty PostgreSQL database (dropped afterwards)."""
    cluster = pg.cluster()
    url = cluster.new_database()
    yield url
    cluster.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """An empty database of each kind: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    cluster = pg.cluster()
    url = cluster.new_database()
    yield url
    cluster.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """The schema at head, in memory on SQLite and in a fresh database on PostgreSQL."""
    if request.param == "sqlite":
        eng = make_engine("sqlite://")
        yield eng
        eng.dispose()
        return
    cluster = pg.cluster()
    url = cluster.new_database(migrated=True)
    eng = make_engine(url)
    yield eng
    eng.dispose()
    cluster.recycle_database(url)
