"""Properties of the sentence splitter (hypothesis)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from pysbd.lang.english import English

from services.text import join_sentences, split_sentences

ABBREVIATIONS = frozenset(English.Abbreviation.ABBREVIATIONS)

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9)
NUMBER = st.integers(min_value=0, max_value=10**6).map(str)


# A word the splitter reads as an abbreviation ("lt.", "no.", "co.") does not end a sentence before a full stop, as
# pysbd's English rules have it, and sentences ending "0." and "1." read as a numbered list: a plain sentence's last
# word is a word, none of those abbreviations.
LAST_WORD = WORD.filter(lambda w: w not in ABBREVIATIONS)


@st.composite
def sentence(draw) -> str:
    """A plain sentence: a capitalised word, more words and numbers, a last word that is not an abbreviation,
    one full stop, ! or ?."""
    words = draw(st.lists(st.one_of(WORD, WORD, WORD, NUMBER), min_size=1, max_size=11))
    last = draw(LAST_WORD)
    first = draw(WORD).capitalize()
    return " ".join([first, *words, last]) + draw(st.sampled_from([".", ".", "!", "?"]))


@settings(max_examples=150, deadline=None)
@given(st.lists(sentence(), min_size=1, max_size=8), st.sampled_from([" ", "  ", "\n", " \n "]))
def test_k_sentences_in_k_sentences_out_with_their_text(sentences, sep):
    out = split_sentences(sep.join(sentences))
    assert out == sentences
    assert join_sentences(out) == " ".join(sentences)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_splits_without_loss_of_words_or_order(text):
    out = split_sentences(text)
    assert all(s == s.strip() and s and re.search(r"\w", s) for s in out)
    # Every word character of the input is in some sentence, in the input's order.
    assert "".join(re.findall(r"\w", "".join(out))) == "".join(re.findall(r"\w", text))


@settings(max_examples=100, deadline=None)
@given(st.lists(sentence(), min_size=1, max_size=6), st.integers(min_value=1, max_value=3))
def test_paragraph_breaks_never_merge_sentences(sentences, blank_lines):
    text = ("\n" * (blank_lines + 1)).join(sentences)
    assert split_sentences(text) == sentences


TRICKY = st.sampled_from(
    ["Dr.", "U.S.", "e.g.", "3.5", "(a)", "\u00a0", "\u2003", "...", "!", "?", '"', "'", "Mr. Smith", "a.m.", "\t", " "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(sentence(), TRICKY, WORD, st.text(max_size=12)), min_size=1, max_size=12).map(" ".join))
def test_the_segmenter_places_sentences_as_pysbd_does(text):
    # Our segmenter finds each sentence's span with str.find; pysbd compiles a pattern per sentence.
    import pysbd

    from services.text import _Segmenter

    theirs = pysbd.Segmenter(language="en", clean=False, char_span=True).segment(text)
    ours = _Segmenter(language="en", clean=False, char_span=True).segment(text)
    assert [(s.sent, s.start, s.end) for s in ours] == [(s.sent, s.start, s.end) for s in theirs]
