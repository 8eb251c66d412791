"""Helpers for the browser tests (tests/e2e/): the real app in a subprocess, Chromium, and page helpers.

Playwright is imported lazily: a module that needs `expect` calls `playwright_expect()` at import, which skips
that module when playwright is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from services.samples import load_samples
from tests.fakes import FakeOpenAIServer
from tests.support.waiting import HEALTHY_TIMEOUT, WAIT_LIMIT, WAIT_MS

CHROMIUM = Path("/usr/bin/chromium")
# Every browser test module: `pytestmark = BROWSER_MARKS`.
BROWSER_MARKS = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} not found (install Debian's chromium: make browser)"),
]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1400, "height": 2400}  # Streamlit scrolls inside its own container: a tall window shows it all
# Playwright's limit on each step (an action, an `expect`): a step waits for its condition, and the limit only ends
# a test that would otherwise hang. A page's script run that takes 3 s on a quiet machine can take 30 s and more at
# load 20 on 2 cores, so it is the suite's one limit (TEST_WAIT_LIMIT; set it lower to see a failing step sooner).
TIMEOUT_MS = WAIT_MS
STOPPED_AT = "streamlit.log.stopped"  # beside the log: its size in bytes when running_app stopped the app
# The one traceback a stopping app may print: a page still loading a model (MiniLM) when the interpreter exits
# finds the thread pools it loads with shut down. Any other traceback, while serving or stopping, fails.
_SHUTDOWN_NOISE = "cannot schedule new futures after interpreter shutdown"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Each test phase's report, recorded on the test item (tests/e2e/conftest.py) so fixtures can screenshot failures.
PHASE_REPORTS = pytest.StashKey[dict]()

SAMPLE = load_samples()[0]  # "City council approves harbour bridge repairs": one error the toy judge knows
BAD, FIX = "47 million", "40 million"
assert BAD in SAMPLE.candidate and SAMPLE.task == "summarization"


@dataclass
class LiveApp:
    url: str
    fake: FakeOpenAIServer
    database_url: str


def playwright_expect():
    """Playwright's `expect` with the suite's timeout; skips the calling module if playwright is not installed."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    sync_api.expect.set_options(timeout=TIMEOUT_MS)
    return sync_api.expect


def page_with_failure_screenshot(browser, request: pytest.FixtureRequest, *, viewport, timeout_ms, artifacts):
    """A fresh browser context (a new Streamlit session) and page; a screenshot if the test fails."""
    import re

    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(timeout_ms)
    page = context.new_page()
    yield page
    report = request.node.stash.get(PHASE_REPORTS, {}).get("call")
    if report is not None and report.failed:
        artifacts.mkdir(exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", request.node.name)
        try:
            page.screenshot(path=str(artifacts / f"FAILED-{name}.png"))
        except Exception as exc:  # the page may be gone; the test's own error is what matters
            print(f"could not save a failure screenshot: {exc}")
    context.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_flags(port: int) -> list[str]:
    """Streamlit's flags for a test server: the port on loopback, headless, no file watcher, no usage stats."""
    return [
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
    ]


def wait_healthy(url: str, proc, log, deadline_s: float = WAIT_LIMIT) -> None:
    """Wait for Streamlit's health endpoint; fail with the log's tail if it exits or never answers."""
    import time
    import urllib.request

    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"streamlit was not healthy within {deadline_s:g} s:\n{log.read_text(errors='replace')[-3000:]}")


