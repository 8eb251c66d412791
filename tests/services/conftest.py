"""The services tests that take a database run on SQLite and on PostgreSQL (tests/support/databases.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from tests.support import databases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    databases.run_on_both(metafunc, "engine")
    databases.run_on_both(metafunc, "file_engine")


@pytest.fixture
def engine(request: pytest.FixtureRequest, _migrated_sqlite: Engine) -> Iterator[Engine]:
    """The schema at head: in memory on SQLite, in a fresh database on PostgreSQL."""
    if databases.kind(request) == "postgresql":
        with databases.postgres_engine() as eng:
            yield eng
        return
    eng = databases.sqlite_memory_copy(_migrated_sqlite)
    yield eng
    eng.dispose()


@pytest.fixture
def file_engine(request: pytest.FixtureRequest, migrated_sqlite_file: Path, tmp_path: Path) -> Iterator[Engine]:
    """The schema at head where several threads write at once: a SQLite file, or a fresh PostgreSQL database."""
    if databases.kind(request) == "postgresql":
        with databases.postgres_engine() as eng:
            yield eng
        return
    eng = databases.sqlite_file_copy(migrated_sqlite_file, tmp_path)
    yield eng
    eng.dispose()
