"""The free-text verdict reader on a committed corpus of real-world phrasings (tests/corpora/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.dcr import rule_mark, stated_mark, verdict_of
from services.verdicts import verdict_word

CORPUS = [json.loads(line) for line in (Path(__file__).parents[1] / "corpora" / "verdict_phrasings.jsonl").open()]


def test_the_corpus_is_broad():
    verdicts = [r["verdict"] for r in CORPUS]
    assert len(CORPUS) >= 150
    assert {v: verdicts.count(v) >= 20 for v in ("consistent", "inconsistent", "unknown")} == {
        "consistent": True,
        "inconsistent": True,
        "unknown": True,
    }


@pytest.mark.parametrize("row", CORPUS, ids=[r["reason"][:60] for r in CORPUS])
def test_reader_reads_each_phrasing(row):
    assert verdict_of(rule_mark(row["reason"])) == row["verdict"]


@pytest.mark.parametrize("row", [r for r in CORPUS if r["verdict"] != "unknown"], ids=lambda r: r["reason"][:60])
def test_a_stated_verdict_is_never_flipped_by_decoration(row):
    """Upper case, markdown emphasis and curly apostrophes do not change what a reason states."""
    reason = row["reason"]
    for variant in (reason.upper(), f"**{reason}**", reason.replace("'", "\u2019"), f"> {reason}"):
        assert verdict_of(rule_mark(variant)) == row["verdict"]


@pytest.mark.parametrize(
    ("value", "mark"),
    [
        ("consistent", 1),
        ("Inconsistent", -1),
        ("not consistent", -1),
        (True, 1),
        (False, -1),
        (-1, -1),
        ("", None),
        ("maybe", None),
        (None, None),
    ],
)
def test_verdict_field_values(value, mark):
    assert verdict_word(value) == mark


def test_field_wins_when_the_reason_states_nothing_and_conflict_is_unknown():
    assert stated_mark("The article mentions the tower.", "inconsistent") == (-1, None)
    mark, why = stated_mark("This sentence is consistent with the article.", "inconsistent")
    assert mark is None and "verdict field" in why
