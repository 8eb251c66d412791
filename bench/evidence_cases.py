"""Test cases for the offline evidence checker, built by rule from QAGS-CNN/DM articles (never stored).

Supported (label 1), from an article's sentences:
  verbatim    a sentence as it is
  compressed  the sentence without an attribution ("..., police said"), a clause between commas, or a
              leading phrase
  reworded    compressed, with common words replaced by synonyms, and a leading time phrase moved to the end
  fused       the main clause of one sentence joined to a nearby sentence ("A, and B"), both reworded
Unsupported (label 0), each made from a supported one (compressed, reworded or fused):
  number      a number or amount changed to one the article does not have
  number-in   a number replaced by another number of the same article
  name        a name replaced by a name from another article
  name-in     a name replaced by another name of the same article (names: words rare in English, since the
              articles are partly lowercased)
  date        a weekday or month changed
  negation    "not" after the first auxiliary verb ("was" -> "was not")
  pronoun     he/his/him swapped with she/her
  invented    a clause with names or numbers from another article appended ("A, and B'")
  unrelated   a sentence of another article without its names and numbers (only common words the
              article may share)

Abstractive summaries (3 sentences judged together, like a freely written summary): each sentence keeps
the article sentence's names, numbers and rare words and about half of its other words, the rest replaced
by common words, so that it shares few word pairs with the article:
  abstract        such a sentence (label 1)
  abstract-fact   one with a number, name or rare word from another article, or one moved from another
                  sentence of this article, or an unrelated sentence (label 0); each summary has at most one

One-sentence abstractive summaries of the lead (XSum's style; never used to fit the checker's weights, only
to test them, so their figures say how the checker carries over to a style it was not fitted on):
  headline        the lead's names and numbers, about a third of its other words and four newswire
                  paraphrase words the article lacks ("lawmakers", "sacked", "amid"), judged alone (label 1)
  headline-fact   the same with a number changed, a name from another article swapped in or added (label 0)

Every rule is deterministic given the seed. A case is (article index, sentence, label, kind, group).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from wordfreq import zipf_frequency

from services.text import split_sentences

POSITIVE = ("verbatim", "compressed", "reworded", "fused", "abstract", "headline")
NEGATIVE = (
    "number",
    "number-in",
    "name",
    "name-in",
    "date",
    "negation",
    "pronoun",
    "invented",
    "unrelated",
    "abstract-fact",
    "headline-fact",
)
HELD_OUT = ("headline", "headline-fact")  # kinds used only to test the fitted weights
ABSTRACT_KEEP, ABSTRACT_SWAP = 0.5, 0.3  # of the other words: kept, replaced by a common word (the rest dropped)
# Newswire paraphrase vocabulary (Zipf 2.7-5 in English): what a one-sentence abstractive summary rewords
# the article's lead with. None states a fact of its own; each is used only where the article lacks it.
HEADLINE_WORDS = tuple(
    "lawmakers backed unveiled sacked probe boost row bid clash slammed vowed hailed axed quit amid sparked tipped "
    "urged warned branded ruled blasted halted scrapped ousted jailed rescued stranded toll surge slump rift feud "
    "pledge spree inquiry bosses campaigners residents authorities organisers rivals youngster veteran pensioner "
    "motorist shoppers fans medics troops protesters".split()
)
HEADLINE_KEEP, HEADLINE_NEW = 0.35, 4  # of the lead's other words: share kept; paraphrase words added
GENERIC = tuple(
    "new recent major local several group plan move case officials reportedly later now large people said made took "
    "time year week part set left".split()
)

SYNONYMS = {
    "children": "kids",
    "began": "started",
    "begin": "start",
    "begins": "starts",
    "after": "following",
    "because": "as",
    "people": "individuals",
    "help": "assist",
    "helped": "assisted",
    "big": "large",
    "buy": "purchase",
    "bought": "purchased",
    "tried": "attempted",
    "try": "attempt",
    "revealed": "said",
    "announced": "said",
    "claimed": "said",
    "told": "informed",
    "died": "passed away",
    "killed": "slain",
    "car": "vehicle",
    "home": "house",
    "house": "home",
    "shows": "reveals",
    "showed": "revealed",
    "received": "got",
    "got": "received",
    "wanted": "sought",
    "want": "seek",
    "asked": "requested",
    "says": "states",
    "huge": "enormous",
    "small": "little",
    "job": "post",
    "jobs": "posts",
    "woman": "female",
    "man": "male",
    "started": "began",
    "near": "close to",
    "before": "prior to",
    "whether": "if",
    "while": "as",
    "many": "numerous",
    "also": "",
    "however": "",
    "very": "",
    "just": "",
    "still": "",
    "currently": "now",
}
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_AUX = re.compile(r"\b(is|was|were|are|has|have|had|will|would|can|could|should)\b(?! not\b)")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w.,]\d)")
_NAME = re.compile(r"(?<=[a-z,;] )([A-Z][a-z]+(?: [A-Z][a-z]+)*)")
_WORD = re.compile(r"[A-Za-z]+")
_LOWER_DATES = {w.lower() for w in _DAYS + _MONTHS}
_ATTRIBUTION = re.compile(
    r",? (?:police|officials|he|she|they|it|the \w+|[A-Z][a-z]+(?: [A-Z][a-z]+)*) "
    r"(?:said|says|told \w+|added|reported)\s*\.?$"
)
_LEAD = re.compile(r"^(?:On|In|At|By|Last|This|Earlier|Later|After|Before) [^,]{2,40}, ")
_PRONOUNS = {
    "he": "she",
    "his": "her",
    "him": "her",
    "she": "he",
    "her": "his",
    "He": "She",
    "His": "Her",
    "She": "He",
    "Her": "His",
}


@dataclass(frozen=True)
class Case:
    doc: int
    sentence: str
    label: int
    kind: str
    group: int = -1  # cases of one group form one summary (judged together); -1: a summary of its own


def _clean(s: str) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r" ([,.;:!?])", r"\1", s)
    if s and s[-1] not in ".!?":
        s += "."
    return s[0].upper() + s[1:] if s else s


def compress(s: str, rng: random.Random) -> str | None:
    """The sentence without an attribution, a clause between commas, or a leading phrase; None if unchanged."""
    body = s.rstrip(".!? ")
    out = _ATTRIBUTION.sub("", body + ".").rstrip(".")
    if out == body:
        clauses = body.split(", ")
        if len(clauses) >= 3:
            i = rng.randrange(1, len(clauses) - 1)
            out = ", ".join(clauses[:i] + clauses[i + 1 :])
        elif _LEAD.match(body):
            out = _LEAD.sub("", body)
    if out == body or len(out.split()) < 6:
        return None
    return _clean(out)


def reword(s: str) -> str:
    """Common words replaced by synonyms; a leading time phrase moved to the end."""
    body = s.rstrip(".!? ")
    m = _LEAD.match(body)
    if m:
        lead = m.group(0).rstrip(", ")
        body = body[m.end() :] + " " + lead[0].lower() + lead[1:]
    words = body.split(" ")
    words = [SYNONYMS.get(w, w) if w.islower() else w for w in words]
    return _clean(" ".join(w for w in words if w))


def fuse(a: str, b: str) -> str | None:
    """The main clause of a, joined to b."""
    head = a.rstrip(".!? ").split(", ")[0]
    tail = b.rstrip(".!? ")
    if len(head.split()) < 4 or len(tail.split()) < 4:
        return None
    first = tail.split(" ")[0]
    if first in ("The", "A", "An", "It", "He", "She", "They", "This", "But", "And"):
        tail = tail[0].lower() + tail[1:]
    return _clean(f"{head}, and {tail}")


def _swap_number(s: str, rng: random.Random, pool: list[str]) -> str | None:
    nums = list(_NUMBER.finditer(s))
    if not nums:
        return None
    m = rng.choice(nums)
    old = m.group(0)
    if pool:
        choices = [p for p in pool if p != old and p not in s]
        if not choices:
            return None
        new = rng.choice(choices)
    else:
        v = float(old.replace(",", ""))
        new = str(int(v) + rng.choice([-3, -2, 2, 3, 7, 11])) if v >= 4 and v == int(v) else str(int(v * 3 + 4))
        if 1900 <= v <= 2030:
            new = str(int(v) + rng.choice([-2, -1, 1, 2]))
    return s[: m.start()] + new + s[m.end() :]


def _swap_name(s: str, rng: random.Random, pool: list[str]) -> str | None:
    names = [m for m in _WORD.finditer(s) if m.start() > 0 and _is_name(m.group(0))]
    choices = [p for p in pool if p.lower() not in s.lower()]
    if not names or not choices:
        return None
    m = rng.choice(names)
    new = rng.choice(choices)
    new = new[0].upper() + new[1:] if m.group(0)[0].isupper() else new.lower()
    return s[: m.start()] + new + s[m.end() :]


def _swap_date(s: str, rng: random.Random) -> str | None:
    for group in (_DAYS, _MONTHS):
        for w in group:
            m = re.search(rf"\b{w}\b", s, re.IGNORECASE)
            if m:
                new = rng.choice([x for x in group if x != w])
                new = new if m.group(0)[0].isupper() else new.lower()
                return s[: m.start()] + new + s[m.end() :]
    return None


def _negate(s: str) -> str | None:
    m = _AUX.search(s)
    return None if m is None else s[: m.end()] + " not" + s[m.end() :]


def _swap_pronoun(s: str) -> str | None:
    words = s.split(" ")
    for i, w in enumerate(words):
        core = w.rstrip(",.;:")
        if core in _PRONOUNS:
            words[i] = _PRONOUNS[core] + w[len(core) :]
            return " ".join(words)
    return None


def abstract(s: str, rng: random.Random) -> str:
    """Names, numbers and rare words kept; about half of the other words kept, the rest common words or gone."""
    out = []
    for w in s.rstrip(".!? ").split(" "):
        r = rng.random()
        if _specific(w.strip(",.;:'`\"()")) or r < ABSTRACT_KEEP:
            out.append(w)
        elif r < ABSTRACT_KEEP + ABSTRACT_SWAP:
            out.append(rng.choice(GENERIC))
    return _clean(" ".join(out))


def headline(lead: list[str], rng: random.Random) -> str:
    """A one-sentence abstractive summary of the lead (XSum's style): its names and numbers, about a third of
    its other words, and HEADLINE_NEW paraphrase words the article does not have, in the lead's order."""
    text = " ".join(lead)
    have = {w.lower() for w in _WORD.findall(text)}
    words = [w for x in lead for w in x.rstrip(".!? ").split(" ")]
    out = [w for w in words if _specific(w.strip(",.;:'`\"()")) or rng.random() < HEADLINE_KEEP][:28]
    fresh = [w for w in HEADLINE_WORDS if w not in have]
    for w in rng.sample(fresh, min(HEADLINE_NEW, len(fresh))):
        out.insert(rng.randrange(len(out) + 1), w)
    return _clean(" ".join(out))


def unrelated(s: str) -> str | None:
    """Another article's sentence without its names, numbers and rare words."""
    out = [w for w in s.rstrip(".!? ").split(" ") if not _specific(w.strip(",.;:'`\"()"))]
    return _clean(" ".join(out)) if len(out) >= 6 else None


def _specific(core: str) -> bool:
    return any(c.isdigit() for c in core) or bool(core) and (core[0].isupper() or _is_name(core))


def _is_name(word: str) -> bool:
    """A word rare in English (the articles are partly lowercased, so capitals cannot tell a name)."""
    return len(word) > 3 and word.lower() not in _LOWER_DATES and zipf_frequency(word, "en") < 3.0


def _names_of(sentences: list[str]) -> list[str]:
    return sorted(
        {m.group(0).lower() for s in sentences for m in _WORD.finditer(s) if m.start() > 0 and _is_name(m.group(0))}
    )


def build(articles: list[str], seed: int = 0, per_doc: int = 2) -> list[Case]:
    """Cases from each article's first sentences: per_doc of each positive kind and of each negative kind."""
    rng = random.Random(seed)
    split = [[s for s in split_sentences(a) if 8 <= len(s.split()) <= 60][:12] for a in articles]
    names = [_names_of(ss) for ss in split]
    numbers = [sorted({m.group(0) for s in ss for m in _NUMBER.finditer(s)}) for ss in split]
    cases: list[Case] = []
    for d, ss in enumerate(split):
        if len(ss) < 3:
            continue
        other = (d + 1 + rng.randrange(len(articles) - 1)) % len(articles)
        positives: list[tuple[str, str]] = []
        for i in rng.sample(range(len(ss)), min(len(ss), 6)):
            s = ss[i]
            c = compress(s, rng)
            positives.append(("verbatim", s))
            if c:
                positives.append(("compressed", c))
            r = reword(c or s)
            if r != s:
                positives.append(("reworded", r))
            j = min(i + rng.choice([1, 2]), len(ss) - 1)
            f = fuse(reword(s), reword(ss[j])) if j != i else None
            if f:
                positives.append(("fused", f))
        by_kind: dict[str, list[str]] = {}
        for kind, s in positives:
            by_kind.setdefault(kind, []).append(s)
        for kind in POSITIVE:
            for s in by_kind.get(kind, [])[:per_doc]:
                cases.append(Case(d, s, 1, kind))
        bases = [s for kind, s in positives if kind != "verbatim"]
        rng.shuffle(bases)
        mine, theirs = numbers[d], names[other]
        own_names = names[d]
        elsewhere = [x for x in split[other] if _NUMBER.search(x) or _NAME.search(x)] or split[other]
        makers = {
            "number": lambda s: _swap_number(s, rng, []),
            "number-in": lambda s, pool=mine: _swap_number(s, rng, pool),
            "name": lambda s, pool=theirs: _swap_name(s, rng, pool),
            "name-in": lambda s, pool=own_names: _swap_name(s, rng, pool),
            "date": lambda s: _swap_date(s, rng),
            "negation": _negate,
            "pronoun": _swap_pronoun,
            "invented": lambda s, pool=elsewhere: fuse(s, rng.choice(pool)),
            "unrelated": lambda s, pool=split[other]: unrelated(rng.choice(pool)),
        }
        group = d * 10 + 1  # one abstractive summary per article, at most one unsupported sentence in it
        chosen = rng.sample(range(len(ss)), 3)
        bad = rng.randrange(-1, 3)  # -1: a faithful summary
        for n, i in enumerate(chosen):
            a = abstract(ss[i], rng)
            if n == bad:
                pick = rng.choice(["number", "name", "name-in", "number-in", "unrelated"])
                swapped = makers[pick](a)
                swapped = swapped or makers["name"](a)
                if swapped and swapped != a:
                    cases.append(Case(d, _clean(swapped), 0, "abstract-fact", group))
                    continue
            cases.append(Case(d, a, 1, "abstract", group))
        lead = headline(ss[:2], rng)
        pick = rng.choice(["number", "name", "invented"])
        made_up = makers[pick](lead) if pick != "invented" else f"{lead.rstrip('.')} {rng.choice(theirs or ['x'])}"
        cases.append(Case(d, lead, 1, "headline"))
        if made_up and made_up != lead:
            cases.append(Case(d, _clean(made_up), 0, "headline-fact"))
        for kind, make in makers.items():
            made = 0
            for s in bases:
                out = make(s)
                if out and out != s:
                    cases.append(Case(d, _clean(out), 0, kind))
                    made += 1
                    if made == per_doc:
                        break
    return cases
