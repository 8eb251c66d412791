"""Browser tests: record each phase's report on the test item so fixtures can screenshot failures."""

from __future__ import annotations

import pytest

PHASE_REPORTS = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    item.stash.setdefault(PHASE_REPORTS, {})[report.when] = report
    return report
