"""DCR alignment results that once passed for "cannot change": a quote that matches no sentence, the two
thresholds met exactly, the weight of a reason's words, and items given without reasons."""

from __future__ import annotations

from services.dcr.align import ALIGN_THRESHOLD, MIN_MATCH, align, content_overlap, is_paragraph_level
from services.text import similarity

# difflib's ratio is 2 * matches / total length: 11 shared characters out of 40 is 0.55, 9 out of 40 is 0.45.
AT_ALIGN = ("a" * 11 + "b" * 9, "a" * 11 + "c" * 9)
AT_MIN = ("a" * 9 + "b" * 11, "a" * 9 + "c" * 11)


def test_a_quote_of_no_sentence_that_speaks_of_the_whole_text_is_paragraph_level():
    """Appendix E.4: an item judging the whole text. A quote that matches none of the sentences does not make
    it sentence-level; its words about the whole summary make it paragraph-level."""
    sentences = ["Cats sleep for most of the day.", "Dogs bark at strangers."]
    assert is_paragraph_level("The summary as a whole is accurate.", "", sentences)
    assert not is_paragraph_level("Dogs bark at strangers.", "the summary", sentences)  # it quotes a sentence


def test_a_quote_exactly_at_the_alignment_threshold_quotes_that_sentence():
    """ALIGN_THRESHOLD is inclusive: a quote that similar to a sentence quotes it, whatever its reason says."""
    quote, sentence = AT_ALIGN
    assert similarity(quote, sentence) == ALIGN_THRESHOLD
    assert not is_paragraph_level(quote, "the whole summary", [sentence])


def test_an_item_exactly_at_the_minimum_match_keeps_its_sentence():
    """MIN_MATCH is inclusive: below it an item is not taken to judge a sentence, at it the item is."""
    quote, sentence = AT_MIN
    assert similarity(quote, sentence) == MIN_MATCH
    by_sentence, left = align([quote], [sentence, "Rain fell in Paris on Monday."])
    assert by_sentence == [0, None] and left == []


def test_a_reason_must_repeat_most_of_a_sentences_words_to_claim_it():
    """A reason's words count at 0.8 of a quote: repeating half a sentence's content words (0.4) is below
    MIN_MATCH and the item stays unplaced; three quarters (0.6) places it."""
    sentences = ["Heavy rain flooded Italy.", "Markets rose sharply on Friday."]
    half = "Heavy rain came, they say."  # heavy, rain: 2 of 4
    most = "Heavy rain flooded the towns."  # heavy, rain, flooded: 3 of 4
    assert content_overlap(half, sentences[0]) == 0.5 and content_overlap(most, sentences[0]) == 0.75
    assert align([""], sentences, [half]) == ([None, None], [0])
    assert align([""], sentences, [most]) == ([0, None], [])


def test_items_without_reasons_are_matched_by_their_quotes_alone():
    """No reasons given is the same as empty reasons: a sentence that is only a redaction mark ('XXXX', as in
    anonymised news) does not attract an item whose quote matches nothing."""
    sentences = ["XXXX", "Rain fell in Paris on Monday."]
    items = ["Snow closed the Alpine passes."]
    assert align(items, sentences) == align(items, sentences, [""]) == ([None, None], [0])
