"""Alignment of a model's reasons (or rewrites) to the candidate's sentences, shared by the DCE and the RAI."""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.text import similarity

ALIGN_THRESHOLD = 0.55

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the of to in on at by for with and or but is are was were be been it its this that these those as from "
    "has have had not no he she they his her their there than then so such which who what when where".split()
)
_WHOLE = re.compile(
    r"\b(?:paragraphs?|summary|summaries|whole|overall|entire|entirety|texts?|passages?|responses?|answers?|"
    r"candidate|document|all (?:the )?sentences|every sentence|each sentence)\b",
    re.IGNORECASE,
)
_ONE_SENTENCE = re.compile(r"\b(?:this|the|that) (?:sentence|claim|statement|bullet|point)\b", re.IGNORECASE)
POSITION_BONUS = 0.1
MIN_MATCH = 0.45  # below this an item is not taken to judge the sentence it was paired with


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def content_overlap(reason: str, sentence: str) -> float:
    """Share of the sentence's content words that a reason repeats (a reason that paraphrases its sentence)."""
    return _overlap(_content_words(reason), _content_words(sentence))


def _overlap(reason_words: set[str], sentence_words: set[str]) -> float:
    return len(sentence_words & reason_words) / len(sentence_words) if sentence_words else 0.0


def is_paragraph_level(
    quote: str, reason: str, sentences: Sequence[str], quote_similarity: Sequence[float] | None = None
) -> bool:
    """Whether an item judges no single sentence (Appendix E.4): it quotes none and speaks of the whole text.

    `quote_similarity`, when given, is similarity(quote, s) for each sentence, already computed by the caller."""
    if quote.strip():
        sims = quote_similarity if quote_similarity is not None else [similarity(quote, s) for s in sentences]
        if max(sims, default=0.0) >= ALIGN_THRESHOLD:
            return False
    text = f"{quote} {reason}"
    return bool(_WHOLE.search(text)) and not _ONE_SENTENCE.search(text)


def align(
    items: Sequence[str], sentences: Sequence[str], reasons: Sequence[str] | None = None
) -> tuple[list[int | None], list[int]]:
    """Match model items to our sentences by the sentence each quotes or, failing that, by what its reason says.

    Returns, per sentence, the index of its item (or None), and the indices of items that judge no single
    sentence (Appendix E.4's paragraph-level reasons, and items left over when there are more than sentences).
    Items that speak of the whole text and quote no sentence are paragraph-level. The rest are assigned one
    to one (Hungarian assignment over quote similarity, content overlap and a small bonus for the same
    position), so a paraphrased quote still keeps its reason with its sentence. Without quotes and with as
    many items as sentences, position decides, as the prompt asks for one entry per sentence in order.
    """
    k = len(sentences)
    reasons = list(reasons) if reasons is not None else [""] * len(items)
    # each quote against each sentence once: the paragraph-level test and the gains below both read it
    quoted = [[similarity(q, sent) for sent in sentences] if q.strip() else [0.0] * k for q in items]
    whole = [i for i in range(len(items)) if is_paragraph_level(items[i], reasons[i], sentences, quoted[i])]
    cand = [i for i in range(len(items)) if i not in whole]
    by_sentence: list[int | None] = [None] * k
    if not cand or not k:
        return by_sentence, list(range(len(items))) if k else list(range(len(items)))
    if len(cand) == k and not any(items[i].strip() for i in cand):
        for j, i in enumerate(cand):
            by_sentence[j] = i
        return by_sentence, whole
    gain = [[0.0] * k for _ in cand]
    sentence_words = [_content_words(sent) for sent in sentences]  # each text's words once, not once a pair
    for a, i in enumerate(cand):
        reason_words = _content_words(reasons[i])
        for j, words in enumerate(sentence_words):
            gain[a][j] = max(quoted[i][j], 0.8 * _overlap(reason_words, words))
            if len(cand) == k and a == j:
                gain[a][j] += POSITION_BONUS
    pairs = _clear_best(gain) or _assignment(gain)
    used = set()
    for a, j in pairs:
        if gain[a][j] < MIN_MATCH and not (len(cand) == k and a == j):
            continue  # neither its quote nor its words point to this sentence, nor (with equal counts) its place
        by_sentence[j] = cand[a]
        used.add(cand[a])
    leftovers = sorted(set(whole) | {i for i in cand if i not in used})
    return by_sentence, leftovers


def _clear_best(gain: list[list[float]]) -> list[tuple[int, int]] | None:
    """Each item paired with its best sentence, when every item's best is strictly ahead of its second best
    and no two items share one: that pairing is then the one optimal assignment, found without scipy.

    (It reaches the sum of the row maxima, an upper bound of every assignment; any other pairing gives some
    item less than its strict maximum.) None when it does not hold, or when there are more items than sentences.
    """
    if not gain or len(gain) > len(gain[0]):
        return None
    pairs = []
    for a, row in enumerate(gain):
        j = max(range(len(row)), key=row.__getitem__)
        if any(v >= row[j] for b, v in enumerate(row) if b != j):
            return None
        pairs.append((a, j))
    return pairs if len({j for _, j in pairs}) == len(pairs) else None


def _assignment(gain: list[list[float]]) -> list[tuple[int, int]]:
    """The pairing of items and sentences with the largest total gain (Hungarian assignment)."""
    import numpy as np  # with scipy (a third of a second): loaded only when the best pairing is not clear
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(np.array(gain), maximize=True)
    return [(int(a), int(j)) for a, j in zip(rows, cols, strict=True)]
