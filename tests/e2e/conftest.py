"""Browser tests: record each phase's report on the test item so fixtures can screenshot failures.

The helpers the browser tests share (the running app, page helpers) live in tests/support/browser.py.
"""

from __future__ import annotations

import pytest

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, PHASE_REPORTS, playwright_expect


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    item.stash.setdefault(PHASE_REPORTS, {})[report.when] = report
    return report


@pytest.fixture(scope="session", autouse=True)
def _expect_timeout() -> None:
    """Every module's `expect` waits the suite's time, also a module that runs alone and never asks for it."""
    playwright_expect()


@pytest.fixture(scope="session")
def browser():
    """One Chromium for the whole browser suite: Playwright's sync API runs one instance per thread."""
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def chromium(browser):
    """The same shared browser, under the name some modules use."""
    return browser
