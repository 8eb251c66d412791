"""Where the judge and the evidence disagree: a sentence the model calls consistent that the evidence contradicts
(or does not support), or one it calls inconsistent that the evidence supports."""

from __future__ import annotations

import pytest

from services.dcr import evidence
from services.disagreement import batch_disagreements, disagreement, disagreements, stored_sentences

REF = "The council approved a budget of 17 million dollars on Tuesday. Work on the bridge starts in March."
WRONG = "The council approved a budget of 18 million dollars on Tuesday."
RIGHT = "Work on the bridge starts in March."


@pytest.fixture
def found():
    return evidence.analyse(REF, [WRONG, RIGHT], embedder=evidence.lexical_only)


def test_judged_consistent_while_the_evidence_contradicts_it_is_flagged(found):
    d = disagreement(0, WRONG, "consistent", found[0])
    assert d is not None and d.judge == "consistent" and d.evidence == "inconsistent"
    assert "contradicts it ('18 million' where it says '17 million')" in d.why


def test_judged_inconsistent_while_the_evidence_supports_it_is_flagged(found):
    d = disagreement(1, RIGHT, "inconsistent", found[1])
    assert d is not None and d.why.startswith("The judge says inconsistent; the evidence supports it")


def test_agreement_and_unknown_verdicts_flag_nothing(found):
    assert disagreement(0, WRONG, "inconsistent", found[0]) is None
    assert disagreement(1, RIGHT, "consistent", found[1]) is None
    assert disagreement(0, WRONG, "unknown", found[0]) is None
    assert disagreement(0, "another text", "consistent", found[0]) is None  # evidence of another sentence
    flags = disagreements([(0, WRONG, "consistent"), (1, RIGHT, "consistent")], found)
    assert list(flags) == [0]


def test_a_batch_lists_the_flagged_sentences_of_its_finished_items():
    result = {
        "rounds": [
            {
                "sentences": [
                    {"index": 0, "text": WRONG, "verdict": "consistent"},
                    {"index": 1, "text": RIGHT, "verdict": "consistent"},
                ]
            }
        ]
    }
    agreeing = {"rounds": [{"sentences": [{"index": 0, "text": RIGHT, "verdict": "consistent"}]}]}
    assert stored_sentences(result)[1] == (1, RIGHT, "consistent") and stored_sentences(None) == []
    rows = batch_disagreements([(7, "a", REF, result), (8, "b", REF, agreeing), (9, "c", REF, None)], "article")
    assert [(r["item"], r["sentence"], r["judge"], r["evidence"]) for r in rows] == [
        (7, 1, "consistent", "inconsistent")
    ]
