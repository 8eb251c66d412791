"""ConsEval: how consistent is an LLM evaluator? Self-consistency, inter-consistency and accuracy.

The study of the ConsEval paper: each model rates query/response pairs under a criterion (with no, a short or
a long definition) on the scales of Table 2, with the Table 1 prompt (or Table 6's few-shot prompt for
distilled in-context learning); the plain reply after "Answer:" is read (structured output is an option).
From the ratings:

- Self-consistency (SC): Krippendorff's alpha across the n samples (temperature 1.0) of each item, at the
  level of the scale (interval for numeric scales, ordinal for the Likert scale, nominal for binary).
- Inter-consistency (IC): alpha between the scores the same model gives on different scales (the four cases
  of Table 4), every scale mapped onto [0, 1] (see `Scale.to_unit`), at the interval level, apart for the
  greedy answers, the sampled ones and SCE (Figure 3). GS, greedy against sampled on one scale, is an extra.
- SCE: the mean of the n samples as the score. dICL: k examples from the oracles (endpoints, pooled; human
  ratings; or scores imported with the items), random or scale-matched, in the Table 6 template, drawn from
  the 80% of an 8:2 split of the instances (section 7.1) while results are reported on the 20%.
- Accuracy: Pearson r between the model's score and each oracle's, both mapped onto [0, 1]; Table 3 reports
  it on the 5-P scale.

A score outside the scale or that cannot be read is stored as missing with the raw answer, never coerced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.cache import BufferedSqlCache
from db.engine import insert_ignore
from db.models import (
    ConsevalHumanRating,
    ConsevalItem,
    ConsevalRater,
    ConsevalRating,
    ConsevalStudy,
    ConsevalStudyPublic,
    utcnow,
)
from services import stats
from services.config import PROJECT_ROOT, BackendConfig, backend_from_record, get_settings
from services.jobs import runner as jobrunner
from services.jobs.runner import JobKind, JobTable
from services.llm import LLMClient, UsageLedger, get_client
from services.prompts import conseval as prompts
from services.redact import redact_url
from services.text import InputError, read_records

log = logging.getLogger(__name__)

SAMPLES_FILE = PROJECT_ROOT / "samples" / "conseval.json"


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
GRANULARITIES = ("none", "short", "long")
CRITERIA = tuple(prompts.DEFINITIONS)
METHODS = {"base": "Base prompt", "dicl_r": "dICL (random)", "dicl_sm": "dICL (scale-matched)"}
ORACLES = {
    "none": "No oracle",
    "endpoint": "A second endpoint (model)",
    "humans": "Human ratings (Rate page)",
    "imported": "Scores imported with the items",
}
ANSWER_FORMATS = {
    "plain": "Plain reply after 'Answer:', read by the score parser (the paper, Table 1)",
    "structured": 'Structured output {"score": ...} (constrained decoding; not the paper\'s, changes the sampling)',
}
SPLITS = {
    "8:2": "8:2 split of the instances (paper, section 7.1): dICL examples from the 80%, results on the 20%",
    "leave-one-out": "Every item scored; dICL examples from the other items (more results from few items)",
}
TEST_SHARE = 0.2
SAMPLE_TEMPERATURE = 1.0
GREEDY = -1
# Figure 3 compares decoding strategies: IC of the greedy answers and IC of the sampled ones, apart.
DECODINGS = {"greedy": "greedy (temperature 0)", "sampled": "sampled (temperature 1.0)", "sce": "SCE (mean of samples)"}
PAPER_ACCURACY_SCALE = "5-P"  # Table 3: Pearson r "with Interval Scale 1 to 5"


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
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
}  # fmt: skip
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


# -- the study definition ------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """A model in a study: the embedded model or an OpenAI-compatible endpoint (its key comes from the environment)."""

    label: str
    kind: str = "embedded"
    base_url: str | None = None
    model: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", redact_url(self.base_url))  # stored with the study: no credentials

    @classmethod
    def of(cls, backend: BackendConfig, label: str | None = None) -> ModelSpec:
        name = label or (backend.model if not backend.is_embedded else f"{backend.model} (embedded)")
        return cls(label=name, kind=backend.kind, base_url=backend.base_url, model=backend.model)

    def backend(self, *, concurrency: int = 4, timeout: float | None = None) -> BackendConfig:
        s = get_settings()
        return backend_from_record(
            self.kind, base_url=self.base_url, model=self.model, concurrency=concurrency,
            timeout=timeout or s.llm_timeout, max_retries=s.llm_max_retries,
        )  # fmt: skip


@dataclass
class StudyConfig:
    criteria: list[str]
    scales: list[str]
    granularities: list[str] = field(default_factory=lambda: list(GRANULARITIES))
    models: list[ModelSpec] = field(default_factory=list)
    definitions: dict[str, dict[str, str]] = field(default_factory=dict)  # criterion -> {short, long}
    n_samples: int = 5
    greedy: bool = True
    methods: list[str] = field(default_factory=lambda: ["base"])
    k: int = 5
    oracle: str = "none"
    oracle_model: ModelSpec | None = None  # the first oracle endpoint (kept for studies saved with one)
    oracle_models: list[ModelSpec] = field(default_factory=list)  # every oracle endpoint; examples are pooled
    answer_format: str = "plain"
    split: str = "8:2"
    seed: int = 0
    n_boot: int = 1000
    max_tokens: int = 64
    concurrency: int = 4

    def validate(self) -> None:
        """Raise InputError with what to change when the study cannot run as set up."""
        if not self.criteria:
            raise InputError("Pick at least one criterion.")
        if not self.scales:
            raise InputError("Pick at least one scale.")
        for key in self.scales:
            scale(key)
        bad = [g for g in self.granularities if g not in GRANULARITIES]
        if bad or not self.granularities:
            raise InputError(f"Definitions must be some of {', '.join(GRANULARITIES)}.")
        if not self.models:
            raise InputError("Pick at least one model.")
        if len({m.label for m in self.models}) != len(self.models):
            raise InputError("Two models have the same name; give each a distinct name.")
        if self.n_samples < 0 or self.n_samples > 50:
            raise InputError("Samples n must be between 0 and 50.")
        if self.n_samples == 1:
            raise InputError("Self-consistency needs n >= 2 samples (or 0 to skip sampling).")
        if not self.greedy and self.n_samples == 0:
            raise InputError("Ask for greedy scores, samples, or both.")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise InputError(f"Methods must be some of {', '.join(METHODS)}.")
        if self.oracle not in ORACLES:
            raise InputError(f"The oracle must be one of {', '.join(ORACLES)}.")
        if self.answer_format not in ANSWER_FORMATS:
            raise InputError(f"The answer format must be one of {', '.join(ANSWER_FORMATS)}.")
        if self.split not in SPLITS:
            raise InputError(f"The split must be one of {', '.join(SPLITS)}.")
        if self.oracle == "endpoint" and not self.oracles():
            raise InputError("Name the oracle endpoint (base URL and model).")
        if len({o.label for o in self.oracles()}) != len(self.oracles()):
            raise InputError("Two oracle endpoints have the same name; give each a distinct name.")
        if any(m.startswith("dicl") for m in self.methods) and self.oracle == "none":
            raise InputError(
                "Distilled in-context learning needs an oracle: a second endpoint, human ratings or imported scores."
            )
        if self.k < 1:
            raise InputError("k (examples for dICL) must be 1 or more.")
        for g in self.granularities:
            if g == "none":
                continue
            missing = [c for c in self.criteria if not self.definition(c, g)]
            if missing:
                raise InputError(f"No {g} definition for {', '.join(missing)}; write one or leave out '{g}'.")

    def definition(self, criterion: str, granularity: str) -> str:
        if granularity == "none":
            return ""
        own = self.definitions.get(criterion, {}).get(granularity)
        return own if own is not None else prompts.DEFINITIONS.get(criterion, {}).get(granularity, "")

    def oracles(self) -> list[ModelSpec]:
        """The oracle endpoints (none unless the oracle is 'endpoint')."""
        if self.oracle != "endpoint":
            return []
        return list(self.oracle_models) or ([self.oracle_model] if self.oracle_model else [])

    def oracle_rater(self, spec: ModelSpec) -> str:
        """The rater name of an oracle endpoint's answers ('oracle' when there is one, as studies always had)."""
        return ORACLE_RATER if len(self.oracles()) <= 1 else f"{ORACLE_RATER}:{spec.label}"

    def uses_split(self) -> bool:
        """The 8:2 split applies when examples are drawn (dICL): every method is then reported on the 20%."""
        return self.split == "8:2" and any(m.startswith("dicl") for m in self.methods)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StudyConfig:
        d = dict(d)
        d["models"] = [ModelSpec(**m) for m in d.get("models", [])]
        if d.get("oracle_model"):
            d["oracle_model"] = ModelSpec(**d["oracle_model"])
        d["oracle_models"] = [ModelSpec(**m) for m in d.get("oracle_models") or []]
        # Studies saved before these options were run with structured output and leave-one-out examples.
        d.setdefault("answer_format", "structured")
        d.setdefault("split", "leave-one-out")
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


