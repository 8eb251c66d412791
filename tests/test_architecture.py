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


# The floors, from the top down: what a user drives, what places things on a page, the domain, the data.
FLOORS = {"db": 1, "services": 2, "components": 3}  # everything else (pages, clitools, app.py, cli.py) is 4
LAYERED = ("db", "services", "components", "pages", "clitools")
ENTRY_POINTS = ("app.py", "cli.py", "serve.py")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Every project module (migrations aside) with the project modules it imports, at any depth of its code."""
    paths = [p for p in _sources(*LAYERED) if "migrations" not in p.parts] + [ROOT / f for f in ENTRY_POINTS]
    modules = {_module_name(p): p for p in paths}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def _floor(module: str) -> int:
    return FLOORS.get(module.split(".")[0], 4)


def test_no_import_runs_up_a_floor() -> None:
    graph = _import_graph()
    assert {"db.engine", "services.figures.judges", "components.judges"} <= graph.keys()  # the graph is read
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if _floor(b) > _floor(a))
    assert not upward, f"imports against the layering (pages > components > services > db): {upward}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles met by a depth-first walk (each one as the path that closes it)."""
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[node] = 2

    for start in sorted(graph):
        if start not in seen:
            visit(start, [start])
    return cycles


def test_the_module_graph_has_no_cycle() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_the_packages_of_each_floor_import_each_other_in_one_direction() -> None:
    """Folded to their packages (services.nli, services.metaeval, db, ...), the imports still form no cycle."""

    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folded: dict[str, set[str]] = {}
    for a, targets in _import_graph().items():
        folded.setdefault(package(a), set()).update(package(b) for b in targets if package(b) != package(a))
    cycles = _cycles(folded)
    assert not cycles, f"packages importing each other: {cycles[:5]}"


def test_the_checks_see_an_upward_import_and_a_cycle() -> None:
    """The checks above would fail on the shapes they forbid."""
    assert _floor("db.models") < _floor("services.llm") < _floor("components.ui") < _floor("pages.x")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_every_module_of_the_lower_floors_imports() -> None:
    """A name a module re-exports (and a lint fix may take for unused) is still there for its importers."""
    import importlib

    names = sorted(m for m in _import_graph() if m.split(".")[0] in ("db", "services", "components"))
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # report every module that does not import, not only the first
            failed[name] = f"{type(exc).__name__}: {exc}"
    assert not failed, failed
