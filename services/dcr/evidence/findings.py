"""What the evidence checker finds for a sentence: its features (the score's inputs) and its evidence, score,
verdict and reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from services.dcr.evidence.alignment import Evidence
from services.dcr.evidence.text import Span

Verdict = Literal["consistent", "inconsistent", "unknown"]
Rule = Literal["verbatim", "novel", "contradiction", "support"]
FEATURES = (
    "align",
    "fused",
    "ngrams",
    "style",
    "ngrams_in_style",
    "novel",
    "rare",
    "reworded",
    "numbers",
    "names",
    "displaced",
    "contradiction",
    "cut",
)


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
    sentence states another number, date, name, pronoun gender or polarity; cut: how far below CUT_BELOW the share
    of the content words of the best aligned reference sentence (the one it retells) that the sentence keeps: a
    sentence that keeps little of the one it retells has cut what may qualify it (its real subject, "formerly",
    "possible", the clause that says who did it).
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
    cut: float = 0.0

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
    probability: float | None = None  # calibrated probability that the reference supports it (calibration.py)
    abstain_reason: str | None = None  # why the checker does not decide it, and what would (verdict "unknown")

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
            "probability": None if self.probability is None else round(self.probability, 4),
            "abstain_reason": self.abstain_reason,
            "threshold": self.threshold,
            "top": [
                {
                    "ref_index": e.ref_index,
                    "ref_text": e.ref_text,
                    "similarity": e.similarity,
                    "lexical": e.lexical,
                    "combined": e.combined,
                    "role": e.role,
                    "conflict": e.conflict,
                }
                for e in self.alignments
            ],
            "novel": [{"start": s.start, "end": s.end, "text": s.text, "kind": s.kind} for s in self.novel],
            "checker_verdict": self.verdict,
            "checker_reason": self.reason,
        }
