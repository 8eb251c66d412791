"""Sentence features and contradictions read against the reference sentence a summary sentence retells."""

from __future__ import annotations

import dataclasses

import pytest

from services.dcr import evidence
from services.dcr.evidence import align

DIVORCE = (
    "The legal wife of Lyle Jeffs, brother of Warren Jeffs and current leader of the polygamous church, has "
    "officially filed for divorce from her husband in Utah, citing rape and illegal practices within the sect."
)


@pytest.fixture(autouse=True)
def lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: False)


def test_a_sentence_that_keeps_little_of_the_sentence_it_retells_is_marked_down() -> None:
    """Cut down to "Lyle Jeffs has filed", the sentence lost who filed: the score counts how much was cut."""
    reference = DIVORCE + " The couple have been married since 1983."
    cut, whole = evidence.analyse(
        reference,
        [
            "Lyle Jeffs has officially filed for divorce.",
            "The legal wife of Lyle Jeffs, leader of the polygamous church, has officially filed for divorce from "
            "her husband in Utah, citing rape and illegal practices within the sect.",
        ],
    )
    assert cut.top.ref_text == DIVORCE and whole.top.ref_text == DIVORCE
    assert cut.features.cut > 0.2 and whole.features.cut == 0.0
    assert cut.support < evidence.score_of(dataclasses.replace(cut.features, cut=0.0))
    assert evidence.SCORE_WEIGHTS["cut"] < 0


def test_a_pronoun_of_the_other_gender_between_the_same_words_is_a_contradiction() -> None:
    """Both sentences use "she" too, so comparing which genders each uses cannot see the swap; its context can."""
    ref = ["Karen Buckley, 24, left the club without collecting her coat after telling friends she was going home."]
    (best,) = align("Karen Buckley left the club without collecting his coat after telling friends she left.", ref, k=1)
    assert best.role == "contradict" and best.conflict == "'his' where it says 'her'"
    (best,) = align("Karen Buckley left the club without collecting her coat.", ref, k=1)
    assert best.role == "support"


@pytest.mark.parametrize(
    ("sentence", "conflict"),
    [
        # "not" before a number negates no word the reference has, so only its context shows it.
        ("Charlene Jeffs had not 10 children with her husband.", "'had not 10' where it says 'had 10'"),
        # Little overlap with the whole reference sentence, but "was never charged" sits where it says "was charged".
        ("Monk was never charged, police said.", "'was never charged' where it says 'was charged'"),
    ],
)
def test_a_negation_put_between_words_the_reference_has_side_by_side_is_a_contradiction(sentence, conflict) -> None:
    ref = [
        "Charlene Jeffs had 10 children with her husband.",
        "Monk, 54, from Romford in Essex, was charged with conspiracy to supply cocaine after armed police raided "
        "the house where he was overseeing workmen laying a marble patio.",
    ]
    contradictions = [e.conflict for e in align(sentence, ref) if e.role == "contradict"]
    assert contradictions == [conflict]
    # The same words without the negation agree with it.
    assert all(e.role == "support" for e in align(sentence.replace(" not", "").replace(" never", ""), ref))
