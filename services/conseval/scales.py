"""The rating scales of Table 2 and the reading of a model's answer on a scale."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.text import InputError


# -- scales (Table 2) ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Scale:
    """A rating scale. Values are stored as numbers: the score itself, or the code of a label (lo + position)."""

    key: str
    kind: str  # interval | ordinal | nominal
    lo: float
    hi: float
    options: str  # what {options} says in the prompt
    labels: tuple[str, ...] = ()

    @property
    def level(self) -> str:
        """The level of measurement for Krippendorff's alpha on this scale's own values."""
        return self.kind

    @property
    def mapping(self) -> str:
        """The documented mapping onto [0, 1]."""
        if self.labels:
            codes = ", ".join(f"{lab} = {self.to_unit(self.lo + i):g}" for i, lab in enumerate(self.labels))
            return f"{codes}"
        return f"(x - ({self.lo:g})) / {self.hi - self.lo:g}: {self.lo:g} -> 0, {self.hi:g} -> 1"

    def to_unit(self, value: float | None) -> float | None:
        """The value mapped linearly onto [0, 1] (labels by their position); None stays None."""
        if value is None or not np.isfinite(value):
            return None
        return (float(value) - self.lo) / (self.hi - self.lo)

    def format(self, value: float) -> str:
        """The value as an answer in this scale's terms (a label, or a number)."""
        if self.labels:
            return self.labels[int(round(value - self.lo))]
        return f"{value:g}"

    def choices(self) -> list[float]:
        """The whole-number (or label) values a person picks from."""
        return [float(v) for v in range(int(self.lo), int(self.hi) + 1)]


LIKERT = ("Strongly Disagree", "Disagree", "Neutral", "Agree", "Strongly Agree")
SCALES: dict[str, Scale] = {
    s.key: s
    for s in (
        Scale("5-P", "interval", 1, 5, "1-5"),
        Scale("7-P", "interval", 1, 7, "1-7"),
        Scale("10-P", "interval", 1, 10, "1-10"),
        Scale("11-P (POS)", "interval", 1, 11, "1-11"),
        Scale("11-P (NEG)", "interval", -5, 5, "-5 to 5"),
        Scale("5-P Likert", "ordinal", 1, 5, ", ".join(LIKERT), LIKERT),
        Scale("Binary", "nominal", 0, 1, "No, Yes", ("No", "Yes")),
    )
}
# Table 4. "GS" (greedy against a sampled answer on one scale) is an extra of this app, labelled so.
IC_CASES: dict[str, tuple[str, ...]] = {
    "IC1": ("5-P", "7-P", "11-P (POS)"),
    "IC2": ("5-P", "5-P Likert"),
    "IC3": ("11-P (POS)", "11-P (NEG)"),
    "IC4": ("Binary", "10-P"),
}
IC_LABELS = {
    "IC1": "Case 1: 5-P / 7-P / 11-P (interval vs interval)",
    "IC2": "Case 2: 5-P / 5-P Likert (interval vs ordinal)",
    "IC3": "Case 3: 11-P (+) / 11-P (-) (interval + vs -)",
    "IC4": "Case 4: Binary / 10-P (nominal vs interval)",
    "GS": "Extra, not in the paper: greedy vs sampled answer on the same scale",
}


def scale(key: str) -> Scale:
    try:
        return SCALES[key]
    except KeyError:
        raise InputError(f"Unknown scale {key!r}; the scales are: {', '.join(SCALES)}.") from None


# -- reading a score -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ParsedScore:
    """A model's answer read on a scale: the value, or None with the reason; the raw answer is always kept."""

    value: float | None
    raw: str
    problem: str | None = None


NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
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
}
NO_ANSWER = re.compile(r"^\W*(n/?a|none|null|unknown|nan|not applicable|no score|-)?\W*$", re.I)
NUM = r"[-+−]?\d+(?:\.\d+)?"
# A first line that names the answer ("Answer: 4", "**Score:** 4/5", "Final rating = Agree").
LABELLED = re.compile(
    r"^[\W_]*(?:final\s+)?(?:answer|score|rating|evaluation)[\W_]*?[:=][\W_]*([^\n]+?)[\W_]*$", re.I | re.M
)


