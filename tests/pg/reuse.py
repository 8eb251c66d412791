"""Re-collect another test module's database tests so they run here, against PostgreSQL."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

ENGINE_FIXTURES = {"engine", "file_engine"}


def database_tests(module: ModuleType, *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The module's tests that take a database engine, and its own fixtures (but not its engines).

    `skip` names tests that are about SQLite itself (a SQLite-only code path).
    """
    out: dict[str, Any] = {}
    for name, obj in vars(module).items():
        if name in skip:
            continue
        if name.startswith("test_") and inspect.isfunction(obj):
            if ENGINE_FIXTURES & set(inspect.signature(obj).parameters):
                out[name] = obj
        elif type(obj).__name__.startswith("Fixture") and name not in ENGINE_FIXTURES:
            out[name] = obj
    return out
