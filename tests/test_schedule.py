"""How `make test` spreads the suite over its processes (tests/support/schedule.py): which tests go together, and
that the longest groups are handed out first."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.support import schedule

SCOPED = 'import pytest\n\n@pytest.fixture(scope="module")\ndef app():\n    yield 1\n'


@pytest.fixture
def root(tmp_path):
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "smoke").mkdir()
    (tmp_path / "tests" / "e2e" / "test_a_browser.py").write_text(SCOPED)
    (tmp_path / "tests" / "e2e" / "test_b_browser.py").write_text('@pytest.fixture(scope="session")\n')
    (tmp_path / "tests" / "test_scoped.py").write_text(SCOPED)
    (tmp_path / "tests" / "test_plain.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "tests" / "test_worker.py").write_text("import subprocess\n")
    (tmp_path / "tests" / "smoke" / "test_model.py").write_text(SCOPED)
    schedule._module_text.clear()
    yield tmp_path
    schedule._module_text.clear()


def test_each_browser_module_and_each_scoped_module_is_a_group_and_other_tests_are_independent(root):
    group = lambda nodeid: schedule.shared_start_up(nodeid, root)  # noqa: E731
    assert group("tests/e2e/test_a_browser.py::test_one") == group("tests/e2e/test_a_browser.py::test_two")
    # two browser modules are two groups, so two processes can share the browser suite
    assert group("tests/e2e/test_a_browser.py::test_one") != group("tests/e2e/test_b_browser.py::test_one")
    assert group("tests/e2e/test_b_browser.py::test_one") == "tests/e2e/test_b_browser.py"
    assert group("tests/test_scoped.py::test_one[sqlite]") == "tests/test_scoped.py"
    assert group("tests/test_plain.py::test_x") is None
    assert group("tests/test_worker.py::test_x") is None


def test_groups_are_handed_out_by_their_last_durations_longest_first(root):
    groups = {
        "tests/test_scoped.py": ["tests/test_scoped.py::a", "tests/test_scoped.py::b"],
        "tests/test_plain.py::test_x": ["tests/test_plain.py::test_x"],
        "tests/e2e/test_a_browser.py": ["tests/e2e/test_a_browser.py::a"],
    }
    durations = {
        "tests/test_scoped.py::a": 1.0,
        "tests/test_scoped.py::b": 2.5,
        "tests/test_plain.py::test_x": 4.0,
        "tests/e2e/test_a_browser.py::a": 3.0,
    }
    assert schedule.group_seconds(groups["tests/test_scoped.py"], durations, root) == pytest.approx(3.5)
    assert schedule.longest_first(groups, durations, root) == [
        "tests/test_plain.py::test_x",
        "tests/test_scoped.py",
        "tests/e2e/test_a_browser.py",
    ]


def test_without_durations_the_browser_modules_and_the_model_go_first_then_processes_whatever_their_size(root):
    many = [f"tests/test_scoped.py::t{i}" for i in range(40)]  # 40 quick tests: 12 s at the prior
    groups = {
        "tests/test_scoped.py": many,
        "tests/test_plain.py::test_x": ["tests/test_plain.py::test_x"],
        "tests/test_worker.py::test_x": ["tests/test_worker.py::test_x"],
        "tests/e2e/test_a_browser.py": ["tests/e2e/test_a_browser.py::a"],
        "tests/smoke/test_model.py": ["tests/smoke/test_model.py::a"],
    }
    assert schedule.longest_first(groups, {}, root) == [
        "tests/smoke/test_model.py",
        "tests/e2e/test_a_browser.py",
        "tests/test_scoped.py",
        "tests/test_worker.py::test_x",
        "tests/test_plain.py::test_x",
    ]
    # a timed test counts its time, not its prior: the browser module measured short goes last
    timed = {"tests/e2e/test_a_browser.py::a": 0.1}
    assert schedule.longest_first(groups, timed, root)[-1] == "tests/e2e/test_a_browser.py"


class _Cache:
    def __init__(self, stored=None):
        self.stored = dict(stored or {})

    def get(self, key, default):
        return self.stored.get(key, default)

    def set(self, key, value):
        self.stored[key] = value


class _Node:
    """A stand-in for a pytest-xdist process: records what it is sent, in the order sent to any process."""

    def __init__(self, name, sent):
        self.name, self.sent, self.shutting_down = name, sent, False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes):
        self.sent.append((self.name, indexes))

    def shutdown(self):
        self.shutting_down = True


def test_the_scheduler_sends_each_group_whole_and_the_longest_first(root):
    collection = [
        "tests/test_plain.py::test_x",
        "tests/test_scoped.py::a",
        "tests/test_scoped.py::b",
        "tests/e2e/test_a_browser.py::one",
        "tests/e2e/test_a_browser.py::two",
        "tests/e2e/test_b_browser.py::one",
        "tests/test_worker.py::test_x",
    ]
    durations = {
        "tests/test_plain.py::test_x": 0.1,
        "tests/test_scoped.py::a": 0.2,
        "tests/test_scoped.py::b": 0.2,
        "tests/e2e/test_a_browser.py::one": 30.0,
        "tests/e2e/test_a_browser.py::two": 10.0,
        "tests/e2e/test_b_browser.py::one": 35.0,
        "tests/test_worker.py::test_x": 12.0,
    }
    config = SimpleNamespace(
        rootpath=root,
        cache=_Cache({schedule.DURATIONS_KEY: durations}),
        option=SimpleNamespace(loadscopereorder=True),
        getvalue=lambda name: ["popen"] * 2 if name == "tx" else None,
    )
    sched = schedule.make_scheduler(config, None)
    sent: list[tuple[str, list[int]]] = []
    nodes = [_Node("gw0", sent), _Node("gw1", sent)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()

    # each process starts on one of the two longest groups, whole (the 40 s browser module, the 35 s one), then
    # takes the next longest: the 12 s test that starts processes, then the module of quick tests
    assert [(name, [collection[i] for i in unit]) for name, unit in sent] == [
        ("gw0", ["tests/e2e/test_a_browser.py::one", "tests/e2e/test_a_browser.py::two"]),
        ("gw1", ["tests/e2e/test_b_browser.py::one"]),
        ("gw0", ["tests/test_worker.py::test_x"]),
        ("gw1", ["tests/test_scoped.py::a", "tests/test_scoped.py::b"]),
    ]
    assert list(sched.workqueue) == ["tests/test_plain.py::test_x"]


def test_the_durations_of_a_run_are_each_tests_phases_added_and_merged_into_the_last_ones():
    recorder = schedule.DurationRecorder()
    for when, seconds in (("setup", 1.5), ("call", 2.0), ("teardown", 0.5)):
        props = [(schedule.CPU_PROPERTY, 3.25)] if when == "teardown" else []
        report = SimpleNamespace(nodeid="tests/t.py::a", when=when, duration=seconds, user_properties=props)
        recorder.pytest_runtest_logreport(report)
    recorder.pytest_runtest_logreport(
        SimpleNamespace(nodeid="tests/t.py::b", when="call", duration=0.25, user_properties=[])
    )
    cache = _Cache({schedule.DURATIONS_KEY: {"tests/t.py::a": 9.0, "tests/old.py::c": 7.0}})
    recorder.pytest_sessionfinish(SimpleNamespace(config=SimpleNamespace(cache=cache)))
    assert cache.stored[schedule.DURATIONS_KEY] == {"tests/t.py::a": 4.0, "tests/t.py::b": 0.25, "tests/old.py::c": 7.0}
    assert cache.stored[schedule.CPU_KEY] == {"tests/t.py::a": 3.25}


def test_a_tests_cpu_counts_the_children_it_reaped_and_goes_on_its_teardown_report():
    meter = schedule.CpuMeter()
    meter.pytest_runtest_logstart("tests/t.py::a", None)
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)  # half a CPU second in a child, reaped

    def report_of(when):
        hook = meter.pytest_runtest_makereport(None, SimpleNamespace(when=when))
        next(hook)
        with pytest.raises(StopIteration) as done:
            hook.send(SimpleNamespace(user_properties=[]))
        return done.value.value

    assert report_of("call").user_properties == []
    ((name, cpu),) = report_of("teardown").user_properties
    assert name == schedule.CPU_PROPERTY and cpu >= 0.5
