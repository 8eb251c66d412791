"""The sentence features that read how a summary sentence is built from the reference sentence it retells."""

from __future__ import annotations

import dataclasses

import pytest

from services.dcr import evidence
from services.dcr.evidence import structure
from services.dcr.evidence.text import _Text

RETOLD = "She found a police officer who gave her a ride back to mile 17."
REFERENCE = "Heidi Bretscher, 28, ran the Raleigh marathon and took a wrong turn at mile 17. " + RETOLD


@pytest.mark.parametrize(
    ("sentence", "retold", "resolved"),
    [
        # The subject stands where the retold sentence has a pronoun: a pronoun resolved with a name from elsewhere.
        ("Heidi Bretscher, 28, found a police officer who gave her a ride.", RETOLD, 1.0),
        ("The runner found a police officer.", RETOLD, 1.0),
        # The retold sentence names someone else there, or the same subject: nothing resolved.
        ("Heidi Bretscher found a police officer.", "Tom Becker found a police officer.", 0.0),
        ("Heidi Bretscher found a police officer.", "Heidi Bretscher found a police officer.", 0.0),
        # Its words after the subject are not said together there, or the sentence opens with no plain subject.
        ("Heidi Bretscher was given a ride.", RETOLD, 0.0),
        ("In March she found a police officer.", RETOLD, 0.0),
    ],
)
def test_a_subject_that_stands_for_a_pronoun_of_the_retold_sentence_is_resolved(sentence, retold, resolved) -> None:
    assert structure.resolved_subject(_Text.of(sentence), _Text.of(retold)) == resolved


def test_a_resolved_pronoun_raises_the_score_of_the_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: False)
    (se,) = evidence.analyse(REFERENCE, ["Heidi Bretscher found a police officer who gave her a ride back to mile 17."])
    assert se.features.resolved == 1.0 and se.top.ref_text == RETOLD
    assert se.support > evidence.score_of(dataclasses.replace(se.features, resolved=0.0))
    assert evidence.SCORE_WEIGHTS["resolved"] > 0
