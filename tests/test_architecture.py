"""The layers keep their jobs: queries live in db/, services build no SQL and never import Streamlit, pages and
components open no database session, and no source module outgrows a reader."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What builds SQL: the statement constructors of SQLAlchemy and SQLModel.
SQL_BUILDERS = {"select", "insert", "update", "delete", "text", "bindparam", "union", "exists"}
SQL_MODULES = ("sqlalchemy", "sqlmodel")
# What runs it on a session or connection.
SQL_CALLS = {"exec", "execute", "scalar", "scalars"}
MAX_LINES = 600
LONG_BY_CONVENTION = {"db/models.py"}  # every table in one module (the design card)


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _imports(tree: ast.AST) -> list[tuple[str, str]]:
    """(module, name) for every `from module import name` and ("", module) for every `import module`."""
    out: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [("", a.name) for a in node.names]
    return out


@pytest.mark.parametrize("path", _sources("services"), ids=lambda p: str(p.relative_to(ROOT)))
def test_services_build_and_run_no_sql_and_never_import_streamlit(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = _imports(tree)
    builders = [f"{m}.{n}" for m, n in imports if m.split(".")[0] in SQL_MODULES and n in SQL_BUILDERS]
    assert not builders, f"{path.name} imports SQL builders {builders}: put the query in db/"
    runs = [
        f"line {n.lineno}: .{n.func.attr}()"
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in SQL_CALLS
    ]
    assert not runs, f"{path.name} runs statements itself ({runs}): call a db/ query function"
    assert not any(n == "streamlit" or m.startswith("streamlit") for m, n in imports), path


@pytest.mark.parametrize("path", _sources("pages", "components"), ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_and_components_open_no_database_session(path: Path) -> None:
    imports = _imports(ast.parse(path.read_text(encoding="utf-8")))
    offending = [
        f"{m}.{n}".strip(".")
        for m, n in imports
        if (m.split(".")[0] in SQL_MODULES and n != "Engine")  # the app's engine, passed to services, is fine
        or n in SQL_MODULES
        or (m == "db.engine" and n == "get_session")
    ]
    assert not offending, f"{path.name} imports {offending}: call a service with the app's engine instead"


@pytest.mark.parametrize(
    "path", _sources("services", "db", "pages", "components", "clitools"), ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_source_module_is_over_600_lines(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    if rel in LONG_BY_CONVENTION or "/migrations/" in rel:
        pytest.skip("long by convention (all tables) or a migration (the schema's history)")
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{rel} has {n} lines: split it along its seams"