ORACLE_RATER = "oracle"


@dataclass(frozen=True)
class Call:
    """One planned model answer."""

    item_id: int
    rater: str
    method: str
    granularity: str
    scale: str
    sample: int

    @property
    def key(self) -> tuple:
        return (self.item_id, self.rater, self.method, self.granularity, self.scale, self.sample)


def test_instances(cfg: StudyConfig, items: Iterable[tuple[int, str]]) -> set[tuple[int, str]] | None:
    """The (item, definition) instances results are reported on under the 8:2 split (None: no split).

    Section 7.1: instances are separated per criterion granularity, then split 8:2 per criterion; the 20%
    is drawn with the study's seed from each criterion's items in their order, so it does not depend on ids."""
    if not cfg.uses_split():
        return None
    by_crit: dict[str, list[int]] = {}
    for item_id, crit in items:
        by_crit.setdefault(crit, []).append(item_id)
    test: set[tuple[int, str]] = set()
    for crit, ids in by_crit.items():
        instances = [(pos, g) for pos in range(len(ids)) for g in cfg.granularities]
        random.Random(f"{cfg.seed}|{crit}").shuffle(instances)
        n_test = max(1, round(TEST_SHARE * len(instances)))
        test |= {(ids[pos], g) for pos, g in instances[:n_test]}
    return test


def plan_calls(
    cfg: StudyConfig, item_ids: Iterable[int], test: set[tuple[int, str]] | None = None
) -> tuple[list[Call], list[Call]]:
    """The oracles' calls (greedy, base prompt) and the models' calls (on the test instances when split)."""
    ids = list(item_ids)
    samples = ([GREEDY] if cfg.greedy else []) + list(range(cfg.n_samples))
    oracle = [
        Call(i, cfg.oracle_rater(o), "oracle", g, s, GREEDY)
        for o in cfg.oracles()
        for g in cfg.granularities
        for s in cfg.scales
        for i in ids
    ]
    calls = [
        Call(i, m.label, meth, g, s, smp)
        for m in cfg.models
        for meth in cfg.methods
        for g in cfg.granularities
        for s in cfg.scales
        for i in ids
        if test is None or (i, g) in test
        for smp in samples
    ]
    return oracle, calls


def plan_for_items(cfg: StudyConfig, items: list[ItemIn]) -> tuple[list[Call], list[Call]]:
    """The calls a study of these items will make (its items numbered in order, as when saved)."""
    return plan_calls(cfg, range(len(items)), test_instances(cfg, enumerate(it.criterion for it in items)))


def endpoint_lines(text: str, *, what: str = "Endpoint") -> list[ModelSpec]:
    """OpenAI-compatible endpoints written one per line as `name | base URL | model`; InputError says which line."""
    out = []
    for n, line in enumerate([ln for ln in (text or "").splitlines() if ln.strip()], 1):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or not all(parts):
            raise InputError(f"{what} line {n} must read `name | base URL | model`.")
        out.append(ModelSpec(label=parts[0], kind="openai", base_url=parts[1].rstrip("/"), model=parts[2]))
    return out


# -- items ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ItemIn:
    criterion: str
    query: str
    response: str
    source_id: str = ""
    oracle_score: float | None = None
    oracle_scale: str | None = None
    # more imported oracles (columns `score:NAME`), on `oracle_scale`: (name, score) pairs
    more_scores: tuple[tuple[str, float], ...] = ()


def load_sample_items() -> dict[str, list[dict[str, Any]]]:
    """The bundled items per criterion (written for the app)."""
    return json.loads(SAMPLES_FILE.read_text(encoding="utf-8"))


def sample_items(criteria: Iterable[str], per_criterion: int | None = None) -> list[ItemIn]:
    """Bundled items of these criteria (the first `per_criterion` of each)."""
    data = load_sample_items()
    out: list[ItemIn] = []
    for c in criteria:
        rows = data.get(c, [])
        if not rows:
            raise InputError(f"No bundled items for {c!r}; upload items for it (JSONL or CSV).")
        for r in rows[: per_criterion or None]:
            out.append(ItemIn(c, r["query"], r["response"], r.get("id", "")))
    return out


