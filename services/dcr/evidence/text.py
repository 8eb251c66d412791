"""Reading text for the evidence checker: tokens, numbers (with their scale), dates, names, content words,
negation, the reference's sentences, and the spans of a sentence found nowhere in the reference."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

SpanKind = Literal["number", "name", "word"]
NEGATION_SCOPE = 3  # how far after "not", "never", "n't" to look for the word the negation is about

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
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "dozen": 12,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALE_WORDS = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE_SUFFIXES = {"k": 1e3, "m": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9, "tn": 1e12}
_ORDINAL_SUFFIXES = {"st", "nd", "rd", "th"}
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        1,
    )
    for m in names
}
# Month names that are also ordinary words count as dates only when capitalised or next to a number.
_AMBIGUOUS_MONTHS = {
    "may",
    "march",
    "august",
    "jan",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "feb",
}
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

_TOKEN = re.compile(
    r"(?P<num>(?<![\d.,])\d{1,3}(?:,\s?\d{3})+(?:\.\d+)?(?![\d])|\d+(?:\.\d+)?)"
    r"|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)*)"
)


_SPACED_DECIMAL = re.compile(r"(?<=\d)\.\s(?=\d)")


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    """NLTK's Porter stemmer (nltk comes with rouge-score; the stemmer needs no data), loaded without nltk's
    package: `import nltk` first imports scipy.stats, scikit-learn and most of nltk (2 to 4 s of CPU, most of
    `cli.py evaluate --method evidence`'s start-up), none of which the stemmer uses."""
    return _porter_module().PorterStemmer()


# The modules the stemmer needs besides its own; they import nothing else of nltk.
_PORTER_NEEDS = ("nltk.redos", "nltk.termsec", "nltk.stem.api", "nltk.stem.porter")


def _porter_module() -> Any:
    """nltk.stem.porter, imported with bare stand-ins for the packages `nltk` and `nltk.stem` (their
    `__init__` not run) when nltk is not imported yet; the stand-ins leave sys.modules afterwards, so a later
    `import nltk` (rouge-score's) imports the real package. Under the import lock: no other thread sees them."""
    import _imp
    import importlib
    import importlib.util
    import sys
    import types

    _imp.acquire_lock()
    try:
        if "nltk" in sys.modules:  # nltk's package is loaded already: nothing to spare
            return importlib.import_module("nltk.stem.porter")
        spec = importlib.util.find_spec("nltk")  # locates the package without running it
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("nltk is not installed (it comes with rouge-score: pip install -r requirements.txt)")
        root = list(spec.submodule_search_locations)
        stand_ins = {"nltk": root, "nltk.stem": [f"{p}/stem" for p in root]}
        for name, path in stand_ins.items():
            pkg = types.ModuleType(name)
            pkg.__path__ = path
            sys.modules[name] = pkg
        try:
            return importlib.import_module("nltk.stem.porter")
        finally:
            for name in (*stand_ins, *_PORTER_NEEDS):
                sys.modules.pop(name, None)
    finally:
        _imp.release_lock()


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


@functools.lru_cache(maxsize=65536)
def _word_forms(word: str) -> tuple[str, str, str]:
    """A word's lowercase, base and stem, worked out once per distinct word."""
    base = _base(word)
    return word.lower().replace("’", "'"), base, _stem(base)


def _tokens(text: str) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text):
        t = m.group(0)
        start, end = m.span()
        if m.lastgroup == "num":  # the two alternatives are exclusive: the one that matched is the last group
            out.append(_Tok(start, end, t, True, t, t, t))
        else:
            out.append(_Tok(start, end, t, False, *_word_forms(t)))
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
    key: str  # the one key overlap counts it by (_unit_key), worked out when the unit is made


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


# Every word _parse_number or _date_key can read as a number or a date (tokens hold no full stop, so a month
# is looked up as it is)
_SPECIAL_WORDS = frozenset(_TENS) | frozenset(_UNITS) | frozenset(_SCALE_WORDS) | frozenset(_MONTHS) | _WEEKDAYS


def _units(text: str, toks: list[_Tok] | None = None) -> list[_Unit]:
    """The sentence's numbers (with their scale), dates, names and content words, in order."""
    toks = _tokens(text) if toks is None else toks
    out: list[_Unit] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if not t.is_num and t.lower not in _SPECIAL_WORDS:
            # neither a number word nor a date word (what _parse_number and _date_key look for): skip both
            if t.text[0].isupper() and _is_name(toks, i):  # a name is capitalised: most words stop at the test
                out.append(_Unit(t.start, t.end, i, i, "name", frozenset({t.base}), t.base))
            elif t.lower not in _STOPWORDS and len(t.lower) > 1:
                out.append(_Unit(t.start, t.end, i, i, "word", frozenset({t.base, (stem := "~" + t.stem)}), stem))
            i += 1
            continue
        parsed = _parse_number(toks, i, text)
        if parsed is not None:
            last, keys = parsed
            out.append(_Unit(t.start, toks[last].end, i, last, "number", frozenset(keys), min(keys)))
            i = last + 1
            continue
        date = _date_key(toks, i)
        if date is not None:
            out.append(_Unit(t.start, t.end, i, i, "number", frozenset({date}), date))
        elif _is_name(toks, i):
            out.append(_Unit(t.start, t.end, i, i, "name", frozenset({t.base}), t.base))
        elif not t.is_num and t.lower not in _STOPWORDS and len(t.lower) > 1:
            out.append(_Unit(t.start, t.end, i, i, "word", frozenset({t.base, (stem := "~" + t.stem)}), stem))
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
        if t.lower not in _NEGATIONS and not t.lower.endswith("n't"):  # _is_negation, inline: it runs per token
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if t.lower == "no" and (nxt is None or nxt.is_num or text[t.end : nxt.start].strip()):
            continue
        head = next((u for u in units if 0 < u.first - i <= NEGATION_SCOPE), None)
        if head is not None and head.kind == "word":
            out.add(_unit_key(head))
    return frozenset(out)


def _unit_key(u: _Unit) -> str:
    """One key per unit for overlap counting: the stem for words, a value for numbers, the base for names
    (worked out in `_units`)."""
    return u.key


@dataclass
class _Reference:
    sentences: list[_Text]
    words: frozenset[str]  # every token's base form and stem (any case): what "appears in the reference" means
    numbers: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    negated_words: frozenset[str] = frozenset()  # content keys any of its sentences negates

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
        return cls(
            texts,
            frozenset(words),
            frozenset(numbers),
            frozenset().union(*(x.bigrams for x in texts)),
            frozenset().union(*(x.negated_words for x in texts)),
        )


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
            if m.group(0)[0] == "." and (
                before in _ABBREVIATIONS
                or "." in before
                or len(before) <= 1
                or (before[-1:].isdigit() and nxt.isdigit())
            ):
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
