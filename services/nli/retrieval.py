"""Long documents (paper 003, Appendix B): the summary's windows, and the document sentences retrieved as the
context of a target when a document does not fit."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from services.text import estimate_tokens, split_sentences

CONTEXT_BUDGET_TOKENS = 1024  # Appendix B, Table 8: Summ-Alignment
WINDOW_CONTEXT_SENTENCES = 5  # Appendix B, Table 8: Sent-Alignment n
# Retrieval (Appendix B) is for long documents (GovReport ~3.8k words, SQuALITY ~5k): it runs when a document
# does not fit this many estimated tokens, or when asked. Ordinary news articles (CNN/DM) are read whole.
FIT_TOKENS = 4096
Retrieval = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class ContextSelection:
    """Document sentences retrieved for a target (Appendix B); `indices` are in document order."""

    indices: tuple[int, ...]
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from rouge_score import tokenizers

    # rouge-score's own tokenizer and stemmer, so these recalls match its ROUGE-1/ROUGE-2
    return tokenizers.DefaultTokenizer(use_stemmer=True)


def _ngrams(text: str) -> tuple[Counter, Counter]:
    tokens = _tokenizer().tokenize(text)
    return Counter(tokens), Counter(zip(tokens, tokens[1:], strict=False))


def _recall(target: tuple[Counter, Counter], picked: tuple[Counter, Counter]) -> float:
    """ROUGE-1 recall + ROUGE-2 recall of the picked n-grams toward the target's."""
    total = 0.0
    for want, have in zip(target, picked, strict=True):
        n = sum(want.values())
        if n:
            total += sum(min(c, have[g]) for g, c in want.items()) / n
    return total


def select_context(
    document: str | list[str],
    target: str,
    *,
    budget_tokens: int | None = None,
    n_sentences: int | None = None,
) -> ContextSelection:
    """Greedily pick document sentences maximizing ROUGE-1 + ROUGE-2 recall toward `target`.

    Stops at `n_sentences` sentences, or before the picked text would exceed `budget_tokens`
    (default 1024, when neither is given), or when no sentence adds recall.
    """
    if budget_tokens is None and n_sentences is None:
        budget_tokens = CONTEXT_BUDGET_TOKENS
    sentences = split_sentences(document) if isinstance(document, str) else list(document)
    want = _ngrams(target)
    grams = [_ngrams(sent) for sent in sentences]
    have: tuple[Counter, Counter] = (Counter(), Counter())
    chosen: list[int] = []
    used = 0
    best = 0.0
    while n_sentences is None or len(chosen) < n_sentences:
        pick, pick_score = None, best
        for i, sent in enumerate(sentences):
            if i in chosen:
                continue
            if budget_tokens is not None and used + estimate_tokens(sent) > budget_tokens:
                continue
            score = _recall(want, (have[0] + grams[i][0], have[1] + grams[i][1]))
            if score > pick_score + 1e-12:
                pick, pick_score = i, score
        if pick is None:
            break
        chosen.append(pick)
        have = (have[0] + grams[pick][0], have[1] + grams[pick][1])
        used += estimate_tokens(sentences[pick])
        best = pick_score
    order = tuple(sorted(chosen))
    return ContextSelection(indices=order, sentences=tuple(sentences[i] for i in order))


def needs_retrieval(document: str, *, retrieval: Retrieval = "auto", fit_tokens: int = FIT_TOKENS) -> bool:
    """Whether Appendix B's retrieval applies: asked for, or the document does not fit `fit_tokens`."""
    if retrieval != "auto":
        return retrieval == "always"
    return estimate_tokens(document) > fit_tokens


def context_for(
    document: str, target: str, budget_tokens: int, n_sentences: int | None, use: bool = True
) -> ContextSelection | None:
    """The retrieved context when retrieval applies (`use`), else None (the document is read whole)."""
    if not use:
        return None
    if n_sentences is None:
        return select_context(document, target, budget_tokens=budget_tokens)
    return select_context(document, target, n_sentences=n_sentences)


def windows_of(sentences: list[str], window: int) -> list[tuple[int, int]]:
    """Consecutive, non-overlapping windows of `window` sentences as [start, end) spans."""
    if window < 1:
        raise ValueError("window must be at least 1")
    return [(i, min(i + window, len(sentences))) for i in range(0, len(sentences), window)]
