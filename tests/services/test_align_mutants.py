"""services.dcr.align by hand: the content words a reason repeats, paragraph-level items, and the assignment."""

from __future__ import annotations

import pytest

from services.dcr.align import align, content_overlap, is_paragraph_level

S = ["The Eiffel Tower is in Paris.", "It was completed in 1999.", "It is made of wrought iron."]


def test_content_overlap_counts_the_sentences_content_words_a_reason_repeats():
    # content words of S[0]: eiffel, tower, paris (the, is, in are stop words); the reason repeats two
    assert content_overlap("The tower is in Paris.", S[0]) == pytest.approx(2 / 3)
    assert content_overlap("Plan B", "Plan B works.") == pytest.approx(1 / 2)  # one letter is no content word
    assert content_overlap("The EU said so", "EU vote passed.") == pytest.approx(1 / 3)  # two letters are
    assert content_overlap("anything", "The of and.") == 0.0  # no content word at all
    assert content_overlap("", S[0]) == 0.0


def test_paragraph_level_items_speak_of_the_whole_text_and_quote_no_sentence():
    assert is_paragraph_level("", "The summary as a whole is consistent.", S)
    assert not is_paragraph_level("", "This sentence is consistent.", S)
    assert not is_paragraph_level(S[1], "The whole summary is wrong here.", S)  # it quotes a sentence
    assert is_paragraph_level("Overall", "The entire text is consistent.", S)


def test_align_with_no_sentences_leaves_every_item_over():
    assert align(["a", "b"], []) == ([], [0, 1])
    assert align([], S) == ([None, None, None], [])


def test_align_follows_the_quotes_when_there_are_as_many_items_as_sentences():
    by, left = align([S[1], S[0]], S[:2])
    assert by == [1, 0] and left == []
    by, left = align(["", ""], S[:2])  # no quotes: the order of the items
    assert by == [0, 1] and left == []


def test_a_weak_quote_keeps_its_place_only_when_the_items_line_up_with_the_sentences():
    """Eq. 1 gives one reason per candidate sentence, in order (reason i for sentence i). With as many items as
    sentences, an item whose quote matches badly still judges the sentence at its place. With fewer items the
    places no longer line up, so a place is no evidence: an item that quotes no sentence (its best similarity,
    0.29 with S[0], is below MIN_MATCH) judges none, and Appendix E.4 keeps such an entry out of the sentence
    scores (it is left over)."""
    by, left = align(["Tower", S[1]], S[:2])  # equal counts: the weak quote stays at its place
    assert by == [0, 1] and left == []
    by, left = align(["Tower", S[2]], S)  # two items, three sentences: S[0] is not judged by the weak quote
    assert by == [None, None, 1] and left == [0]


def test_without_quotes_place_decides_only_when_the_items_line_up_else_the_reasons_words_do():
    """Reason i is for sentence i (Eq. 1), so with as many unquoted items as sentences their order decides, even
    when a reason mentions another sentence's words. With a different number of items the order no longer says
    which sentence each judges: the words each reason repeats do."""
    swapped = ["Completed in 1999 is right.", "The Eiffel Tower is indeed in Paris."]
    assert align(["", ""], S[:2], reasons=swapped) == ([0, 1], [])
    assert align([""], S, reasons=["Wrought iron is what it is made of."]) == ([None, None, 0], [])
    three = [*swapped, "Made of wrought iron."]  # three reasons for two sentences: the third is left over
    assert align(["", "", ""], S[:2], reasons=three) == ([1, 0], [2])