def read_items(
    data: bytes | str, filename: str, *, criteria: list[str], score_scale: str | None = None
) -> list[ItemIn]:
    """Items from JSONL or CSV with `query`, `response`, optional `criterion`, optional `score` (or `human_score`,
    `oracle_score`) on `score_scale`, and optional `score:NAME` columns, one per further oracle (e.g. `score:gpt-4`,
    `score:gemini`). A row without a criterion goes to every criterion of the study."""
    rows = read_records(data, filename)
    if not rows:
        raise InputError(f"{filename}: no rows.")
    missing = [c for c in ("query", "response") if c not in rows[0]]
    if missing:
        raise InputError(f"{filename}: missing column(s) {', '.join(missing)}; need query, response.")
    sc = scale(score_scale) if score_scale else None
    out: list[ItemIn] = []
    for n, r in enumerate(rows, 1):
        q, resp = str(r.get("query") or "").strip(), str(r.get("response") or "").strip()
        if not q or not resp:
            raise InputError(f"{filename} row {n}: empty query or response.")
        raw_score = next((r[k] for k in ("score", "oracle_score", "human_score") if r.get(k) not in (None, "")), None)

        def read(raw: Any, n: int = n) -> float:
            if sc is None:
                raise InputError(f"{filename} has scores: say on which scale they are.")
            parsed = parse_score(str(raw), sc)
            if parsed.value is None:
                raise InputError(f"{filename} row {n}: score {raw!r} cannot be used on {sc.key}: {parsed.problem}.")
            return parsed.value

        value = None if raw_score is None else read(raw_score)
        more = tuple(
            (str(k).split(":", 1)[1].strip(), read(v))
            for k, v in r.items()
            if str(k).startswith("score:") and str(k).split(":", 1)[1].strip() and v not in (None, "")
        )
        crit = str(r.get("criterion") or "").strip()
        targets = [crit] if crit else criteria
        if crit and crit not in criteria:
            continue
        for c in targets:
            scored = value is not None or bool(more)
            out.append(ItemIn(c, q, resp, str(r.get("id") or n), value, sc.key if scored else None, more))
    if not out:
        raise InputError(f"{filename}: no row is for the chosen criteria ({', '.join(criteria)}).")
    return out


def limit_items(items: list[ItemIn], per_criterion: int | None) -> list[ItemIn]:
    """The first `per_criterion` items of each criterion (all when None or 0)."""
    if not per_criterion:
        return items
    seen: dict[str, int] = {}
    out = []
    for it in items:
        seen[it.criterion] = seen.get(it.criterion, 0) + 1
        if seen[it.criterion] <= per_criterion:
            out.append(it)
    return out


# -- persistence ---------------------------------------------------------------------------------
def create_study(engine: Engine, cfg: StudyConfig, items: list[ItemIn], *, name: str = "") -> int:
    """Save a study and its items, queued; InputError when the set-up cannot run."""
    cfg.validate()
    if not items:
        raise InputError("The study has no items.")
    without = [c for c in cfg.criteria if not any(it.criterion == c for it in items)]
    if without:
        raise InputError(f"No items for {', '.join(without)}.")
    if cfg.oracle == "imported" and not any(it.oracle_score is not None or it.more_scores for it in items):
        raise InputError("The oracle is 'scores imported with the items', but no item has a score.")
    oracle, calls = plan_for_items(cfg, items)
    with Session(engine) as session:
        study = ConsevalStudy(
            name=name or f"ConsEval · {', '.join(cfg.criteria)} · {len(cfg.scales)} scales",
            config=cfg.to_dict(),
            n_planned=len(oracle) + len(calls),
        )
        session.add(study)
        session.flush()
        for i, it in enumerate(items):
            row = ConsevalItem(study_id=study.id, idx=i, **{k: v for k, v in asdict(it).items() if k != "more_scores"})
            session.add(row)
            session.flush()
            for oracle_name, v in it.more_scores:  # further imported oracles: saved as that oracle's answers
                session.add(ConsevalRating(study_id=study.id, item_id=row.id, rater=f"{ORACLE_RATER}:{oracle_name}",
                                           method=IMPORTED, granularity="-", scale=it.oracle_scale, sample=GREEDY,
                                           value=v, raw=f"{v:g}"))  # fmt: skip
        session.commit()
        return study.id  # type: ignore[return-value]


def get_study(engine: Engine, study_id: int) -> ConsevalStudyPublic | None:
    with Session(engine) as session:
        s = session.get(ConsevalStudy, study_id)
        return ConsevalStudyPublic.model_validate(s, from_attributes=True) if s else None


def list_studies(engine: Engine, limit: int = 100) -> list[ConsevalStudyPublic]:
    with Session(engine) as session:
        rows = session.execute(select(ConsevalStudy).order_by(ConsevalStudy.id.desc()).limit(limit)).scalars()
        return [ConsevalStudyPublic.model_validate(s, from_attributes=True) for s in rows]


def delete_study(engine: Engine, study_id: int) -> bool:
    with Session(engine) as session:
        item_ids = select(ConsevalItem.id).where(ConsevalItem.study_id == study_id)
        rater_ids = select(ConsevalRater.id).where(ConsevalRater.study_id == study_id)
        session.execute(delete(ConsevalHumanRating).where(ConsevalHumanRating.rater_id.in_(rater_ids)))
        session.execute(delete(ConsevalHumanRating).where(ConsevalHumanRating.item_id.in_(item_ids)))
        session.execute(delete(ConsevalRater).where(ConsevalRater.study_id == study_id))
        session.execute(delete(ConsevalRating).where(ConsevalRating.study_id == study_id))
        session.execute(delete(ConsevalItem).where(ConsevalItem.study_id == study_id))
        n = session.execute(delete(ConsevalStudy).where(ConsevalStudy.id == study_id)).rowcount
        session.commit()
        return bool(n)


JOBS = JobTable(ConsevalStudy)


def request_cancel(engine: Engine, study_id: int) -> None:
    """Ask the workers to stop the study (see services.jobs.runner: cancel means the same for every job)."""
    with engine.begin() as conn:
        JOBS.request_cancel(conn, study_id)


def reopen(engine: Engine, study_id: int) -> None:
    """Queue a cancelled or failed study again; answers already saved are never asked again."""
    with Session(engine) as session:
        session.execute(
            update(ConsevalStudy)
            .where(ConsevalStudy.id == study_id)
            .values(status="queued", cancel_requested=False, error=None, finished_at=None)
        )
        session.commit()


NO_EXAMPLE = "no oracle example"
IMPORTED = "imported"  # the method of an imported oracle's saved scores


