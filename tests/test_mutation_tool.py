"""tools/mutation.py's list of stale equivalence entries: entries whose mutant the tests now kill, or which name no
mutant of a run of every mutant, are shown so that a renumbered mutant is never excused unread."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("mutation_tool", Path(__file__).parent.parent / "tools" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)

MODULE = "services/stats"
KILLED = "services.stats.correlation.x_a__mutmut_1"
GONE = "services.stats.correlation.x_gone__mutmut_2"
KEPT = "services.stats.correlation.x_a__mutmut_3"
OTHER = "services.dcr.results.x_eq3__mutmut_4"  # another module's entry: not this module's business


@pytest.fixture
def entries(monkeypatch):
    monkeypatch.setattr(mutation, "EQUIVALENT", {name: "why" for name in (KILLED, GONE, KEPT, OTHER)})


def test_a_killed_entry_and_a_missing_one_are_stale_in_a_run_of_every_mutant(entries):
    statuses = {KILLED: "killed", KEPT: "survived", "services.stats.correlation.x_a__mutmut_5": "killed"}
    assert mutation.stale_entries(MODULE, statuses) == [(KILLED, "killed"), (GONE, "no such mutant")]


def test_a_sampled_run_names_only_the_killed_entries(entries):
    statuses = {KILLED: "timeout", KEPT: "survived"}
    assert mutation.stale_entries(MODULE, statuses, sampled=True) == [(KILLED, "timeout")]


def test_the_report_lists_stale_entries_after_the_scores(entries, capsys):
    mutation.report({MODULE: {KILLED: "killed", KEPT: "survived"}})
    out = capsys.readouterr().out
    assert out.index("Equivalence entries that name a mutant the tests kill") > out.index(MODULE)
    assert f"  {KILLED}  [killed]" in out and f"  {GONE}  [no such mutant]" in out
    assert KEPT not in out.split("Equivalence entries")[1] and OTHER not in out
