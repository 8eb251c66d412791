"""Reading the verdict a free-text reason states: +1 consistent, -1 not consistent, None when unsure.

The reader works clause by clause. It finds verdict words ("consistent", "accurate", "contradicts",
"not mentioned", ...), applies the negation that governs each (a negator attaches to the next verdict
word of its clause, so "not at all consistent", "cannot be considered consistent", "fails to match"
and "no contradiction" all read as they are meant), sets aside verdicts under a hedge ("may be",
"unclear", "whether"), and then decides:

1. a concluding verdict ("so", "therefore", "overall", ...) wins;
2. if every verdict agrees, that is the answer;
3. a reason that opens with a plain verdict sentence (as Table 8 asks) keeps it, unless a positive
   opening is later contradicted outright (then unknown);
4. after a contrast ("but", "however"), a negative final clause decides;
5. otherwise explicit consistency verdicts decide when they agree, and the reader says unknown.

It never turns a stated "not consistent" into +1: when two readings remain, it answers None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words that carry a verdict. Primary ones speak of consistency itself; the rest are evidence words.
_POS_PRIMARY = {"consistent"}
_NEG_PRIMARY = {"inconsistent", "inconsistency", "inconsistencies"}
_POS = {
    "accurate",
    "accurately",
    "correct",
    "correctly",
    "supported",
    "supports",
    "faithful",
    "faithfully",
    "entailed",
    "entails",
    "true",
    "confirmed",
    "confirms",
    "verified",
    "corroborated",
    "matches",
    "match",
    "matched",
    "matching",
    "aligns",
    "align",
    "aligned",
    "agrees",
    "agree",
    "reflects",
    "reflected",
    "backed",
    "substantiated",
    "valid",
    "agreement",
}
_NEG_STRONG = {
    "inaccurate",
    "inaccurately",
    "incorrect",
    "incorrectly",
    "unsupported",
    "unfaithful",
    "contradicts",
    "contradict",
    "contradicted",
    "contradiction",
    "contradictory",
    "contradicting",
    "wrong",
    "wrongly",
    "false",
    "falsely",
    "erroneous",
    "erroneously",
    "mistaken",
    "mistakenly",
    "misrepresents",
    "misrepresented",
    "misrepresentation",
    "fabricated",
    "fabricates",
    "fabrication",
    "hallucinated",
    "hallucination",
    "hallucinates",
    "discrepancy",
    "discrepancies",
    "conflicts",
    "conflict",
    "conflicting",
    "mismatch",
    "invented",
    "untrue",
    "unverified",
    "unverifiable",
    "error",
    "errors",
    "misstates",
    "misattributes",
    "nonfactual",
    "non-factual",
    "differs",
    "differ",
    "differed",
    "deviates",
    "deviate",
    "inaccuracy",
    "inaccuracies",
    "mistake",
    "mistakes",
    "misleading",
    "exaggerates",
    "exaggerated",
    "exaggeration",
    "overstates",
    "understates",
    "misquotes",
    "distort",
    "distorts",
    "distorted",
    "unsubstantiated",
    "unfounded",
    "baseless",
    "speculative",
}
# Evidence words with no polarity of their own: negated, they say the sentence lacks support.
_NEG_WHEN_NEGATED = {
    "mention",
    "mentions",
    "mentioned",
    "mentioning",
    "state",
    "states",
    "stated",
    "say",
    "says",
    "said",
    "found",
    "present",
    "included",
    "include",
    "includes",
    "indicate",
    "indicates",
    "indicated",
    "specify",
    "specifies",
    "specified",
    "inferred",
    "infer",
    "derived",
    "appear",
    "appears",
    "exist",
    "exists",
    "evidence",
    "reported",
    "report",
    "reports",
    "support",
    "basis",
    "information",
    "reference",
    "referenced",
    "discuss",
    "discussed",
    "discusses",
    "provide",
    "provided",
    "provides",
}
_MISSING = {"missing", "absent", "nowhere"}  # negative by themselves (the claim is not in the reference)

_NEGATORS = {
    "not",
    "no",
    "never",
    "cannot",
    "none",
    "nor",
    "neither",
    "without",
    "hardly",
    "nothing",
    "lacks",
    "lack",
    "lacking",
}
_BOUNDARIES = {
    "but",
    "however",
    "although",
    "though",
    "while",
    "whereas",
    "yet",
    "because",
    "since",
    "which",
    "and",
    "except",
    "so",
    "therefore",
    "thus",
    "hence",
    "that",
    "whereby",
    "where",
    "when",
}
# A comma followed by one of these starts a new clause ("..., it is consistent"); other commas do not
# ("is not, as far as I can tell, consistent").
_CLAUSE_STARTERS = {"it", "this", "the", "that", "which", "and", "but", "so", "there", "he", "she", "they", "we"}
_QUALIFIERS = {
    "mostly",
    "largely",
    "generally",
    "broadly",
    "somewhat",
    "mainly",
    "almost",
    "nearly",
    "roughly",
    "overall-ish",
    "reasonably",
    "fairly",
}
_SUBORDINATORS = {"although", "though", "while", "whereas", "despite", "even"}
_CONTRAST = {"but", "however", "yet", "nevertheless", "nonetheless", "though", "although", "except"}
_CONCLUSION = re.compile(
    r"^(?:so|therefore|thus|hence|overall|in conclusion|in summary|in short|ultimately|as a result|"
    r"consequently|all in all|this means|verdict|final verdict|conclusion|answer|judgement|judgment)\b"
)
_HEDGE = re.compile(
    r"\b(?:may (?:be|not|have|or)|might|could (?:be|have|possibly)|possibly|perhaps|maybe|unclear|uncertain|"
    r"not sure|unsure|hard to (?:say|tell|determine)|"
    r"difficult to (?:say|tell|determine)|cannot (?:be )?determined?|cannot tell|unable to (?:determine|tell|judge)|"
    r"ambiguous|not clear|whether|it is possible|cannot say|open to interpretation)\b"
)
_NEGATION_WINDOW = 12  # words between a negator and the verdict word it governs

_CONTRACTIONS = [
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\bshan't\b", "shall not"),
    (r"n't\b", " not"),
]


def normalize(text: str) -> str:
    """Lower case, plain apostrophes, no markdown, contractions spelled out."""
    t = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = re.sub(r"[*_`#>~|]+", " ", t).lower()
    for pat, rep in _CONTRACTIONS:
        t = re.sub(pat, rep, t)
    t = re.sub(r"\bfail(?:s|ed|ing)? to\b", "not", t)
    t = re.sub(r"\bno doubt\b|\bwithout (?:a )?doubt\b|\bnot only\b", " ", t)
    # "cannot be said to be inconsistent": the verb of saying only carries the negation to the verdict
    t = re.sub(r"\b(?:said|considered|described|regarded|called|deemed|seen|viewed|judged) (?:to be|as)\b", " ", t)
    t = re.sub(r"\b(?:says|states|reports|indicates|suggests|shows) (?:otherwise|the opposite)\b", " contradicts ", t)
    t = re.sub(r"\brather than\b|\binstead of\b", " differs ", t)
    t = re.sub(r"\bwith the exception of\b|\bapart from\b|\bsave for\b|\bexcept for\b", " except ", t)
    t = re.sub(r"\b(is|are|was|were) off\b", r"\1 wrong", t)
    t = re.sub(r"\bin line with\b", " aligns with ", t)
    t = re.sub(r"\bfar from\b|\bin no way\b|\bby no means\b", "not", t)
    t = re.sub(r"\bnot (?:fully|entirely|completely|wholly|totally|quite|100%)\b", "partially", t)
    return re.sub(r"\s+", " ", t).strip()


@dataclass(frozen=True)
class Cue:
    """One verdict word as read: its polarity and whether it is an explicit consistency verdict."""

    polarity: int
    primary: bool
    strong: bool
    sentence: int
    clause: int
    hedged: bool
    concluding: bool
    after_contrast: bool
    subordinate: bool = False  # in a clause opened by "although", "while", ...: not the main verdict


_TOKEN = re.compile(r"[a-z0-9%'-]+|[.;:!?,]")


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?;:])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def read_cues(text: str) -> list[Cue]:
    """Every verdict word of a reason with the polarity its clause gives it."""
    cues: list[Cue] = []
    for si, sentence in enumerate(_sentences(normalize(text))):
        hedged = bool(_HEDGE.search(sentence))
        concluding = bool(_CONCLUSION.match(sentence)) or bool(
            re.search(r"(?:,|\band)\s+(?:so|therefore|thus|hence|overall)\b", sentence)
        )
        tokens = _TOKEN.findall(sentence)
        clause = 0
        seen_contrast = False
        in_conclusion_clause = bool(_CONCLUSION.match(sentence))
        pending: list[tuple[int, str]] = []  # token positions of negators not yet attached to a verdict word
        partial = False
        subordinate = False
        qualified = False
        words = 0  # position counted in words (commas do not count)
        for i, tok in enumerate(tokens):
            if tok == ",":
                if i + 1 < len(tokens) and tokens[i + 1] in _CLAUSE_STARTERS:
                    clause += 1
                    pending = []
                    partial = False
                    subordinate = False
                continue
            words += 1
            pos = words
            if "-" in tok and tok not in _NEG_STRONG:
                head, _, tail = tok.rpartition("-")
                tok = {"non": "unsupported", "un": "unsupported"}.get(head, tail)
            if tok == "except":  # "consistent except the date": the exception is an error of the sentence
                cues.append(
                    Cue(
                        polarity=-1,
                        primary=False,
                        strong=False,
                        sentence=si,
                        clause=clause + 1,
                        hedged=hedged,
                        concluding=False,
                        after_contrast=True,
                    )
                )
            if tok in _BOUNDARIES or tok in ".;:!?":
                clause += 1
                pending = []
                partial = False
                subordinate = tok in _SUBORDINATORS
                qualified = False
                if tok in _CONTRAST:
                    seen_contrast = True
                if tok in {"so", "therefore", "thus", "hence"}:
                    in_conclusion_clause = True
                continue
            if tok in _SUBORDINATORS and not subordinate:
                subordinate = True
                continue
            if tok in _QUALIFIERS:
                qualified = True
                continue
            if tok in {"partially", "partly", "half"}:
                partial = True
                continue
            if tok in _NEGATORS:
                if tok == "nor" and "neither" in {t for _, t in pending}:
                    continue  # "neither ... nor ...": one negation over both
                pending.append((pos, tok))
                continue
            pending = [(p, t) for p, t in pending if pos - p <= _NEGATION_WINDOW]
            negated = len(pending) % 2 == 1
            base = None
            primary = strong = False
            if tok in _POS_PRIMARY:
                base, primary, strong = 1, True, True
            elif tok in _NEG_PRIMARY:
                base, primary, strong = -1, True, True
            elif tok in _POS:
                base, strong = 1, True
            elif tok in _NEG_STRONG:
                base, strong = -1, True
            elif tok in _MISSING:
                base = -1
            elif tok in _NEG_WHEN_NEGATED:
                if not negated:
                    continue
                base, negated = 1, True  # read as "not <found>": weak negative
            if base is None:
                continue
            polarity = -base if negated else base
            if partial and polarity == 1:
                polarity = -1  # "partially consistent", "not fully accurate": not consistent as a whole
            pending = []
            cue_hedged = hedged or (qualified and polarity == 1)  # "mostly consistent": not a plain verdict
            qualified = False
            cues.append(
                Cue(
                    polarity=polarity,
                    primary=primary,
                    strong=strong,
                    sentence=si,
                    clause=clause,
                    hedged=cue_hedged,
                    concluding=concluding and in_conclusion_clause,
                    after_contrast=seen_contrast,
                    subordinate=subordinate,
                )
            )
    return cues


def _agree(cues: list[Cue]) -> int | None:
    signs = {c.polarity for c in cues}
    return signs.pop() if len(signs) == 1 else None


def read_verdict(text: str | None) -> int | None:
    """The verdict a reason states: +1 consistent, -1 not consistent, None when it cannot be told."""
    if not text or not text.strip():
        return None
    all_cues = read_cues(text)
    cues = [c for c in all_cues if not c.hedged]
    if not cues:
        return None
    verdict = _decide(cues)
    if verdict == 1 and any(c.hedged and c.polarity == -1 for c in all_cues):
        return None  # "consistent, though the date may be wrong": not a plain verdict either way
    return verdict


def _decide(cues: list[Cue]) -> int | None:
    concluding = [c for c in cues if c.concluding]
    if concluding:
        last_sentence = max(c.sentence for c in concluding)
        return _agree([c for c in concluding if c.sentence == last_sentence])
    agreed = _agree(cues)
    if agreed is not None:
        return agreed
    # "Not consistent, although the rest is consistent": the main clauses decide when they agree.
    main = [c for c in cues if not c.subordinate]
    if main and len(main) < len(cues) and _agree(main) is not None:
        return _agree(main)
    # A reason that opens with a plain verdict sentence ("This sentence is not consistent with the article.").
    first = [c for c in cues if c.sentence == 0]
    opening = _agree(first) if first and all(c.primary for c in first) else None
    if opening is not None and not any(c.after_contrast for c in first):
        rest = [c for c in cues if c.sentence > 0]
        if opening == -1:
            return -1
        if not any(c.polarity == -1 and c.strong for c in rest):
            return 1
        return None
    # Mixed verdicts, no plain opening. After a contrast, a negative last clause decides
    # ("the date is right, but the number is wrong").
    last = cues[-1]
    final_clause = [c for c in cues if c.sentence == last.sentence and c.clause == last.clause]
    if last.after_contrast and _agree(final_clause) == -1:
        return -1
    primary = _agree([c for c in cues if c.primary]) if any(c.primary for c in cues) else None
    if primary == -1:
        return -1
    if primary == 1 and not any(c.polarity == -1 and c.strong for c in cues):
        return 1
    return None


def verdict_word(value: object) -> int | None:
    """An explicit verdict field ("consistent" / "inconsistent", true / false, +1 / -1) as a mark."""
    if isinstance(value, bool):
        return 1 if value else -1
    if isinstance(value, int | float) and value in (1, -1):
        return int(value)
    if not isinstance(value, str):
        return None
    t = normalize(value).strip(" .!\"'")
    if t in {"consistent", "yes", "true", "+1", "1", "supported", "positive"}:
        return 1
    if t in {"inconsistent", "not consistent", "no", "false", "-1", "unsupported", "negative", "not supported"}:
        return -1
    return None