def n_without_examples(engine: Engine, study_id: int) -> int:
    """dICL answers that could not be asked for want of oracle examples (e.g. before people rated)."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).where(
                    ConsevalRating.study_id == study_id, ConsevalRating.problem.like(f"{NO_EXAMPLE}%")
                )
            ).scalar_one()
        )


def forget_without_examples(engine: Engine, study_id: int) -> int:
    """Drop the dICL answers that had no oracle example and queue the study, so they are asked again."""
    with Session(engine) as session:
        n = session.execute(
            delete(ConsevalRating).where(
                ConsevalRating.study_id == study_id, ConsevalRating.problem.like(f"{NO_EXAMPLE}%")
            )
        ).rowcount
        session.execute(
            update(ConsevalStudy)
            .where(ConsevalStudy.id == study_id)
            .values(n_done=ConsevalStudy.n_done - n, status="queued", cancel_requested=False, error=None,
                    finished_at=None)
        )  # fmt: skip
        session.commit()
        return int(n)


def items_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    with Session(engine) as session:
        rows = session.execute(
            select(ConsevalItem).where(ConsevalItem.study_id == study_id).order_by(ConsevalItem.idx)
        ).scalars()
        data = [r.model_dump() for r in rows]
    return pd.DataFrame(
        data,
        columns=[
            "id",
            "study_id",
            "idx",
            "criterion",
            "query",
            "response",
            "source_id",
            "oracle_score",
            "oracle_scale",
        ],
    )


def ratings_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    """Every model answer of a study (value NaN = missing, with raw and problem)."""
    cols = ["item_id", "rater", "method", "granularity", "scale", "sample", "value", "raw", "problem"]
    with engine.connect() as conn:
        rows = conn.execute(
            select(*[getattr(ConsevalRating, c) for c in cols]).where(ConsevalRating.study_id == study_id)
        ).all()
    df = pd.DataFrame(rows, columns=cols)
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    return df


# -- running -------------------------------------------------------------------------------------
@dataclass
class _Ctx:
    cfg: StudyConfig
    items: dict[int, ConsevalItem]
    oracle_pool: list[dict[str, Any]] = field(default_factory=list)
    test: set[tuple[int, str]] | None = None  # the 20% reported on under the 8:2 split; examples come from the rest


def _examples(ctx: _Ctx, call: Call) -> list[dict[str, str]] | None:
    """k oracle evaluations for dICL: other items of the same criterion (and definition for an endpoint oracle),
    only from the 80% under the 8:2 split, every oracle's pooled; scale-matched keeps only the target's scale.
    Seeded per call, so the prompt (and its cache entry) is stable."""
    item = ctx.items[call.item_id]
    pool = [
        p
        for p in ctx.oracle_pool
        if p["item_id"] != call.item_id
        and ctx.items[p["item_id"]].criterion == item.criterion
        and p.get("granularity") in (None, call.granularity)
        and (ctx.test is None or (p["item_id"], call.granularity) not in ctx.test)
        and (call.method != "dicl_sm" or p["scale"] == call.scale)
    ]
    if not pool:
        return None
    seed = int(
        hashlib.sha256(
            f"{ctx.cfg.seed}|{call.item_id}|{call.granularity}|{call.scale}|{call.method}".encode()
        ).hexdigest()[:8],
        16,
    )
    chosen = random.Random(seed).sample(pool, min(ctx.cfg.k, len(pool)))
    out = []
    for p in chosen:
        ex_item, sc = ctx.items[p["item_id"]], SCALES[p["scale"]]
        out.append(
            {
                "query": ex_item.query,
                "response": ex_item.response,
                "options": sc.options,
                "answer": sc.format(p["value"]),
            }
        )
    return out


def _prompt(ctx: _Ctx, call: Call) -> tuple[str | None, str]:
    item, sc = ctx.items[call.item_id], SCALES[call.scale]
    detail = ctx.cfg.definition(item.criterion, call.granularity)
    common = dict(criterion=item.criterion, detail=detail, options=sc.options, query=item.query, response=item.response)
    if call.method.startswith("dicl"):
        ex = _examples(ctx, call)
        if ex is None:
            return None, f"{NO_EXAMPLE} for this criterion" + (" on this scale" if call.method == "dicl_sm" else "")
        return prompts.render_few_shot(**common, examples=ex), prompts.FEW_SHOT_HEAD.id
    return prompts.render_rate(**common), prompts.RATE.id


def _ask(client: LLMClient, ctx: _Ctx, call: Call) -> dict[str, Any]:
    prompt, version = _prompt(ctx, call)
    row = {"item_id": call.item_id, "rater": call.rater, "method": call.method, "granularity": call.granularity,
           "scale": call.scale, "sample": call.sample}  # fmt: skip
    if prompt is None:
        return {**row, "value": None, "raw": "", "problem": version}
    greedy = call.sample == GREEDY
    common = dict(prompt_version=version, stage="conseval", sample_index=max(0, call.sample),
                  temperature=0.0 if greedy else SAMPLE_TEMPERATURE)  # fmt: skip
    messages = [{"role": "user", "content": prompt}]
    if ctx.cfg.answer_format == "structured":
        res = client.chat_json(messages, parse=answer_of, schema=SCORE_SCHEMA, **common)
    else:  # the paper's reply after "Answer:", sent once and read as written
        res = client.chat_text(messages, **common)
    if res.fatal:
        raise InputError(res.error or "the model could not be reached")
    if not res.ok:
        return {**row, "value": None, "raw": res.raw or "", "problem": res.error}
    parsed = parse_score(res.value, SCALES[call.scale])
    return {**row, "value": parsed.value, "raw": parsed.raw, "problem": parsed.problem}


def _write(engine: Engine, study_id: int, rows: list[dict[str, Any]], usage: dict[str, int], caches=()) -> bool:  # noqa: ANN001
    """Save answers (an answer saved meanwhile by another worker is kept), usage and new cache entries at once;
    True if the study's cancel was asked for."""
    with engine.begin() as conn:
        added = 0
        if rows:
            res = conn.execute(
                insert_ignore(conn, ConsevalRating.__table__), [{"study_id": study_id, **r} for r in rows]
            )
            added = res.rowcount if res.rowcount is not None and res.rowcount >= 0 else len(rows)
        for cache in caches:
            cache.flush(conn)
        return JOBS.advance(
            conn, study_id, n_done=added, calls=usage.get("calls", 0), cache_hits=usage.get("cache_hits", 0)
        )


def recover(engine: Engine) -> list[int]:
    """Studies left running by a worker that died: queued again (atomically, so one worker takes each)."""
    return JOBS.recover(engine)


