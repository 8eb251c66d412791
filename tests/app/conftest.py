"""AppTest fixtures: each test gets its own SQLite file, fresh engine caches and, when asked, the fake judge.

AppTest runs the pages in this process, so the process-wide caches (`st.cache_resource` behind
`components.ui.app_engine` and `components.demo`'s engine, `db.engine._engines` and every `st.cache_data`) are
cleared around every test; otherwise the first test's database would serve all the others.

Each AppTest looks through every installed package's metadata for Streamlit components on its first run (about
0.15 s of CPU, the largest cost of a short page test); the packages do not change during a run, so the look is
made once per process and its result reused. So is each page script's compiled code: every AppTest starts with an
empty script cache of its own, and compiling a page (Streamlit's "magic" pass over its syntax tree, then compile)
was about a tenth of a page test's CPU.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import streamlit as st
from streamlit import config as st_config
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as st_app_test
from streamlit.testing.v1 import local_script_runner as st_local_script_runner

import components.demo
import components.ui
import db.engine
import services.embedded
from services.llm import keys as llm_keys
from tests.app.helpers import HOME, ROOT
from tests.fakes import FakeOpenAIServer, answers_connection_check, toy_judge
from tests.support import databases
from tests.support.waiting import WAIT_LIMIT


class _SharedScriptCache(ScriptCache):
    """One script cache for every AppTest of the process, keyed by the file's path, size and modification time
    (and whether magic is on), so a script rewritten in place is compiled again."""

    def get_bytecode(self, script_path: str):
        path = os.path.abspath(script_path)
        stat = os.stat(path)
        key = (path, stat.st_size, stat.st_mtime_ns, bool(st_config.get_option("runner.magicEnabled")))
        with self._lock:
            code = self._cache.get(key)
        if code is None:
            code = ScriptCache().get_bytecode(path)  # Streamlit's own reading, magic and compiling
            with self._lock:
                self._cache[key] = code
        return code


@pytest.fixture(autouse=True, scope="session")
def _scripts_compiled_once() -> Iterator[None]:
    """Each page script compiled once per process rather than by every AppTest."""
    shared = _SharedScriptCache()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(st_app_test, "ScriptCache", lambda: shared)
        mp.setattr(st_local_script_runner, "ScriptCache", lambda: shared)
        yield


@pytest.fixture(autouse=True, scope="session")
def _components_scanned_once() -> Iterator[None]:
    """The installed packages' Streamlit components, looked for once per process rather than by every AppTest."""
    scan = manifest_scanner.scan_component_manifests
    once = functools.cache(scan)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(manifest_scanner, "scan_component_manifests", lambda *a, **k: list(once(*a, **k)))
        yield


def _reset_engines() -> None:
    components.ui.app_engine.clear()
    components.demo._engine.clear()
    st.cache_data.clear()  # data cached by ids (a report of run 1) would cross from one test's database to the next
    with db.engine._lock:
        for eng in db.engine._engines.values():
            eng.dispose()
        db.engine._engines.clear()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    databases.run_on_both(metafunc, "db_file")  # every page test, on SQLite and on PostgreSQL


@pytest.fixture(autouse=True)
def db_file(
    request: pytest.FixtureRequest,
    _isolated_env,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    migrated_sqlite_file: Path,
) -> Iterator[Path]:
    """DATABASE_URL points at a database of this test at the current schema: a SQLite file (its path is yielded)
    or a new PostgreSQL database (the path yielded is unused). The engine caches start empty."""
    path = tmp_path / "app.db"
    with ExitStack() as stack:
        if databases.kind(request) == "postgresql":
            monkeypatch.setenv("DATABASE_URL", stack.enter_context(databases.postgres_database()))
        else:
            shutil.copyfile(migrated_sqlite_file, path)
            monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
        _reset_engines()
        yield path
        _reset_engines()


@pytest.fixture(autouse=True)
def _no_endpoint_seen() -> Iterator[None]:
    """Each test starts with no endpoint's need for a key seen (services/llm/keys.py is process-wide)."""
    llm_keys.forget()
    yield
    llm_keys.forget()


@pytest.fixture(autouse=True)
def _no_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """No app test may start the embedded model (slow, and not what these tests are about)."""

    def refuse():
        raise AssertionError("an app test tried to start the embedded model")

    monkeypatch.setattr(services.embedded, "get_embedded_server", refuse)


@pytest.fixture
def judge(fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    """The fake server as the app's backend (via LLM_BASE_URL), judging with the toy judge."""
    fake.responder = answers_connection_check(toy_judge(bad="1999", fix="1889"))
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_TIMEOUT", "10")
    monkeypatch.setenv("LLM_MAX_RETRIES", "1")
    return fake


@pytest.fixture
def closed_url() -> str:
    """An OpenAI-style base URL on a local port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def open_page() -> Callable[..., AppTest]:
    """Run the app at one page: `open_page(EVALUATE, query={"run": "1"})`; HOME (None) is app.py."""

    def _open(page: str | None = HOME, *, query: dict[str, str] | None = None) -> AppTest:
        at = AppTest.from_file(ROOT / "app.py", default_timeout=WAIT_LIMIT)
        if query:
            at.query_params.update(query)
        if page:
            at.switch_page(page)
        return at.run()

    return _open


@pytest.fixture(autouse=True)
def _served_on_loopback() -> Iterator[None]:
    """The app under test is served on 127.0.0.1 with no password (as `make run` serves it): open to its one
    local user, so every page opens without signing in. Sign-in tests set a password in `at.secrets`."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    yield
    config.set_option("server.address", before)
