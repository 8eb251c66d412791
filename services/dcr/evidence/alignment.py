"""Alignment: the reference sentences that best support or contradict a candidate sentence, by lexical
overlap and (when an embedder is given) MiniLM cosines on a shortlist, embedded in one call for many pairs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from services.dcr.evidence.minilm import Embedder, default_embedder, lexical_only
from services.dcr.evidence.text import (
    _STOPWORDS,
    NEGATION_SCOPE,
    SpanKind,
    _is_negation,
    _Reference,
    _reference_sentences,
    _Text,
    _unit_key,
)

log = logging.getLogger(__name__)

Role = Literal["support", "contradict"]
TOP_K = 3

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
# A contradiction needs the sentence to be about the same thing as the reference sentence first.
CONTRADICT_MIN_LEXICAL = 0.3
SWAP_MIN_LEXICAL = 0.5
# Negation is read crudely (no parse), so a polarity conflict needs the two sentences to be close.
NEGATION_MIN_LEXICAL = 0.5


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
    return sum(parts) / len(parts) if parts else 0.0  # np.mean of one or two values, without its overhead


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
    ("was not fined" / "was fined"), or the words on either side of it: a pronoun of the other gender, or "not" or
    "never" between two words the other sentence has side by side ("collecting his coat" / "collecting her
    coat", "had not 10 children" / "had 10 children"), at any lexical overlap of 0.3 or more.
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
    if lexical >= NEGATION_MIN_LEXICAL:
        mine_g, theirs_g = _genders(sent), _genders(ref)
        if len(mine_g) == 1 and len(theirs_g) == 1 and mine_g != theirs_g:
            ours = next(t.text for t in sent.toks if t.lower in _GENDERED[next(iter(mine_g))])
            other = next(t.text for t in ref.toks if t.lower in _GENDERED[next(iter(theirs_g))])
            return f"'{ours}' where it says '{other}'"
        # A negation the reference states in another sentence is merged from there, not contradicted ("was jailed
        # without parole" beside a sentence that only says "was jailed").
        clash = (sent.negated_words & ref.content) - ref.negated_words - ref_all.negated_words
        if clash:
            return f"'{_negation_phrase(sent, clash)}' where it has no negation"
        clash = (ref.negated_words & sent.content) - sent.negated_words
        if clash:
            return f"no negation where it says '{_negation_phrase(ref, clash)}'"
    # Read in context, a swapped pronoun or a negation put in or left out needs no closer alignment: the words on
    # either side are the reference sentence's own.
    return _pronoun_in_context(sent, ref) or _negation_in_context(sent, ref, ref_all)


_GENDERED = {"m": frozenset("he him his himself".split()), "f": frozenset("she her hers herself".split())}


def _pronoun_in_context(sent: _Text, ref: _Text) -> str | None:
    """A gendered pronoun where the reference sentence has one of the other gender between the same two words
    ("without collecting his coat" / "without collecting her coat"), whatever other pronouns either sentence has."""
    st, rt = sent.toks, ref.toks
    for i in range(1, len(st) - 1):
        mine = next((g for g, words in _GENDERED.items() if st[i].lower in words), None)
        if mine is None:
            continue
        for j in range(1, len(rt) - 1):
            if (
                rt[j].lower in _GENDERED["f" if mine == "m" else "m"]
                and rt[j - 1].stem == st[i - 1].stem
                and rt[j + 1].stem == st[i + 1].stem
            ):
                return f"'{st[i].text}' where it says '{rt[j].text}'"
    return None


def _negation_in_context(sent: _Text, ref: _Text, ref_all: _Reference) -> str | None:
    """A negation one sentence has between two words the other has side by side, one of them a content word
    ("was not sought" / "was sought"; "had 10 children" / "had not 10 children"), unless the reference says the
    negated phrase in another sentence."""
    for a, b, where in ((sent, ref, "it"), (ref, sent, "the sentence")):
        for i in range(1, len(a.toks) - 1):
            t, before, after = a.toks[i], a.toks[i - 1], a.toks[i + 1]
            if t.lower not in ("not", "never") or (before.stem, after.stem) not in b.bigrams:
                continue
            if before.lower in _STOPWORDS and after.lower in _STOPWORDS:
                continue
            if where == "it":
                if after.base in ref_all.negated_words or "~" + after.stem in ref_all.negated_words:
                    continue
                return f"'{before.text} {t.text} {after.text}' where it says '{before.text} {after.text}'"
            return f"'{before.text} {after.text}' where it says '{before.text} {t.text} {after.text}'"
    return None


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