def run_study(
    engine: Engine,
    study_id: int,
    *,
    backends: dict[str, BackendConfig] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ConsevalStudyPublic:
    """Ask every planned answer not yet saved (oracle first), then compute and save the results."""
    with Session(engine, expire_on_commit=False) as session:
        st = session.get(ConsevalStudy, study_id)
        if st is None:
            raise InputError(f"Study {study_id} does not exist.")
        cfg = StudyConfig.from_dict(st.config)
        items = {
            it.id: it for it in session.execute(select(ConsevalItem).where(ConsevalItem.study_id == study_id)).scalars()
        }
    # Finished, cancelled, or another worker is on it (a duplicate task): the runner does not claim it.
    jobrunner.run(engine, JOBS, study_id, lambda: _work(engine, study_id, cfg, items, backends, on_progress))
    study = get_study(engine, study_id)
    assert study is not None
    return study


def _work(engine, study_id, cfg, items, backends, on_progress) -> dict[str, Any]:  # noqa: ANN001
    """Ask a claimed study's answers not yet saved (oracle first); its results to save with it."""
    in_order = sorted(items.values(), key=lambda it: it.idx)
    ctx = _Ctx(cfg, items, test=test_instances(cfg, [(it.id, it.criterion) for it in in_order]))
    oracle_calls, model_calls = plan_calls(cfg, [it.id for it in in_order], ctx.test)
    clients: dict[str, LLMClient] = {}
    specs = {cfg.oracle_rater(o): o for o in cfg.oracles()} | {m.label: m for m in cfg.models}

    def client_for(rater: str) -> LLMClient:
        if rater not in clients:
            spec = specs[rater]
            be = (backends or {}).get(rater) or spec.backend(concurrency=cfg.concurrency)  # type: ignore[union-attr]
            be = be.with_changes(max_tokens=cfg.max_tokens)
            clients[rater] = get_client(be, cache=BufferedSqlCache(engine, be.model))
        return clients[rater]

    for phase in (oracle_calls, model_calls):
        if phase is model_calls:
            ctx.oracle_pool = _oracle_pool(engine, study_id, cfg)
        done = set(
            map(
                tuple,
                ratings_frame(engine, study_id)[
                    ["item_id", "rater", "method", "granularity", "scale", "sample"]
                ].itertuples(index=False),
            )
        )
        todo = [c for c in phase if c.key not in done]
        _run_calls(engine, study_id, todo, ctx, client_for, cfg.concurrency, on_progress)
    return {"results": analyse(engine, study_id)}


def _run_calls(engine, study_id, todo, ctx, client_for, concurrency, on_progress) -> None:  # noqa: ANN001, C901
    """Ask the calls in chunks; each chunk's answers and usage are saved before the next (resume loses little)."""
    if not todo:
        return
    lock = threading.Lock()
    buffer: list[dict[str, Any]] = []
    usage = {"calls": 0, "cache_hits": 0}
    fatal: list[InputError] = []
    done = 0

    def clients_in_use() -> list[LLMClient]:
        return [client_for(r) for r in sorted({c.rater for c in todo})]

    def one(call: Call) -> None:
        if fatal:
            return
        client = client_for(call.rater).fork(UsageLedger())  # its own ledger: this call's usage only
        try:
            row = _ask(client, ctx, call)
        except InputError as exc:
            fatal.append(exc)
            return
        u = client.ledger.summary()
        with lock:
            buffer.append(row)
            usage["calls"] += u["calls"]
            usage["cache_hits"] += u["cache_hits"]

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for i in range(0, len(todo), CHUNK):
            list(pool.map(one, todo[i : i + CHUNK]))
            with lock:
                rows, u = list(buffer), dict(usage)
                buffer.clear()
                usage.update(calls=0, cache_hits=0)
            cancelled = _write(engine, study_id, rows, u, [c.cache for c in clients_in_use()])
            done += len(rows)
            if fatal:
                raise fatal[0]
            if on_progress:
                on_progress(done, len(todo))
            if cancelled or JOBS.cancel_requested(engine, study_id):
                raise jobrunner.Cancelled


CHUNK = 40


def _oracle_pool(engine: Engine, study_id: int, cfg: StudyConfig) -> list[dict[str, Any]]:
    """The oracle's evaluations dICL draws from: {item_id, scale, value, granularity (None = any)}."""
    if cfg.oracle == "endpoint":
        df = ratings_frame(engine, study_id)
        df = df[df.rater.isin([cfg.oracle_rater(o) for o in cfg.oracles()]) & df.value.notna()]
        return [{"item_id": int(r.item_id), "scale": r.scale, "value": float(r.value), "granularity": r.granularity,
                 "oracle": r.rater} for r in df.itertuples()]  # fmt: skip
    if cfg.oracle == "humans":
        h = human_ratings_frame(engine, study_id)
        return [{"item_id": int(r.item_id), "scale": r.scale, "value": float(r.value), "granularity": None}
                for r in h.itertuples() if r.scale in SCALES]  # fmt: skip
    if cfg.oracle == "imported":
        items = items_frame(engine, study_id)
        items = items[items.oracle_score.notna()]
        more = ratings_frame(engine, study_id)
        more = more[(more.method == IMPORTED) & more.value.notna()]
        return [{"item_id": int(r.id), "scale": r.oracle_scale, "value": float(r.oracle_score), "granularity": None}
                for r in items.itertuples()] + [
                {"item_id": int(r.item_id), "scale": r.scale, "value": float(r.value), "granularity": None,
                 "oracle": r.rater} for r in more.itertuples()]  # fmt: skip
    return []


# -- analysis ------------------------------------------------------------------------------------
def _alpha_row(kind: str, matrix: np.ndarray, level: str, cfg: StudyConfig, **keys: Any) -> dict[str, Any]:
    res = stats.krippendorff_alpha(matrix, level, n_boot=cfg.n_boot, seed=cfg.seed)  # type: ignore[arg-type]
    return {"kind": kind, "stat": "alpha", "value": res.alpha, "ci_low": res.ci_low, "ci_high": res.ci_high,
            "n": res.n_pairable, "n_raters": res.n_raters, "level": level, "note": res.note, **keys}  # fmt: skip


def _empty_row(kind: str, note: str, **keys: Any) -> dict[str, Any]:
    return {"kind": kind, "stat": "alpha", "value": None, "ci_low": None, "ci_high": None, "n": 0, "n_raters": 0,
            "level": None, "note": note, **keys}  # fmt: skip


def score_table(r: pd.DataFrame, mode: str) -> pd.Series:
    """The scores of one decoding: per (item, scale) the greedy answer ('greedy') or the mean of the samples
    ('sce'; missing answers left out, all missing gives NaN); per (item, sample, scale) every sampled answer
    ('sampled'). 'single' (results saved before the decodings were apart): the greedy answer, else the first."""
    if mode == "sce":
        s = r[r["sample"] >= 0]
        return s.groupby(["item_id", "scale"])["value"].mean()
    if mode == "sampled":
        return r[r["sample"] >= 0].set_index(["item_id", "sample", "scale"])["value"]
    if mode == "greedy":
        return r[r["sample"] == GREEDY].set_index(["item_id", "scale"])["value"]
    first = r.sort_values("sample").drop_duplicates(["item_id", "scale"], keep="first")
    return first.set_index(["item_id", "scale"])["value"]


def _mapped(scores: pd.Series) -> pd.Series:
    return pd.Series(
        [SCALES[k[-1]].to_unit(v) if pd.notna(v) else np.nan for k, v in scores.items()],
        index=scores.index,
        dtype=float,
    )


def analyse(engine: Engine, study_id: int) -> dict[str, Any]:
    """Every alpha and correlation of a study, as rows for tables and figures (JSON-ready)."""
    st = get_study(engine, study_id)
    assert st is not None
    cfg = StudyConfig.from_dict(st.config)
    items = items_frame(engine, study_id)
    ratings = ratings_frame(engine, study_id)
    humans = human_ratings_frame(engine, study_id)
    return {"rows": compute_rows(cfg, items, ratings, humans), "missing": missing_summary(ratings)}


def missing_summary(ratings: pd.DataFrame) -> dict[str, Any]:
    ratings = ratings[ratings.method != IMPORTED]
    miss = ratings[ratings.value.isna()]
    examples = miss.head(20)[["rater", "scale", "raw", "problem"]].to_dict("records")
    return {"answers": int(len(ratings)), "missing": int(len(miss)), "examples": examples}


def compute_rows(
    cfg: StudyConfig, items: pd.DataFrame, ratings: pd.DataFrame, humans: pd.DataFrame
) -> list[dict[str, Any]]:
    """SC, IC1-4 (greedy, sampled, SCE apart), GS (extra) and accuracy per oracle, per model, method, criterion and
    definition (on the 20% under the 8:2 split); human agreement per criterion and scale."""
    rows: list[dict[str, Any]] = []
    items = items.sort_values("idx")
    crit_of = dict(zip(items.id, items.criterion, strict=False))
    ratings = ratings.assign(criterion=ratings.item_id.map(crit_of))
    oracles = _oracle_scores(cfg, items, ratings, humans)
    test = test_instances(cfg, zip(items.id, items.criterion, strict=True))
    for model in [m.label for m in cfg.models]:
        for method in cfg.methods:
            for crit in cfg.criteria:
                for gran in cfg.granularities:
                    ids = [i for i in items.id[items.criterion == crit] if test is None or (i, gran) in test]
                    r = ratings[(ratings.rater == model) & (ratings.method == method) & (ratings.criterion == crit)
                                & (ratings.granularity == gran) & ratings.item_id.isin(ids)]  # fmt: skip
                    keys = dict(model=model, method=method, criterion=crit, granularity=gran)
                    rows += _scale_rows(cfg, r, ids, keys)
                    for mode in _modes(cfg):
                        scores = _mapped(score_table(r, mode)) if len(r) else pd.Series(dtype=float)
                        for case, case_scales in IC_CASES.items():
                            if not set(case_scales) <= set(cfg.scales):
                                continue
                            sampled = mode == "sampled" and len(scores)
                            units = sorted(set(scores.index.droplevel("scale"))) if sampled else ids
                            mat = np.array(
                                [[scores.get((*_unit(u), sk), np.nan) for u in units] for sk in case_scales],
                                dtype=float,
                            )
                            rows.append(
                                _alpha_row(case, mat, "interval", cfg, scale=" / ".join(case_scales), mode=mode, **keys)
                            )
                        if mode == "sampled":
                            continue  # accuracy compares one score per item: the greedy answer or SCE
                        for name, oracle in oracles.items():
                            for sk in cfg.scales:
                                rows.append(_accuracy_row(scores, oracle, ids, sk, gran, cfg, name, mode=mode, **keys))
    rows += _human_rows(cfg, items, ratings, humans)
    return [r for r in rows if r is not None]


def _modes(cfg: StudyConfig) -> list[str]:
    """The decodings a study has answers for: greedy, sampled (n >= 2) and their mean, SCE (n >= 2)."""
    out = ["greedy"] if cfg.greedy else []
    if cfg.n_samples >= 2:
        out += ["sampled", "sce"]
    elif cfg.n_samples == 1 and not cfg.greedy:
        out.append("sampled")
    return out


def _unit(u: Any) -> tuple:
    return u if isinstance(u, tuple) else (u,)


def _scale_rows(cfg: StudyConfig, r: pd.DataFrame, ids: list, keys: dict[str, Any]) -> list[dict[str, Any]]:
    """Per scale: self-consistency across the n samples, and the extra greedy-vs-sampled alpha (GS)."""
    rows = []
    for sk in cfg.scales:
        level = SCALES[sk].level
        if cfg.n_samples >= 2:
            s = r[(r.scale == sk) & (r["sample"] >= 0)]
            mat = s.pivot_table(index="sample", columns="item_id", values="value", aggfunc="first", dropna=False)
            mat = mat.reindex(index=range(cfg.n_samples), columns=ids)
            rows.append(_alpha_row("SC", mat.to_numpy(dtype=float), level, cfg, scale=sk, mode="sampled", **keys))
        if cfg.greedy and cfg.n_samples >= 1:
            g = r[(r.scale == sk) & (r["sample"].isin([GREEDY, 0]))]
            mat = g.pivot_table(index="sample", columns="item_id", values="value", aggfunc="first", dropna=False)
            mat = mat.reindex(index=[GREEDY, 0], columns=ids)
            rows.append(_alpha_row("GS", mat.to_numpy(dtype=float), level, cfg, scale=sk, mode="extra", **keys))
    return rows


def _oracle_scores(cfg: StudyConfig, items: pd.DataFrame, ratings: pd.DataFrame, humans: pd.DataFrame) -> dict:
    """Per oracle (its name): (item, scale, granularity or None) -> the oracle's score mapped onto [0, 1]."""
    out: dict[str, dict[tuple, float]] = {}
    if cfg.oracle == "endpoint":
        for spec in cfg.oracles():
            o = ratings[(ratings.rater == cfg.oracle_rater(spec)) & ratings.value.notna()]
            out[spec.label] = {(r.item_id, r.scale, r.granularity): SCALES[r.scale].to_unit(r.value)
                               for r in o.itertuples()}  # fmt: skip
    elif cfg.oracle == "humans" and len(humans):
        means = humans.groupby(["item_id", "scale"])["value"].mean()
        out["humans"] = {(item, sk, None): SCALES[sk].to_unit(v) for (item, sk), v in means.items() if sk in SCALES}
    elif cfg.oracle == "imported":
        # a score on one scale is compared, mapped onto [0, 1], with every scale
        got = {(r.id, sk, None): SCALES[r.oracle_scale].to_unit(r.oracle_score)
               for r in items[items.oracle_score.notna()].itertuples() for sk in cfg.scales}  # fmt: skip
        if got:
            out["imported"] = got
        more = ratings[(ratings.method == IMPORTED) & ratings.value.notna()]
        for rater, g in more.groupby("rater", sort=True):
            out[str(rater).split(":", 1)[1]] = {(r.item_id, sk, None): SCALES[r.scale].to_unit(r.value)
                                                for r in g.itertuples() for sk in cfg.scales}  # fmt: skip
    return out


def _accuracy_row(scores, oracle, ids, sk, gran, cfg, name, **keys) -> dict[str, Any] | None:  # noqa: ANN001
    x, y = [], []
    for i in ids:
        o = oracle.get((i, sk, gran), oracle.get((i, sk, None)))
        x.append(scores.get((i, sk), np.nan))
        y.append(np.nan if o is None else o)
    res = stats.correlation(x, y, "pearson", n_boot=cfg.n_boot, seed=cfg.seed)
    return {"kind": "ACC", "stat": "pearson", "value": res.r, "ci_low": res.ci_low, "ci_high": res.ci_high,
            "n": res.n, "n_raters": 2, "level": None, "note": res.note, "scale": sk, "oracle": name,
            **keys}  # fmt: skip


def _consensus(values: pd.Series, level: str) -> float:
    v = values.dropna()
    if v.empty:
        return np.nan
    if level == "interval":
        return float(v.mean())
    if level == "ordinal":
        return float(np.median(v))
    counts = v.value_counts()
    return float(counts.index[0]) if len(counts) == 1 or counts.iloc[0] > counts.iloc[1] else np.nan


def _human_rows(cfg: StudyConfig, items: pd.DataFrame, ratings: pd.DataFrame, humans: pd.DataFrame) -> list[dict]:
    if humans.empty:
        return []
    rows = []
    crit_of = dict(zip(items.id, items.criterion, strict=False))
    humans = humans.assign(criterion=humans.item_id.map(crit_of))
    gran = "long" if "long" in cfg.granularities else cfg.granularities[-1]
    for crit in cfg.criteria:
        ids = items.id[items.criterion == crit].tolist()
        for sk in cfg.scales:
            h = humans[(humans.criterion == crit) & (humans.scale == sk)]
            if h.empty:
                continue
            level = SCALES[sk].level
            mat = h.pivot_table(index="rater", columns="item_id", values="value", aggfunc="first").reindex(columns=ids)
            rows.append(_alpha_row("HUMAN", mat.to_numpy(dtype=float), level, cfg, model="humans", method="-",
                                   criterion=crit, granularity="-", scale=sk, mode="-"))  # fmt: skip
            cons = h.groupby("item_id")["value"].apply(lambda v, lv=level: _consensus(v, lv))
            for model in [m.label for m in cfg.models]:
                r = ratings[(ratings.rater == model) & (ratings.method == "base") & (ratings.criterion == crit)
                            & (ratings.granularity == gran) & (ratings.scale == sk)]  # fmt: skip
                single = score_table(r, "single") if len(r) else pd.Series(dtype=float)
                mat = np.array(
                    [[single.get((i, sk), np.nan) for i in ids], [cons.get(i, np.nan) for i in ids]], dtype=float
                )
                rows.append(_alpha_row("HUMAN-MODEL", mat, level, cfg, model=model, method="base", criterion=crit,
                                       granularity=gran, scale=sk, mode="single"))  # fmt: skip
    return rows


def results_frame(results: dict[str, Any] | None) -> pd.DataFrame:
    """The saved result rows as a DataFrame, with the row label of Table 5 (e.g. 'dICL (random) & SCE')."""
    cols = ["kind", "stat", "value", "ci_low", "ci_high", "n", "n_raters", "level", "note", "model", "method",
            "criterion", "granularity", "scale", "mode", "oracle"]  # fmt: skip
    df = pd.DataFrame((results or {}).get("rows", []))
    for c in cols:
        if c not in df.columns:
            df[c] = None
    if df.empty:
        return df.assign(variant=pd.Series(dtype=str))
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    # SC (across the samples) and GS sit on the method's own row, as SC does in Table 5.
    modes = ["single" if k in ("SC", "GS") else mode for k, mode in zip(df["kind"], df["mode"], strict=True)]
    df["variant"] = [variant_label(m, mode) for m, mode in zip(df["method"], modes, strict=True)]
    return df


def variant_label(method: str, mode: str) -> str:
    """Table 5's row label of a method and decoding: Base (the greedy answer), SCE, dICL_r & SCE; the IC of the
    sampled answers (Figure 3's other decoding) is its own row, e.g. 'Base (sampled)'."""
    if method not in METHODS:
        return str(method)
    base = {"base": "Base", "dicl_r": "dICL_r", "dicl_sm": "dICL_sm"}[method]
    if mode == "sce":
        return "SCE" if method == "base" else f"{base} & SCE"
    if mode == "sampled":
        return f"{base} (sampled)"
    return base


PAPER_KINDS = ["SC", "IC1", "IC2", "IC3", "IC4"]


def accuracy_scale(df: pd.DataFrame) -> str | None:
    """The scale accuracy is reported on, as Table 3: 5-P when the study has it (else none: see the extra)."""
    return PAPER_ACCURACY_SCALE if (df.kind == "ACC").any() and (df.scale == PAPER_ACCURACY_SCALE).any() else None


def model_method_matrix(df: pd.DataFrame, criterion: str) -> pd.DataFrame:
    """Table 5: rows model x method (and decoding), columns SC, IC1-IC4 (each the mean over definitions and
    scales), accuracy r per oracle on the 5-P scale as Table 3; then, labelled as extras, the accuracy averaged
    over all scales and GS."""
    d = df[(df.criterion == criterion) & df.kind.isin([*PAPER_KINDS, "GS", "ACC"])]
    if d.empty:
        return pd.DataFrame()
    d = d.assign(row=d.model + " · " + d.variant)
    table = d[d.kind.isin(PAPER_KINDS)].pivot_table(index="row", columns="kind", values="value", aggfunc="mean")
    table = table.reindex(index=sorted(set(d.row)), columns=[c for c in PAPER_KINDS if c in table.columns])
    acc = d[d.kind == "ACC"]
    oracle = acc["oracle"] if "oracle" in acc.columns else pd.Series(index=acc.index, dtype=object)
    acc = acc.assign(oracle=oracle.fillna("oracle").astype(str))
    for name, g in acc.groupby("oracle", sort=False):
        on5 = g[g.scale == PAPER_ACCURACY_SCALE]
        if len(on5):
            table[f"Accuracy r vs {name} (5-P)"] = on5.groupby("row")["value"].mean()
        table[f"Extra: accuracy r vs {name}, mean of all scales"] = g.groupby("row")["value"].mean()
    gs = d[d.kind == "GS"]
    if len(gs):
        table["Extra: GS, greedy vs sampled (not in the paper)"] = gs.groupby("row")["value"].mean()
    return table


def radar_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 4: per model and criterion, SC (mean over scales), IC (mean over cases, greedy answers) and
    accuracy (5-P when the study has it, as Table 3; mean over oracles), base method."""
    d = df[df.method == "base"]
    on = accuracy_scale(df)
    out = []
    for (model, crit), g in d.groupby(["model", "criterion"]):
        ic = g[g.kind.isin(list(IC_CASES)) & g["mode"].isin(["greedy", "single"])]
        if ic.empty:
            ic = g[g.kind.isin(list(IC_CASES)) & (g["mode"] == "sampled")]
        acc = g[(g.kind == "ACC") & g["mode"].isin(["greedy", "single"])]
        if on is not None:
            acc = acc[acc.scale == on]
        out.append({"model": model, "criterion": crit, "SC": g[g.kind == "SC"].value.mean(), "IC": ic.value.mean(),
                    "Accuracy": acc.value.mean()})  # fmt: skip
    return pd.DataFrame(out, columns=["model", "criterion", "SC", "IC", "Accuracy"])


# -- human raters --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RaterInfo:
    id: int
    study_id: int
    name: str
    token: str
    active: bool
    n_rated: int


def add_rater(engine: Engine, study_id: int, name: str) -> RaterInfo:
    name = (name or "").strip()
    if not name:
        raise InputError("Give the rater a name.")
    if len(name) > 100:
        raise InputError("A rater's name has at most 100 characters.")
    with Session(engine) as session:
        if session.get(ConsevalStudy, study_id) is None:
            raise InputError(f"Study {study_id} does not exist.")
        taken = session.execute(
            select(ConsevalRater.id).where(ConsevalRater.study_id == study_id, ConsevalRater.name == name)
        ).first()
        if taken:
            raise InputError(f"A rater named {name!r} exists already in this study.")
        r = ConsevalRater(study_id=study_id, name=name)
        session.add(r)
        session.commit()
        return RaterInfo(r.id, study_id, name, r.token, True, 0)  # type: ignore[arg-type]


def list_raters(engine: Engine, study_id: int) -> list[RaterInfo]:
    with Session(engine) as session:
        counts = dict(
            session.execute(
                select(ConsevalHumanRating.rater_id, func.count())
                .join(ConsevalRater, ConsevalRater.id == ConsevalHumanRating.rater_id)
                .where(ConsevalRater.study_id == study_id)
                .group_by(ConsevalHumanRating.rater_id)
            ).all()
        )
        rows = session.execute(
            select(ConsevalRater).where(ConsevalRater.study_id == study_id).order_by(ConsevalRater.name)
        ).scalars()
        return [
            RaterInfo(r.id, r.study_id, r.name, r.token, r.revoked_at is None, int(counts.get(r.id, 0))) for r in rows
        ]  # type: ignore[arg-type]


def rater_by_token(engine: Engine, token: str) -> RaterInfo | None:
    """The active rater whose personal link carries this token (a revoked link gives None)."""
    token = (token or "").strip()
    if not token:
        return None
    with Session(engine) as session:
        r = session.execute(select(ConsevalRater).where(ConsevalRater.token == token)).scalar_one_or_none()
        if r is None or r.revoked_at is not None:
            return None
        n = session.execute(select(func.count()).where(ConsevalHumanRating.rater_id == r.id)).scalar_one()
        return RaterInfo(r.id, r.study_id, r.name, r.token, True, int(n))  # type: ignore[arg-type]


def revoke_rater(engine: Engine, rater_id: int) -> None:
    """The rater's link stops working; their ratings stay."""
    with Session(engine) as session:
        session.execute(update(ConsevalRater).where(ConsevalRater.id == rater_id).values(revoked_at=utcnow()))
        session.commit()


def save_human_rating(engine: Engine, rater_id: int, item_id: int, scale_key: str, value: float) -> None:
    """Store (or replace) a person's score; InputError for a value off the scale or an item of another study."""
    sc = scale(scale_key)
    if value is None or not sc.lo <= float(value) <= sc.hi:
        raise InputError(f"{value!r} is not on the {sc.key} scale ({sc.options}).")
    with Session(engine) as session:
        rater = session.get(ConsevalRater, rater_id)
        item = session.get(ConsevalItem, item_id)
        if rater is None or rater.revoked_at is not None:
            raise InputError("This rater link is not valid any more.")
        if item is None or item.study_id != rater.study_id:
            raise InputError("This item is not part of the rater's study.")
        row = session.execute(
            select(ConsevalHumanRating).where(
                ConsevalHumanRating.rater_id == rater_id,
                ConsevalHumanRating.item_id == item_id,
                ConsevalHumanRating.scale == scale_key,
            )
        ).scalar_one_or_none()
        if row is None:
            row = ConsevalHumanRating(rater_id=rater_id, item_id=item_id, scale=scale_key, value=float(value))
        else:
            row.value, row.updated_at = float(value), utcnow()
        session.add(row)
        session.commit()


def human_ratings_frame(engine: Engine, study_id: int) -> pd.DataFrame:
    cols = ["rater_id", "rater", "item_id", "scale", "value"]
    with engine.connect() as conn:
        rows = conn.execute(
            select(ConsevalHumanRating.rater_id, ConsevalRater.name, ConsevalHumanRating.item_id,
                   ConsevalHumanRating.scale, ConsevalHumanRating.value)
            .join(ConsevalRater, ConsevalRater.id == ConsevalHumanRating.rater_id)
            .where(ConsevalRater.study_id == study_id)
        ).all()  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def refresh_results(engine: Engine, study_id: int) -> None:
    """Recompute a finished study's results (e.g. after new human ratings)."""
    results = analyse(engine, study_id)
    with Session(engine) as session:
        session.execute(update(ConsevalStudy).where(ConsevalStudy.id == study_id).values(results=results))
        session.commit()


jobrunner.register(JobKind("conseval", process=run_study, recover=recover))
