"""How `make test` spreads the suite over its pytest-xdist processes (`--dist loadgroup`, tests/conftest.py).

Tests that share an expensive start-up (a module- or package-scoped fixture: an app, a model, a server) form one
group and run in one process; every other test is a group of its own. Groups are handed out longest first, so
that the long ones (a browser module, the embedded model, a test that starts workers) start early on both
processes and the many short tests fill the gaps: the run ends when its longest strand does.

How long a group takes is read from the last run's durations (kept in pytest's cache, `.pytest_cache`); a test
not yet timed counts a prior by its kind. The order changes only when the tests run, never what they check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

DURATIONS_KEY = "consistency/durations"  # node id -> seconds (setup, call and teardown) of its last run
CPU_KEY = "consistency/cpu"  # node id -> CPU seconds of its last run: its process and the children it reaped
# Priors, in seconds a test, for a test the cache has not timed (a fresh checkout): the browser suite's tests
# share an app and a Chromium per module, the embedded model loads a real model, and a module that starts
# processes (workers, the CLI, the app) waits for them; the rest take well under a second.
PRIOR_S = {"browser": 20.0, "embedded": 60.0, "processes": 8.0, "other": 0.3}

_module_text: dict[Path, str] = {}


def _text(root: Path, path: str) -> str:
    file = root / path
    if file not in _module_text:
        try:
            _module_text[file] = file.read_text(encoding="utf-8")
        except OSError:
            _module_text[file] = ""
    return _module_text[file]


def shared_start_up(nodeid: str, root: Path) -> str | None:
    """The group of a test that shares an expensive start-up with others, or None when it is independent.

    A browser module starts its own app and shares the process's one Chromium: each module is a group, so the
    browser suite is spread over the processes. Any other module with a module- or package-scoped fixture (a
    loaded model, a running server) is a group. Every other test has its own temporary folder, database and
    ports.
    """
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/e2e/"):
        return path
    text = _text(root, path)
    return path if any(f'scope="{s}"' in text for s in ("module", "package")) else None


def kind(nodeid: str, root: Path) -> str:
    """The kind of test, for its prior duration: browser, embedded, processes or other."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/e2e/"):
        return "browser"
    if path.startswith("tests/smoke/"):
        return "embedded"
    text = _text(root, path)
    return "processes" if "subprocess" in text or "Popen" in text else "other"


def group_seconds(nodeids: Iterable[str], durations: Mapping[str, float], root: Path) -> float:
    """The expected seconds of a group: each test's last duration, or its kind's prior when it has none."""
    return sum(durations.get(n, PRIOR_S[kind(n, root)]) for n in nodeids)


def longest_first(groups: Mapping[str, Iterable[str]], durations: Mapping[str, float], root: Path) -> list[str]:
    """The groups' names, longest expected first (ties in their collection order)."""
    seconds = {g: group_seconds(ids, durations, root) for g, ids in groups.items()}
    return sorted(groups, key=lambda g: -seconds[g])  # sorted() is stable


def make_scheduler(config, log):
    """pytest-xdist's LoadScopeScheduling with the groups of `shared_start_up`, handed out longest first.

    (pytest-xdist's own loadgroup reads `xdist_group` marks through a node id that pytest 9 no longer lets it
    change, so the grouping is made here, from the node ids.)
    """
    from xdist.scheduler import LoadScopeScheduling

    root = config.rootpath
    cache = getattr(config, "cache", None)
    durations = cache.get(DURATIONS_KEY, {}) if cache is not None else {}

    class SharedStartUpScheduling(LoadScopeScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return shared_start_up(nodeid, root) or nodeid

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:  # the queue is complete at the first assignment: order it once
                self._ordered = True
                order = longest_first(self.workqueue, durations, root)
                units = dict(self.workqueue)
                self.workqueue.clear()
                for scope in order:
                    self.workqueue[scope] = units[scope]
            super()._assign_work_unit(node)

    return SharedStartUpScheduling(config, log)


def process_cpu_s() -> float:
    """CPU seconds (user and system) of this process and of the children it has reaped."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class CpuMeter:
    """In the process that runs the tests: each test's CPU seconds, from the start of its setup to the end of its
    teardown, put on its teardown report (`user_properties`, which pytest-xdist sends to the controller).

    A child process counts once reaped: an app or a server a module shares counts on the test after which it
    stopped, and the browser on the process's last test."""

    def __init__(self) -> None:
        self.start = 0.0

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.start = process_cpu_s()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "teardown":
            report.user_properties.append((CPU_PROPERTY, round(process_cpu_s() - self.start, 3)))
        return report


CPU_PROPERTY = "cpu_s"


class DurationRecorder:
    """Keeps each test's duration (all its phases) and CPU seconds of this run, and merges them into the cache.

    Registered in the controlling process only (with `-n 0`, the one process), so each report counts once.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        for name, value in getattr(report, "user_properties", ()):
            if name == CPU_PROPERTY:
                self.cpu[report.nodeid] = value

    def pytest_sessionfinish(self, session) -> None:
        cache = getattr(session.config, "cache", None)
        if cache is None or not self.seconds:
            return
        for key, new in ((DURATIONS_KEY, self.seconds), (CPU_KEY, self.cpu)):
            known = cache.get(key, {})
            known.update({k: round(v, 3) for k, v in new.items()})
            cache.set(key, known)