def running_app(root, tmp, **env_overrides: str):
    """Start the real app as `make run` does (`python serve.py`: the worker and the pages' heavy imports before the
    server listens, the upload limit of the settings) on a free port with a clean environment; yield its URL.
    (`streamlit run app.py` made each module's first page pay for those imports, which users never do.)"""
    import os
    import subprocess
    import sys

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("LLM_", "OPENAI_", "DATABASE_URL", "STREAMLIT_"))
    }
    env.update(DATA_DIR=str(tmp / "data"), CONSISTENCY_SECRETS_FILE=str(tmp / "no-secrets.toml"), **env_overrides)
    port = free_port()
    log = tmp / "streamlit.log"
    cmd = [sys.executable, "serve.py", *server_flags(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, log)
        yield url
    finally:
        (tmp / STOPPED_AT).write_text(str(log.stat().st_size))  # what the log held when the app was told to stop
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def serve(tmp: Path, database_url: str, *, fake: FakeOpenAIServer | None = None, **env: str):
    """The real app (running_app) on this database and, when given, this fake model endpoint (fake-model, one
    retry, HEALTHY_TIMEOUT, unless env says otherwise); yields its URL. Once it has stopped: no traceback in its
    log, and no error in the fake's responder."""
    if fake is not None:
        env = {
            "LLM_BASE_URL": fake.base_url,
            "LLM_MODEL": "fake-model",
            "LLM_MAX_RETRIES": "1",
            "LLM_TIMEOUT": str(HEALTHY_TIMEOUT),
        } | env
    yield from running_app(ROOT, tmp, DATABASE_URL=database_url, **env)
    if fake is not None:
        assert not fake.responder_errors, f"the fake's responder raised: {fake.responder_errors!r}"
    assert_clean_log(tmp)


def assert_clean_log(tmp: Path, *words: str) -> None:
    """No traceback (nor any of these words) in the log running_app wrote in tmp, but for a page's work cut off
    by the interpreter's exit once the app was told to stop."""
    data = (tmp / "streamlit.log").read_bytes()
    marker = tmp / STOPPED_AT
    cut = int(marker.read_text()) if marker.exists() else len(data)
    serving, stopping = data[:cut].decode(errors="replace"), data[cut:].decode(errors="replace")
    for word in ("Traceback", *words):
        assert word not in serving, serving[-3000:]
    for word in words:
        assert word not in stopping, stopping[-3000:]
    for traceback in stopping.split("Traceback (most recent call last):")[1:]:
        assert _SHUTDOWN_NOISE in traceback, stopping[-3000:]


def page_fixture(viewport: dict = VIEWPORT, *, name: str = "page"):
    """A fixture for a test module (`page = page_fixture(VIEWPORT)`): a fresh browser context (a new Streamlit
    session, no cookies) and page per test at this window size; a screenshot in test-artifacts/ if it fails."""

    @pytest.fixture(name=name)
    def fixture(browser, request: pytest.FixtureRequest):
        yield from page_with_failure_screenshot(
            browser, request, viewport=viewport, timeout_ms=TIMEOUT_MS, artifacts=ARTIFACTS
        )

    return fixture


def in_browser(fn, name: str, *, viewport: dict | None = None):
    """Run fn(page) in a fresh Chromium on a thread of its own (outside the shared browser's thread);
    a full-page screenshot if it fails."""
    from concurrent.futures import ThreadPoolExecutor

    from playwright import sync_api

    def work():
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            context = browser.new_context(viewport=viewport or VIEWPORT)
            context.set_default_timeout(TIMEOUT_MS)
            page = context.new_page()
            try:
                return fn(page)
            except Exception:
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"), full_page=True)
                raise
            finally:
                context.close()
                browser.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def main(pg):
    """The main area (not the sidebar)."""
    return pg.get_by_test_id("stMain")


def shot(pg, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"))


# The app while a script run is under way (headless pages do not always draw the running indicator).
RUNNING = '[data-testid="stApp"][data-test-script-state="running"]'


def wait_idle(pg) -> None:
    """Wait until the script run is over and every element has drawn (lazy-loaded elements show a skeleton)."""
    from playwright.sync_api import expect

    expect(pg.get_by_test_id("stStatusWidget")).to_have_count(0)
    expect(pg.locator(RUNNING)).to_have_count(0)
    expect(pg.locator('[data-testid^="stSkeleton"]')).to_have_count(0)


def metric(pg, label: str):
    """The value of the metric with this label."""
    return main(pg).get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue")


def no_exception(pg) -> None:
    from playwright.sync_api import expect

    expect(pg.get_by_test_id("stException")).to_have_count(0)
