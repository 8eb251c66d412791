"""The pages (AppTest) with DATABASE_URL=postgresql://...: every feature works on PostgreSQL."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.app.conftest as app_conftest
from tests.db import pg

PAGES = (
    "home", "evaluate", "history", "settings", "datasets", "batches", "metaeval", "annotate", "survey", "dhp",
    "conseval", "rate", "reports",
)  # fmt: skip
# Tests about the SQLite file itself (they search its bytes); the key-leak search on PostgreSQL is elsewhere.
SQLITE_ONLY = {"test_saved_endpoint_is_used_and_the_typed_key_lives_only_in_session_state"}


def _is_fixture(obj: object) -> bool:
    return type(obj).__name__.startswith("Fixture")


# The app tests' fixtures, but with their database on PostgreSQL.
globals().update({n: o for n, o in vars(app_conftest).items() if _is_fixture(o) and n != "db_file"})


@pytest.fixture(autouse=True)
def db_file(_isolated_env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """DATABASE_URL points at a new PostgreSQL database; the app's engine caches start empty."""
    cluster = pg.cluster()
    url = cluster.new_database(migrated=True)
    monkeypatch.setenv("DATABASE_URL", url)
    app_conftest._reset_engines()
    yield tmp_path / "unused.db"
    app_conftest._reset_engines()
    cluster.drop_database(url)


for _page in PAGES:
    try:
        _mod = importlib.import_module(f"tests.app.test_{_page}")
    except ModuleNotFoundError:
        continue
    for _name, _obj in vars(_mod).items():
        if _name in SQLITE_ONLY:
            continue
        if _name.startswith("test_") and callable(_obj):
            globals()[f"test_{_page}__{_name[5:]}"] = _obj
        elif _is_fixture(_obj) and _name != "db_file":
            globals()[_name] = _obj