def _words_to_numbers(text: str) -> str:
    def repl(m: re.Match) -> str:
        sign = "-" if m.group(1) else ""
        return f"{sign}{NUMBER_WORDS[m.group(2).lower()]}"

    words = "|".join(NUMBER_WORDS)
    return re.sub(rf"\b(minus |negative )?({words})\b", repl, text, flags=re.I)


def _read_labels(text: str, sc: Scale) -> ParsedScore:
    low = text.lower()
    found: set[int] = set()
    spans: list[tuple[int, int]] = []
    # longest labels first, so "Strongly Agree" is not also read as "Agree"
    for i, lab in sorted(enumerate(sc.labels), key=lambda p: -len(p[1])):
        for m in re.finditer(rf"\b{re.escape(lab.lower())}\b", low):
            if any(a <= m.start() < b for a, b in spans):
                continue
            spans.append((m.start(), m.end()))
            found.add(i)
    if len(found) == 1:
        return ParsedScore(sc.lo + found.pop(), text)
    if len(found) > 1:
        names = ", ".join(sc.labels[i] for i in sorted(found))
        return ParsedScore(None, text, f"more than one option in the answer ({names})")
    return ParsedScore(None, text, f"no option of the scale ({sc.options}) in the answer")


def parse_score(answer: Any, sc: Scale) -> ParsedScore:
    """Read an answer on a scale; out of range, several candidates or no score give None with the reason."""
    raw = answer if isinstance(answer, str) else json.dumps(answer) if answer is not None else ""
    text = raw.strip()
    if isinstance(answer, bool):
        return ParsedScore(None, raw, "a true/false answer is not a score")
    if NO_ANSWER.match(text):
        return ParsedScore(None, raw, "no score in the answer" if text else "empty answer")
    labelled = LABELLED.match(text)
    if labelled and text[labelled.end() :].strip():
        # "Answer: 2" then an explanation with numbers of its own: the labelled line is the answer
        first = parse_score(labelled.group(1), sc)
        return ParsedScore(first.value, raw, first.problem)
    if sc.labels:
        return _read_labels(text, sc)
    t = _words_to_numbers(text.replace("−", "-"))
    # "on a scale of 1-5", "(1-10)": the scale's own range is not the score
    lo, hi = f"{sc.lo:g}", f"{sc.hi:g}"
    # a full stop after a number ends the sentence ("The answer is 2."); a dot and a digit would continue it
    end = r"(?!\w|\.\d)"
    t = re.sub(rf"(?<![\d.]){re.escape(lo)}\s*(?:-|–|to)\s*{re.escape(hi)}{end}", " ", t)
    number = rf"(?<![\w.]){NUM}{end}"
    fracs = list(re.finditer(rf"(?<![\w.])({NUM})\s*(?:/|out of)\s*({NUM}){end}", t, flags=re.I))
    frac = (
        fracs[0]
        if len(fracs) == 1 and not re.search(number, t[: fracs[0].start()] + " " + t[fracs[0].end() :])
        else None
    )
    if frac:
        num, den = float(frac.group(1)), float(frac.group(2))
        if den != sc.hi:
            return ParsedScore(None, raw, f"the answer is on another scale ({frac.group(1)}/{frac.group(2)})")
        values = [num]
    else:
        values = sorted({float(v) for v in re.findall(number, t)})
    if not values:
        return ParsedScore(None, raw, "no number in the answer")
    if len(values) > 1:
        return ParsedScore(
            None, raw, "more than one number in the answer (" + ", ".join(f"{v:g}" for v in values) + ")"
        )
    v = values[0]
    if not sc.lo <= v <= sc.hi:
        return ParsedScore(None, raw, f"{v:g} is outside the scale ({sc.options})")
    return ParsedScore(v, raw)


def answer_of(data: Any) -> str:
    """The answer inside the structured reply {"score": ...} (or a bare value), as text; never raises on a value."""
    if isinstance(data, dict):
        for key in ("score", "answer", "rating", "evaluation"):
            if key in data:
                v = data[key]
                return v if isinstance(v, str) else json.dumps(v)
        if len(data) == 1:
            v = next(iter(data.values()))
            return v if isinstance(v, str) else json.dumps(v)
        raise ValueError("no 'score' field in the answer")
    if isinstance(data, str | int | float) and not isinstance(data, bool):
        return data if isinstance(data, str) else json.dumps(data)
    raise ValueError("the answer is not a score")


SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": ["string", "number"]}},
    "required": ["score"],
}
