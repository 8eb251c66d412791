"""Calibrated probabilities and abstention for the offline evidence checker.

The checker's score (`score_of`) is fitted with balanced classes: it ranks sentences well but is not a
probability. Here it becomes one. A sentence's probability of being supported is an isotonic map of its
score; a summary's probability that every sentence is supported is a logistic (Platt) map of the mean of
its sentences' scores (monotone in it, so it ranks summaries exactly as the mean does). Both maps are fitted
by bench/evidence_calibration.py, out of fold on QAGS-CNN/DM and on cases built by rule from its articles,
and shipped as calibration.json beside this module, with the cross-validated reliability bins they came with.

The checker leaves a sentence undecided (verdict "unknown"), says why in plain words and what would decide
it, when its lexical evidence cannot decide:
- reworded: the summary keeps fewer than `min_style` of its word pairs from the reference (the mean ROUGE-2
  precision of its sentences). CNN/DM-style summaries keep most; XSum-style abstractive ones keep few, and
  there a missing word says little about a missing fact. Word-for-word and stitched sentences still decide,
  and so do sentences with evidence that does not rest on wording: a number found nowhere in the reference,
  a contradiction, or mostly words the reference lacks.
- merged: the sentence draws on `merged` or more reference sentences and is not stitched from their
  passages word for word, so whether it combines them faithfully is a question of meaning.
- band: its probability lies inside `band`: the evidence is mixed.

The summary's verdict (`decide_summary`): inconsistent when any sentence is decided inconsistent; otherwise its
own probability (`summary_probability`) decides, with its own band `summary_band` [lo, hi): a summary with
undecided sentences is consistent at hi or above, inconsistent below lo, undecided between; one whose sentences
all pass is consistent unless its probability is below lo (then undecided). So a summary with an undecided
sentence can still be decided, and one whose sentences each pass narrowly can still be left undecided. The band
is chosen by cross-validation on QAGS-CNN for the best balanced accuracy while deciding most summaries. A
summary of one sentence takes that sentence's verdict (the sentence map is fitted on far more sentences than
the summary map on summaries), and so does a reworded summary: there only hard evidence decides.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

CALIBRATION_PATH = Path(__file__).with_name("calibration.json")
DECIDE_WITH = "Connect a model endpoint (Settings) and run DCE or an NLI method to decide it."


@dataclass(frozen=True)
class Calibration:
    """The fitted maps, the abstention settings, and the cross-validated figures they were fitted with."""

    sentence_x: tuple[float, ...]  # isotonic knots: raw score ...
    sentence_y: tuple[float, ...]  # ... and the probability of being supported there
    summary_intercept: float  # P(all supported) = sigmoid(intercept + slope * logit(mean score))
    summary_slope: float
    band: tuple[float, float]  # probabilities strictly inside are undecided
    min_style: float
    merged: int
    info: dict[str, Any]  # when, where and on what it was fitted, and its cross-validated figures
    summary_band: tuple[float, float] = (0.5, 0.5)  # summary probabilities in [lo, hi) are undecided

    def sentence_probability(self, score: float) -> float:
        """The probability that a sentence with this raw score is supported (isotonic, clipped at the ends)."""
        return float(np.interp(score, self.sentence_x, self.sentence_y))

    def summary_probability(self, scores: Sequence[float]) -> float | None:
        """The probability that every sentence of a summary is supported, from its sentences' raw scores."""
        if not len(scores):
            return None
        z = self.summary_intercept + self.summary_slope * logit(float(np.mean(scores)))
        return float(1.0 / (1.0 + math.exp(-z)))

    def in_band(self, p: float) -> bool:
        return self.band[0] < p < self.band[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentence": {"x": list(self.sentence_x), "y": list(self.sentence_y)},
            "summary": {"intercept": self.summary_intercept, "slope": self.summary_slope},
            "abstain": {
                "band": list(self.band),
                "min_style": self.min_style,
                "merged": self.merged,
                "summary_band": list(self.summary_band),
            },
            **self.info,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        s, m, a = d["sentence"], d["summary"], d["abstain"]
        if len(s["x"]) != len(s["y"]) or not s["x"]:
            raise ValueError("calibration: the sentence map needs as many probabilities as scores")
        summary_band = tuple(float(v) for v in a.get("summary_band", (0.5, 0.5)))
        if len(summary_band) != 2 or not 0.0 <= summary_band[0] <= summary_band[1] <= 1.0:
            raise ValueError("calibration: summary_band needs two probabilities, the lower one first")
        return cls(
            sentence_x=tuple(float(v) for v in s["x"]),
            sentence_y=tuple(float(v) for v in s["y"]),
            summary_intercept=float(m["intercept"]),
            summary_slope=float(m["slope"]),
            band=(float(a["band"][0]), float(a["band"][1])),
            min_style=float(a["min_style"]),
            merged=int(a["merged"]),
            info={k: v for k, v in d.items() if k not in ("sentence", "summary", "abstain")},
            summary_band=summary_band,
        )


def logit(p: float, eps: float = 1e-4) -> float:
    p = min(max(p, eps), 1 - eps)
    return math.log(p / (1 - p))


@functools.cache
def shipped() -> Calibration:
    """The calibration shipped with the checker (calibration.json)."""
    return Calibration.from_dict(json.loads(CALIBRATION_PATH.read_text(encoding="utf-8")))


def abstain_reason(
    *,
    probability: float,
    style: float,
    n_supporting: int,
    exact: bool,
    hard: bool = False,
    noun: str = "reference",
    cal: Calibration | None = None,
) -> str | None:
    """Why the evidence cannot decide this sentence, in plain words with what would decide it; None when it can.

    exact: the sentence is in the reference word for word, stitched from its passages, or a close rewording of
    the sentences that support it (COVERED_SIMILARITY): always decided.
    hard: it has evidence that does not depend on wording (`hard_evidence`): decided however freely the
    summary is worded.
    """
    c = cal or shipped()
    if exact:
        return None
    if style < c.min_style and not hard:
        return (
            f"The summary is reworded too freely for the offline checker: {style:.0%} of its word pairs are in "
            f"the {noun}, and it is built for summaries that keep at least {c.min_style:.0%}, so it cannot tell "
            f"a faithful paraphrase from an unsupported claim. {DECIDE_WITH}"
        )
    if n_supporting >= c.merged:
        return (
            f"The sentence merges {n_supporting} {noun} sentences: whether it combines them faithfully is a "
            f"question of meaning that word overlap cannot settle. {DECIDE_WITH}"
        )
    if c.in_band(probability):
        lo, hi = c.band
        return (
            f"The evidence is mixed: a probability of {probability:.2f} that the {noun} supports it, between "
            f"{lo:.2f} and {hi:.2f}, where the offline checker does not decide. {DECIDE_WITH}"
        )
    return None


def hard_evidence(features: Any, max_novel: float) -> bool:
    """A number found nowhere in the reference, a contradiction, or more than max_novel of its words new with at
    least one of them a specific (rare) word.

    Not a new name alone: in lowercased or freely reworded text a rare word passes for one. Nor new words of
    general vocabulary alone, however many: that is how a paraphrase reads.
    """
    f = features
    return bool(f.numbers > 0 or f.contradiction > 0 or (f.novel > max_novel and f.rare >= 1.0))


def decide_summary(
    verdicts: Sequence[str],
    probability: float | None,
    *,
    style: float = 1.0,
    noun: str = "reference",
    cal: Calibration | None = None,
) -> tuple[str, str | None]:
    """The summary's verdict from its sentences' verdicts and its probability (`summary_probability`), and a note
    in plain words wherever the sentences' verdicts alone do not show it (why it is undecided, with what would
    decide it; or what decided it as a whole).

    Inconsistent when any sentence is decided inconsistent. Otherwise, for a summary of two or more sentences
    that keeps its reference's wording (style at least `min_style`), the probability decides with `summary_band`
    [lo, hi): with every sentence decided consistent, consistent at lo or above and undecided below; with some
    undecided, consistent at hi or above, inconsistent below lo, undecided between. A summary of one sentence, a
    reworded one, or one without a probability: consistent when every sentence is, undecided otherwise.
    """
    c = cal or shipped()
    if any(v == "inconsistent" for v in verdicts):
        return "inconsistent", None
    if not verdicts:
        return "unknown", f"Undecided: there is no sentence to judge. {DECIDE_WITH}"
    n_unknown = sum(v == "unknown" for v in verdicts)
    undecided = (
        "its one sentence is undecided"
        if len(verdicts) == 1
        else f"{n_unknown} of its {len(verdicts)} sentences {'is' if n_unknown == 1 else 'are'} undecided"
    )
    if probability is not None and len(verdicts) >= 2 and style >= c.min_style:
        lo, hi = c.summary_band
        chance = f"a probability of {probability:.2f} that the {noun} supports every sentence"
        if not n_unknown:
            # Every sentence passes: only weak evidence as a whole holds the verdict back (never turns it over).
            if probability >= lo:
                return "consistent", None
            return "unknown", (
                f"Undecided: each sentence passes, but taken together the evidence gives only {chance}, below "
                f"{lo:.2f}, where the offline checker does not call the summary consistent. {DECIDE_WITH}"
            )
        if probability >= hi:
            return "consistent", (
                f"Consistent as a whole: {undecided}, but taken together the evidence gives {chance}, at or "
                f"above {hi:.2f}."
            )
        if probability < lo:
            return "inconsistent", (
                f"Inconsistent as a whole: {undecided} and taken together the evidence gives only {chance}, "
                f"below {lo:.2f}. The undecided sentences are the likeliest culprits."
            )
        return "unknown", (
            f"Undecided: {undecided} and the evidence for the summary as a whole is mixed, {chance}, between "
            f"{lo:.2f} and {hi:.2f}, where the offline checker does not decide. {DECIDE_WITH}"
        )
    if not n_unknown:
        return "consistent", None
    return "unknown", f"Undecided: {undecided} (each sentence says why). {DECIDE_WITH}"


def summary_verdict(
    verdicts: Sequence[str],
    probability: float | None = None,
    *,
    style: float = 1.0,
    cal: Calibration | None = None,
) -> str:
    """The summary's verdict alone (`decide_summary`); without a probability: inconsistent when any sentence is,
    consistent when every sentence is, unknown otherwise."""
    return decide_summary(verdicts, probability, style=style, cal=cal)[0]
