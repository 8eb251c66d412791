"""Browser tests: record each phase's report on the test item so fixtures can screenshot failures."""

from __future__ import annotations

import pytest

PHASE_REPORTS = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    item.stash.setdefault(PHASE_REPORTS, {})[report.when] = report
    return report


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


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
