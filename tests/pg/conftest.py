"""The services tests that touch the database, again on a real PostgreSQL server (see tests/db/pg.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from db.engine import make_engine
from tests.db import pg


def _pg_engine() -> Iterator[Engine]:
    cluster = pg.cluster()
    url = cluster.new_database(migrated=True)
    eng = make_engine(url)
    yield eng
    eng.dispose()
    cluster.drop_database(url)


@pytest.fixture
def engine() -> Iterator[Engine]:
    """A fresh PostgreSQL database at head, in place of the in-memory SQLite one."""
    yield from _pg_engine()


@pytest.fixture
def file_engine() -> Iterator[Engine]:
    """A fresh PostgreSQL database at head, in place of the SQLite file."""
    yield from _pg_engine()
