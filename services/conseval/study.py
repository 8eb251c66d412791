"""A study's definition: its options, the models, the config, and the calls it plans (with the 8:2 split)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from db.redact import redact_url
from services.config import BackendConfig, backend_from_record, get_settings
from services.conseval.scales import scale
from services.prompts import conseval as prompts
from services.text import InputError

if TYPE_CHECKING:
    from services.conseval.items import ItemIn
    from services.estimates import Spent

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
            self.kind,
            base_url=self.base_url,
            model=self.model,
            concurrency=concurrency,
            timeout=timeout or s.llm_timeout,
            max_retries=s.llm_max_retries,
        )


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

    Section 7.1: the dataset is split 8:2 per criterion, then its instances are separated per criterion
    granularity. The split is by item, so every definition of a query/response pair falls on the same side: a
    pair never serves as a dICL example (with its oracle score) while being rated in the 20% under another
    definition. The 20% is drawn with the study's seed from each criterion's items in their order, so it does
    not depend on ids."""
    if not cfg.uses_split():
        return None
    by_crit: dict[str, list[int]] = {}
    for item_id, crit in items:
        by_crit.setdefault(crit, []).append(item_id)
    test: set[tuple[int, str]] = set()
    for crit, ids in by_crit.items():
        order = list(range(len(ids)))
        random.Random(f"{cfg.seed}|{crit}").shuffle(order)
        n_test = max(1, round(TEST_SHARE * len(ids)))
        test |= {(ids[pos], g) for pos in order[:n_test] for g in cfg.granularities}
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


NO_EXAMPLE = "no oracle example"
IMPORTED = "imported"  # the method of an imported oracle's saved scores


def study_spent(study: Any, prices: BackendConfig) -> Spent:
    """What a study actually used: its tokens at the prices set on Settings (`prices`: the backend in use), when
    every call went to that one model; with several models the prices set (one pair) cannot price them."""
    from services import estimates

    cfg = StudyConfig.from_dict(study.config)
    specs = {(m.kind, m.model, m.base_url) for m in [*cfg.models, *cfg.oracles()]}
    tokens = dict(input_tokens=study.prompt_tokens, output_tokens=study.completion_tokens)
    if len(specs) != 1:
        if all(k == "embedded" for k, _, _ in specs):
            return estimates.Spent(**tokens, price_in=None, price_out=None, local=True)
        return estimates.Spent(**tokens, price_in=None, price_out=None, other_model=f"one of {len(specs)} models")
    kind, model, base_url = specs.pop()
    return estimates.spent(prices, model=model, base_url=base_url, kind=kind, **tokens)
