"""DHP: discernment of LLM evaluators by hierarchical perturbation (the statistics, the scoring, the runs).

Statistics (section 4.3 of the paper):

* Per perturbation i and metric m, a one-sided Wilcoxon signed-rank test (scipy.stats.wilcoxon,
  alternative="greater") of the original scores against the perturbed ones, paired by item. Zero
  differences (the evaluator gave both texts the same mean score) are dropped before ranking
  (zero_method="wilcox", scipy's default and what the paper's scipy call did); their number is reported as
  `n_ties`. When every pair is tied there is no evidence of a difference and p = 1.
* The combined p-value is Wilson's (2019) weighted harmonic mean p-value, p = 1 / sum_j (w_j / p_j) with
  weights that sum to 1. Without expert weights w_j = 1/M, so p = M / sum_j (1 / p_j); with expert weights
  w_j = EW_j / sum EW. The paper writes the unweighted form as 1 / sum_j (1 / p_j), which is Wilson's
  HMP with every weight 1 (summing to M, not 1): it is M times smaller than the HMP, and inconsistent with
  its own weighted form, where EW sums to 1. Using weights that sum to 1 in both keeps p valid (Wilson's
  result needs sum w = 1), makes D and D_EW comparable (equal p_j give p = p_j in both), and matches the
  paper's weighted formula exactly. The paper's literal unweighted value is kept as `p_paper` and reported
  as D_paper = log_0.05(p_paper) (= D + ln M / ln 20 while p < 1), with its D_avg and D_min, so a figure
  can be set beside Figure 4. With expert weights both readings agree (EW sums to 1).
* D = log_0.05(p) = ln p / ln 0.05, so D = 1 at p = 0.05 and D > 1 is significant. D_avg is the mean of D
  over perturbations with each level (character, word, sentence) weighted equally and perturbations
  equally within a level; D_min is the minimum. The same for D_EW. When the set lacks a level the task's
  Table 1 row has (e.g. no LLM-based perturbation because no model was set), D_avg is left empty with the
  reason rather than averaged over the levels that remain, which would not be the paper's D_avg.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, field_validator
from scipy import stats as sps
from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.cache import SqlCache
from db.engine import dialect_insert, get_session
from db.models import (
    DhpRun,
    DhpRunPublic,
    DhpScore,
    DhpSet,
    DhpSetPublic,
    DhpTask,
    DhpText,
    utcnow,
)
from services.config import BackendConfig, backend_from_record
from services.dhp import perturb
from services.dhp.perturb import Item, TaskSpec
from services.errors import InputError
from services.jobs import runner as jobrunner
from services.jobs.runner import JobKind, JobTable
from services.llm import LLMClient, get_client
from services.prompts import dhp as prompts

log = logging.getLogger(__name__)

ALPHA = 0.05
D_FORMULA = "D = log_0.05(p), p = M / sum_j (1/p_j) (Wilson's HMP, weights 1/M summing to 1)"
D_PAPER_FORMULA = "D_paper = log_0.05(p_paper), p_paper = 1 / sum_j (1/p_j) (section 4.3.2 as printed; M times smaller)"
ORIGINAL = "original"
ZERO_METHOD = "wilcox"
ZERO_METHOD_NOTE = (
    "Zero differences (the same mean score for the original and the perturbed text) are dropped before "
    "ranking (scipy's zero_method='wilcox'); their number is shown as ties. All pairs tied: p = 1."
)
P_FLOOR = np.finfo(float).tiny  # p = 0 (underflow) would make D infinite
SCORE_COLUMNS = ("item_id", "perturbation", "level", "metric", "original", "perturbed")


# -- statistics ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WilcoxonResult:
    """One-sided Wilcoxon signed-rank test of original > perturbed on one metric."""

    metric: str
    n_pairs: int  # pairs with both scores
    n_ties: int  # pairs with a zero difference (dropped before ranking)
    statistic: float | None  # W+ (sum of the ranks of positive differences)
    p_value: float
    mean_original: float | None
    mean_perturbed: float | None
    n_missing: int = 0  # pairs left out because a score is missing
    zero_method: str = ZERO_METHOD


def wilcoxon_greater(
    original: Sequence[float], perturbed: Sequence[float], *, metric: str = "", zero_method: str = ZERO_METHOD
) -> WilcoxonResult:
    """The paired one-sided test; pairs with a missing score are left out and counted."""
    a = np.asarray(original, dtype=float)
    b = np.asarray(perturbed, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"original and perturbed differ in length ({a.size} vs {b.size})")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    d = a - b
    n_ties = int(np.sum(d == 0))
    mean_a = float(a.mean()) if a.size else None
    mean_b = float(b.mean()) if b.size else None
    common = dict(metric=metric, n_pairs=int(a.size), n_ties=n_ties, mean_original=mean_a, mean_perturbed=mean_b,
                  n_missing=int((~ok).sum()), zero_method=zero_method)  # fmt: skip
    if a.size == 0 or (zero_method == "wilcox" and n_ties == a.size) or not np.any(d):
        return WilcoxonResult(statistic=None, p_value=1.0, **common)
    res = sps.wilcoxon(a, b, alternative="greater", zero_method=zero_method)
    p = float(res.pvalue)
    if not math.isfinite(p):
        p = 1.0
    return WilcoxonResult(statistic=float(res.statistic), p_value=p, **common)


def normalise_weights(weights: Mapping[str, float] | None, metrics: Sequence[str]) -> dict[str, float] | None:
    """Weights over `metrics` summing to 1 (None: equal weights); a metric without a weight gets 0.

    Returns None when the weights give nothing to the metrics at hand (all zero or none of them named)."""
    if weights is None:
        return {m: 1.0 / len(metrics) for m in metrics} if metrics else None
    raw = {m: float(weights.get(m, 0.0) or 0.0) for m in metrics}
    if any(v < 0 or not math.isfinite(v) for v in raw.values()):
        raise ValueError("expert weights must be finite and 0 or more")
    total = sum(raw.values())
    if total <= 0:
        return None
    return {m: v / total for m, v in raw.items()}


def harmonic_mean_p(p_values: Mapping[str, float], weights: Mapping[str, float] | None = None) -> float | None:
    """Wilson's weighted HMP, 1 / sum_j (w_j / p_j), with the weights normalised to sum to 1."""
    metrics = list(p_values)
    w = normalise_weights(weights, metrics)
    if w is None:
        return None
    total = sum(w[m] / max(float(p_values[m]), P_FLOOR) for m in metrics if w[m] > 0)
    return min(1.0, 1.0 / total) if total > 0 else None


def paper_literal_p(p_values: Mapping[str, float]) -> float | None:
    """The paper's unweighted formula as printed, 1 / sum_j (1 / p_j) (shown for comparison only)."""
    if not p_values:
        return None
    return 1.0 / sum(1.0 / max(float(p), P_FLOOR) for p in p_values.values())


def discernment(p: float | None) -> float | None:
    """D = log_0.05(p): 1 at p = 0.05, higher is better."""
    if p is None:
        return None
    return math.log(max(p, P_FLOOR)) / math.log(ALPHA) + 0.0  # + 0.0: p = 1 gives 0, not -0


@dataclass(frozen=True)
class PerturbationResult:
    perturbation: str
    level: str
    tests: tuple[WilcoxonResult, ...]
    p: float | None
    p_ew: float | None
    p_paper: float | None
    d: float | None
    d_ew: float | None
    weights: dict[str, float] | None = None  # the normalised expert weights used (None: none given)
    d_paper: float | None = None  # log_0.05(p_paper): the paper's unweighted scale (Figure 4)

    def p_by_metric(self) -> dict[str, float]:
        return {t.metric: t.p_value for t in self.tests}


@dataclass(frozen=True)
class DiscernmentResult:
    """Discernment of one evaluator on one set: per perturbation, and overall (D_avg, D_min)."""

    model: str
    perturbations: tuple[PerturbationResult, ...]
    d_avg: float | None
    d_min: float | None
    d_ew_avg: float | None
    d_ew_min: float | None
    level_weights: dict[str, float] = field(default_factory=dict)  # weight of each perturbation in D_avg
    zero_method_note: str = ZERO_METHOD_NOTE
    d_paper_avg: float | None = None
    d_paper_min: float | None = None
    avg_note: str | None = None  # why D_avg is empty, or how it differs from the paper's


def level_weights(levels: Mapping[str, str]) -> dict[str, float]:
    """Each level weighs the same; perturbations share their level's weight equally (sum 1)."""
    by_level: dict[str, list[str]] = {}
    for pert, lvl in levels.items():
        by_level.setdefault(lvl, []).append(pert)
    n_levels = len(by_level)
    return {p: 1.0 / (n_levels * len(ps)) for ps in by_level.values() for p in ps}


def _weighted_avg(values: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    present = {k: v for k, v in values.items() if v is not None}
    if not present:
        return None
    # Renormalise over perturbations that have a value, so a missing one does not pull the average to 0.
    lv = {k: weights[k] for k in present}
    total = sum(lv.values())
    return sum(present[k] * lv[k] for k in present) / total


def lookup_weights(ew: Mapping[str, Mapping[str, float]] | None, perturbation: str) -> Mapping[str, float] | None:
    """The expert weights of a perturbation: by its full key ("typo:minor"), else by its kind ("typo")."""
    if not ew:
        return None
    return ew.get(perturbation) or ew.get(perturb.kind_of(perturbation))


def analyse(
    scores: pd.DataFrame,
    *,
    weights: Mapping[str, Mapping[str, float]] | None = None,
    model: str = "",
    zero_method: str = ZERO_METHOD,
    order: Sequence[str] | None = None,
    expected: Mapping[str, str] | None = None,
) -> DiscernmentResult:
    """Discernment from rows item_id, perturbation, level, metric, original, perturbed (mean scores).

    `expected` (perturbation -> level, the task's Table 1 row) lets D_avg say when the set lacks some of it."""
    missing = [c for c in SCORE_COLUMNS if c not in scores.columns]
    if missing:
        raise ValueError(f"missing column(s): {', '.join(missing)}; need {', '.join(SCORE_COLUMNS)}")
    df = scores.loc[:, list(SCORE_COLUMNS)].copy()
    df["original"] = pd.to_numeric(df["original"], errors="coerce")
    df["perturbed"] = pd.to_numeric(df["perturbed"], errors="coerce")
    dup = df.duplicated(subset=["item_id", "perturbation", "metric"], keep=False)
    if dup.any():
        row = df[dup].iloc[0]
        raise ValueError(
            f"item {row['item_id']!r} appears twice for perturbation {row['perturbation']!r} "
            f"and metric {row['metric']!r}"
        )
    perts = list(dict.fromkeys(df["perturbation"].astype(str)))
    if order:
        perts = [p for p in order if p in perts] + [p for p in perts if p not in order]
    levels: dict[str, str] = {}
    results: list[PerturbationResult] = []
    for pert, g in sorted(df.groupby("perturbation", sort=False), key=lambda kv: perts.index(str(kv[0]))):
        pert = str(pert)
        lv = g["level"].astype(str).unique()
        if len(lv) != 1:
            raise ValueError(f"perturbation {pert!r} is given more than one level: {', '.join(lv)}")
        levels[pert] = lv[0]
        tests = tuple(
            wilcoxon_greater(m["original"].to_numpy(), m["perturbed"].to_numpy(), metric=str(metric),
                             zero_method=zero_method)
            for metric, m in g.groupby("metric", sort=False)
        )  # fmt: skip
        ps = {t.metric: t.p_value for t in tests}
        ew = lookup_weights(weights, pert)
        w_norm = normalise_weights(ew, list(ps)) if ew is not None else None
        p = harmonic_mean_p(ps)
        p_ew = harmonic_mean_p(ps, ew) if ew is not None else None
        p_paper = paper_literal_p(ps)
        results.append(
            PerturbationResult(pert, lv[0], tests, p, p_ew, p_paper, discernment(p), discernment(p_ew), w_norm,
                               discernment(p_paper))
        )  # fmt: skip
    lw = level_weights(levels)
    avg_note = _avg_note(levels, expected)
    comparable = avg_note is None or not avg_note.startswith(NOT_COMPARABLE)

    def avg(attr: str) -> float | None:
        return _weighted_avg({r.perturbation: getattr(r, attr) for r in results}, lw) if comparable else None

    def low(attr: str) -> float | None:
        vals = [getattr(r, attr) for r in results if getattr(r, attr) is not None]
        return min(vals) if vals else None

    return DiscernmentResult(
        model=model,
        perturbations=tuple(results),
        d_avg=avg("d"),
        d_min=low("d"),
        d_ew_avg=avg("d_ew"),
        d_ew_min=low("d_ew"),
        level_weights=lw,
        d_paper_avg=avg("d_paper"),
        d_paper_min=low("d_paper"),
        avg_note=avg_note,
    )


NOT_COMPARABLE = "not comparable"


def _avg_note(levels: Mapping[str, str], expected: Mapping[str, str] | None) -> str | None:
    """Why D_avg is left empty (a level of the task is missing), or which perturbations it lacks; None: complete."""
    if not expected:
        return None
    lacking_levels = [lv for lv in dict.fromkeys(expected.values()) if lv not in set(levels.values())]
    if lacking_levels:
        return (
            f"{NOT_COMPARABLE}: the set has no {', '.join(lacking_levels)}-level perturbation of the task's "
            "Table 1 row, and D_avg weighs each level equally, so it is left empty (D_min and each D stand)"
        )
    lacking = [p for p in expected if p not in levels]
    if lacking:
        return f"every level is present, but without {', '.join(lacking)}: each level's mean is over the rest"
    return None


def result_record(res: DiscernmentResult) -> dict[str, Any]:
    """The JSON form of a result (cli.py dhp stats / run)."""
    return {
        "model": res.model,
        "formula": {
            "p": "Wilson's harmonic mean p-value with equal weights 1/M: p = M / sum_j (1/p_j)",
            "p_ew": "weighted harmonic mean p-value, weights normalised to sum 1: p = 1 / sum_j (w_j/p_j)",
            "p_paper": "the paper's unweighted formula as printed: 1 / sum_j (1/p_j) (for comparison)",
            "D": D_FORMULA,
            "D_paper": D_PAPER_FORMULA,
            "D_avg": "weighted mean of D over perturbations, each level weighted equally",
            "zero_differences": res.zero_method_note,
        },
        "perturbations": [
            {
                "perturbation": r.perturbation,
                "level": r.level,
                "p": {t.metric: t.p_value for t in r.tests},
                "tests": [
                    {
                        "metric": t.metric,
                        "n_pairs": t.n_pairs,
                        "n_ties": t.n_ties,
                        "n_missing": t.n_missing,
                        "statistic": t.statistic,
                        "p": t.p_value,
                        "mean_original": t.mean_original,
                        "mean_perturbed": t.mean_perturbed,
                    }
                    for t in r.tests
                ],  # fmt: skip
                "p_hmp": r.p,
                "p_hmp_ew": r.p_ew,
                "p_paper": r.p_paper,
                "weights": r.weights,
                "D": r.d,
                "D_paper": r.d_paper,
                "D_EW": r.d_ew,
            }
            for r in res.perturbations
        ],
        "D_avg": res.d_avg,
        "D_min": res.d_min,
        "D_paper_avg": res.d_paper_avg,
        "D_paper_min": res.d_paper_min,
        "D_EW_avg": res.d_ew_avg,
        "D_EW_min": res.d_ew_min,
        "D_avg_note": res.avg_note,
        "level_weights": res.level_weights,
    }


def results_frame(res: DiscernmentResult) -> pd.DataFrame:
    """One row per perturbation and metric: means, ties, p; and the combined p and D of the perturbation."""
    rows = []
    for r in res.perturbations:
        for t in r.tests:
            rows.append({
                "perturbation": r.perturbation, "level": r.level, "metric": t.metric, "n": t.n_pairs,
                "ties": t.n_ties, "mean original": t.mean_original, "mean perturbed": t.mean_perturbed,
                "W+": t.statistic, "p": t.p_value, "weight": (r.weights or {}).get(t.metric),
                "p (HMP)": r.p, "p (HMP, EW)": r.p_ew, "p (paper)": r.p_paper, "D": r.d, "D_paper": r.d_paper,
                "D_EW": r.d_ew,
            })  # fmt: skip
    return pd.DataFrame(rows)


def summary_frame(results: Sequence[DiscernmentResult]) -> pd.DataFrame:
    """One row per perturbation and model: D and D_EW (for the bar chart)."""
    rows = []
    for res in results:
        for r in res.perturbations:
            rows.append({"model": res.model, "perturbation": r.perturbation, "level": r.level, "D": r.d,
                         "D_paper": r.d_paper, "D_EW": r.d_ew})  # fmt: skip
        rows.append({"model": res.model, "perturbation": "D_avg", "level": "overall", "D": res.d_avg,
                     "D_paper": res.d_paper_avg, "D_EW": res.d_ew_avg})  # fmt: skip
        rows.append({"model": res.model, "perturbation": "D_min", "level": "overall", "D": res.d_min,
                     "D_paper": res.d_paper_min, "D_EW": res.d_ew_min})  # fmt: skip
    return pd.DataFrame(rows, columns=["model", "perturbation", "level", "D", "D_paper", "D_EW"])


# -- scoring ------------------------------------------------------------------------------------------
class Rating(BaseModel):
    score: float

    @field_validator("score")
    @classmethod
    def _in_range(cls, v: float) -> float:
        if not 1 <= v <= 5:
            raise ValueError(f"score {v} is not between 1 and 5")
        return float(v)


def _parse_rating(data: Any) -> Rating:
    if isinstance(data, int | float):
        data = {"score": data}
    return Rating.model_validate(data)


ANSWER_FORMATS = prompts.ANSWER_FORMATS
LEGACY_FORMAT = prompts.STRUCTURED  # runs and sets recorded before the format was a choice asked for JSON


def answer_format_of(params: Mapping[str, Any]) -> str:
    """The answer format a run or set recorded (plain unless it asked for JSON)."""
    return str(params.get("answer_format") or LEGACY_FORMAT)


def eval_prompts(task: TaskSpec, answer_format: str = "plain") -> dict[str, prompts.Prompt]:
    """The rating prompt of each metric of a task."""
    structured = answer_format == prompts.STRUCTURED
    return {
        m.name: prompts.evaluation_prompt(task.key, task.text_label, task.source_label, m.name, m.definition,
                                          structured=structured)
        for m in task.metrics
    }  # fmt: skip


def read_score(raw: str) -> tuple[float | None, str | None]:
    """A plain reply read as a score from 1 to 5 (ConsEval's reader: one number on the scale, else why not)."""
    from services.conseval import SCALES, parse_score

    parsed = parse_score(raw, SCALES["5-P"])
    return parsed.value, None if parsed.value is not None else f"{parsed.problem}: {raw.strip()[:120]!r}"


def score_text(
    client: LLMClient,
    prompt: prompts.Prompt,
    text: str,
    source: str,
    *,
    repeats: int,
    seed: int = 0,
    answer_format: str = "plain",
) -> tuple[list[float], str | None]:
    """Rate one text `repeats` times (distinct samples, each cached); returns (scores, first error).

    Plain (the paper's prompt): the reply is read once as written; structured: JSON, asked again once if unread."""
    content = prompt.render(source=source or "(none)", text=text)
    messages = [{"role": "user", "content": content}]
    scores: list[float] = []
    error = None
    for r in range(repeats):
        common = dict(prompt_version=prompt.id, stage="dhp-score", sample_index=seed * 1000 + r)
        if answer_format == prompts.STRUCTURED:
            res = client.chat_json(messages, parse=_parse_rating, schema=Rating.model_json_schema(), **common)
            value, problem = (res.value.score, None) if res.ok else (None, res.error)  # type: ignore[union-attr]
        else:
            res = client.chat_text(messages, **common)
            value, problem = read_score(res.value) if res.ok else (None, res.error)  # type: ignore[arg-type]
        if value is not None:
            scores.append(value)
        else:
            error = error or problem
            if res.fatal:
                break
    return scores, error


# -- tasks ---------------------------------------------------------------------------------------------
def _task_from_row(row: DhpTask) -> TaskSpec:
    return perturb.custom_task(
        row.key, row.name, text_label=row.text_label, source_label=row.source_label,
        metrics=[(m["name"], m.get("definition", "")) for m in row.metrics], perturbations=row.perturbations,
        definition=row.definition,
    )  # fmt: skip


def list_tasks(*, session: Session) -> list[TaskSpec]:
    """The built-in tasks, then the ones users added."""
    rows = session.execute(select(DhpTask).order_by(DhpTask.id)).scalars().all()
    return [*perturb.TASKS.values(), *(_task_from_row(r) for r in rows)]


def get_task(key: str, *, session: Session) -> TaskSpec | None:
    if key in perturb.TASKS:
        return perturb.TASKS[key]
    row = session.execute(select(DhpTask).where(DhpTask.key == key)).scalars().first()
    return _task_from_row(row) if row else None


def add_task(spec: TaskSpec, *, session: Session) -> None:
    """Store a user-added task; ValueError when its key is taken."""
    if get_task(spec.key, session=session) is not None:
        raise ValueError(f"A task with the key '{spec.key}' exists already.")
    session.add(
        DhpTask(
            key=spec.key, name=spec.name, text_label=spec.text_label, source_label=spec.source_label,
            definition=spec.definition, metrics=[{"name": m.name, "definition": m.definition} for m in spec.metrics],
            perturbations=[p.record() for p in spec.perturbations],
        )
    )  # fmt: skip
    session.flush()


# -- sets of perturbed texts ----------------------------------------------------------------------------
def _item_record(it: Item) -> dict[str, Any]:
    return {"id": it.id, "text": it.text, "source": it.source, **it.extra}


def _text_row(set_id: int, pz: perturb.Perturbed) -> dict[str, Any]:
    return {
        "set_id": set_id, "item_id": pz.item_id, "perturbation": pz.perturbation, "level": pz.level,
        "text": pz.perturbed, "detail": pz.detail, "error": pz.error, "created_at": utcnow(),
    }  # fmt: skip


def create_set(
    task: TaskSpec,
    items: Sequence[Item],
    *,
    name: str,
    seed: int,
    session: Session,
    backend: BackendConfig | None = None,
    only: Sequence[str] | None = None,
    answer_format: str = "plain",
) -> int:
    """Store the originals and their rule-based perturbations now; LLM-based ones wait for `process_set`.

    `only` limits the set to some perturbation keys; without a backend the LLM-based ones are left out."""
    chosen = [p for p in task.perturbations if only is None or p.key in only]
    if backend is None:
        chosen = [p for p in chosen if p.spec.method == "rule"]
    llm = [p for p in chosen if p.spec.method == "llm"]
    row = DhpSet(
        name=name.strip() or f"{task.name} · seed {seed}", task=task.key, seed=seed,
        items=[_item_record(i) for i in items], status="generating" if llm else "ready",
        model=backend.model if (backend and llm) else "",
        params={**_backend_params(backend), "answer_format": answer_format} if llm else {},
    )  # fmt: skip
    row.items = [*row.items]
    session.add(row)
    session.flush()
    sid = int(row.id)  # type: ignore[arg-type]
    rows = [
        _text_row(sid, perturb.Perturbed(i.id, ORIGINAL, "original", i.text, i.text, "the good text")) for i in items
    ]
    for p in chosen:
        for it in items:
            if p.spec.method == "rule":
                rows.append(_text_row(sid, perturb.apply_rule(p, it, items, seed)))
            else:
                rows.append(_text_row(sid, perturb.Perturbed(it.id, p.key, p.level, it.text, None, "pending")))
    session.execute(DhpText.__table__.insert(), rows)
    # The chosen perturbations, in order, so an LLM pass and the tables know the plan.
    session.execute(
        update(DhpSet).where(DhpSet.id == sid).values(items=row.items)  # type: ignore[arg-type]
    )
    return sid


def _backend_params(backend: BackendConfig | None) -> dict[str, Any]:
    if backend is None:
        return {}
    d = backend.public()
    d.pop("has_api_key", None)
    return d


def backend_from_params(params: Mapping[str, Any]) -> BackendConfig:
    """A recorded backend; its key (never stored) comes from this process's environment."""
    return backend_from_record(
        params.get("kind", "embedded"), base_url=params.get("base_url"), model=params.get("model", ""),
        params=dict(params),
    )  # fmt: skip


def get_set(set_id: int, *, session: Session) -> DhpSetPublic | None:
    row = session.get(DhpSet, set_id)
    return DhpSetPublic.model_validate(row) if row else None


def list_sets(*, session: Session, task: str | None = None) -> list[DhpSetPublic]:
    q = select(DhpSet).order_by(DhpSet.id.desc())  # type: ignore[union-attr]
    if task:
        q = q.where(DhpSet.task == task)
    return [DhpSetPublic.model_validate(r) for r in session.execute(q).scalars().all()]


def set_items(s: DhpSetPublic) -> list[Item]:
    return perturb.items_from_records(s.items)


def texts_frame(set_id: int, *, session: Session) -> pd.DataFrame:
    """Every text of a set with its original: item_id, perturbation, level, original, text, detail, error."""
    rows = (
        session.execute(
            select(DhpText).where(DhpText.set_id == set_id).order_by(DhpText.id)  # type: ignore[arg-type]
        )
        .scalars()
        .all()
    )
    originals = {r.item_id: r.text for r in rows if r.perturbation == ORIGINAL}
    return pd.DataFrame(
        [
            {
                "text_id": r.id,
                "item_id": r.item_id,
                "perturbation": r.perturbation,
                "level": r.level,
                "original": originals.get(r.item_id, ""),
                "text": r.text,
                "detail": r.detail,
                "error": r.error,
            }
            for r in rows
        ],  # fmt: skip
        columns=["text_id", "item_id", "perturbation", "level", "original", "text", "detail", "error"],
    )


def process_set(engine: Engine, set_id: int, *, backend: BackendConfig | None = None) -> int:
    """Make the pending LLM-based perturbations of a set; returns how many failed."""
    with get_session(engine) as s:
        row = s.get(DhpSet, set_id)
        if row is None:
            return 0
        task = get_task(row.task, session=s)
        items = perturb.items_from_records(row.items)
        params = dict(row.params)
        pending = (
            s.execute(
                select(DhpText).where(DhpText.set_id == set_id, DhpText.detail == "pending")  # type: ignore[arg-type]
            )
            .scalars()
            .all()
        )
        todo = [(r.id, r.item_id, r.perturbation) for r in pending]
    if task is None:
        _finish_set(engine, set_id, "failed", f"task {row.task!r} is gone")
        return len(todo)
    backend = backend or backend_from_params(params)
    client = get_client(backend, cache=SqlCache(engine))
    by_id = {i.id: i for i in items}
    failed = 0
    lock = threading.Lock()

    def one(job: tuple[int, str, str]) -> None:
        nonlocal failed
        tid, iid, key = job
        pz = perturb.perturb_item(task, task.perturbation(key), by_id[iid], items, seed=0, client=client,
                                  answer_format=answer_format_of(params))  # fmt: skip
        with lock:
            failed += pz.error is not None
        with engine.begin() as conn:
            conn.execute(
                update(DhpText).where(DhpText.id == tid).values(text=pz.perturbed, detail=pz.detail, error=pz.error)
            )

    with ThreadPoolExecutor(max_workers=max(1, backend.concurrency)) as pool:
        list(pool.map(one, todo))
    _finish_set(engine, set_id, "ready", f"{failed} LLM-based perturbation(s) failed" if failed else None)
    return failed


def _finish_set(engine: Engine, set_id: int, status: str, error: str | None) -> None:
    with engine.begin() as conn:
        conn.execute(update(DhpSet).where(DhpSet.id == set_id).values(status=status, error=error))


def delete_set(set_id: int, *, session: Session) -> bool:
    row = session.get(DhpSet, set_id)
    if row is None:
        return False
    session.delete(row)
    return True


# -- runs -----------------------------------------------------------------------------------------------
def create_run(
    set_id: int,
    backend: BackendConfig,
    *,
    repeats: int = 5,
    seed: int = 0,
    session: Session,
    answer_format: str = "plain",
) -> int:
    """Record a benchmark run of one evaluator on a set (hand it to the worker with services.jobs.queue)."""
    if repeats < 1:
        raise ValueError("repeats must be 1 or more")
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"the answer format must be one of {', '.join(ANSWER_FORMATS)}")
    st = session.get(DhpSet, set_id)
    if st is None:
        raise ValueError(f"set {set_id} does not exist")
    task = get_task(st.task, session=session)
    if task is None:
        raise ValueError(f"the set's task {st.task!r} does not exist")
    n_texts = session.execute(
        select(func.count()).select_from(DhpText).where(DhpText.set_id == set_id, DhpText.text.is_not(None))  # type: ignore[union-attr]
    ).scalar_one()
    pv = {m: p.id for m, p in eval_prompts(task, answer_format).items()}
    run = DhpRun(
        set_id=set_id, backend_kind=backend.kind, model=backend.model, base_url=backend.public_url, repeats=repeats,
        seed=seed, params={**_backend_params(backend), "answer_format": answer_format}, prompt_versions=pv,
        n_total=int(n_texts) * len(task.metrics),
    )  # fmt: skip
    session.add(run)
    session.flush()
    return int(run.id)  # type: ignore[arg-type]


def get_run(run_id: int, *, session: Session) -> DhpRunPublic | None:
    row = session.get(DhpRun, run_id)
    return DhpRunPublic.model_validate(row) if row else None


def list_runs(*, session: Session, set_id: int | None = None) -> list[DhpRunPublic]:
    q = select(DhpRun).order_by(DhpRun.id.desc())  # type: ignore[union-attr]
    if set_id is not None:
        q = q.where(DhpRun.set_id == set_id)
    return [DhpRunPublic.model_validate(r) for r in session.execute(q).scalars().all()]


def same_run(
    set_id: int, backend: BackendConfig, *, repeats: int, seed: int, session: Session, answer_format: str | None = None
) -> DhpRunPublic | None:
    """A queued, running or finished run of the set with the same model, endpoint, r, seed and reply format, if
    any: starting another would only repeat it (its answers are cached)."""
    q = select(DhpRun).where(
        DhpRun.set_id == set_id, DhpRun.model == backend.model, DhpRun.base_url == backend.public_url,
        DhpRun.repeats == repeats, DhpRun.seed == seed, DhpRun.status.in_(("queued", "running", "done")),  # type: ignore[union-attr]
    )  # fmt: skip
    for row in session.execute(q.order_by(DhpRun.id.desc())).scalars():  # type: ignore[union-attr]
        if answer_format is None or answer_format_of(row.params or {}) == answer_format:
            return DhpRunPublic.model_validate(row)
    return None


JOBS = JobTable(DhpRun)


def request_cancel(run_id: int, *, session: Session) -> None:
    """Ask the workers to stop the run (see services.jobs.runner: cancel means the same for every job)."""
    JOBS.request_cancel(session.connection(), run_id)


def process_run(engine: Engine, run_id: int, *, backend: BackendConfig | None = None) -> str:
    """Score every text of the run's set on every metric, r times; resumes where it stopped. Returns the status."""
    return jobrunner.run(engine, JOBS, run_id, lambda: _score_run(engine, run_id, backend)) or "not claimed"


def _score_run(engine: Engine, run_id: int, backend: BackendConfig | None) -> None:
    """The scores of a claimed run not yet saved; stops at the next score once its cancel is asked for."""
    with get_session(engine) as s:
        run = s.get(DhpRun, run_id)
        st = s.get(DhpSet, run.set_id)  # type: ignore[union-attr]
        task = get_task(st.task, session=s)  # type: ignore[union-attr]
        texts = (
            s.execute(
                select(DhpText).where(DhpText.set_id == st.id, DhpText.text.is_not(None))  # type: ignore[union-attr]
            )
            .scalars()
            .all()
        )
        done = set(s.execute(select(DhpScore.text_id, DhpScore.metric).where(DhpScore.run_id == run_id)).all())
        items = {i["id"]: i for i in st.items}  # type: ignore[union-attr]
        repeats, seed, params = run.repeats, run.seed, dict(run.params)  # type: ignore[union-attr]
        jobs = [(t.id, t.item_id, t.text) for t in texts]
    if task is None:
        raise InputError("the set's task no longer exists")
    backend = backend or backend_from_params(params)
    client = get_client(backend, cache=SqlCache(engine))
    fmt = answer_format_of(params)
    ps = eval_prompts(task, fmt)
    work = [(tid, iid, text, m) for tid, iid, text in jobs for m in ps if (tid, m) not in done]
    stop = threading.Event()
    fatal: list[str] = []
    cancelled = threading.Event()

    def one(job: tuple[int, str, str, str]) -> None:
        if stop.is_set():
            return
        tid, iid, text, metric = job
        source = str(items.get(iid, {}).get("source", ""))
        scores, err = score_text(client, ps[metric], text, source, repeats=repeats, seed=seed, answer_format=fmt)
        mean = float(np.mean(scores)) if scores else None
        row = {"run_id": run_id, "text_id": tid, "metric": metric, "scores": scores, "mean": mean,
               "error": None if scores else err, "created_at": utcnow()}  # fmt: skip
        with engine.begin() as conn:
            ins = dialect_insert(conn)(DhpScore.__table__)
            conn.execute(
                ins.on_conflict_do_update(
                    index_elements=["run_id", "text_id", "metric"],
                    set_={"scores": ins.excluded.scores, "mean": ins.excluded.mean, "error": ins.excluded.error},
                ),
                [row],
            )
            if JOBS.advance(conn, run_id, n_done=1, n_failed=0 if scores else 1):
                cancelled.set()
                stop.set()
        if err and not scores and ("Cannot reach" in err or "rejected the API key" in err or "404" in err):
            fatal.append(err)
            stop.set()

    with ThreadPoolExecutor(max_workers=max(1, backend.concurrency)) as pool:
        list(pool.map(one, work))
    if cancelled.is_set() or JOBS.cancel_requested(engine, run_id):
        raise jobrunner.Cancelled
    if fatal:
        raise InputError(fatal[0])


def recover(engine: Engine) -> list[int]:
    """Runs whose worker went quiet: queued again, to hand to the workers."""
    return JOBS.recover(engine)


def scores_frame(run_id: int, *, session: Session) -> pd.DataFrame:
    """Mean scores of a run in the `dhp stats` layout: item_id, perturbation, level, metric, original, perturbed."""
    rows = session.execute(
        select(DhpText.item_id, DhpText.perturbation, DhpText.level, DhpScore.metric, DhpScore.mean)
        .join(DhpScore, DhpScore.text_id == DhpText.id)  # type: ignore[arg-type]
        .where(DhpScore.run_id == run_id)
    ).all()
    df = pd.DataFrame(rows, columns=["item_id", "perturbation", "level", "metric", "mean"])
    if df.empty:
        return pd.DataFrame(columns=list(SCORE_COLUMNS))
    orig = df[df["perturbation"] == ORIGINAL][["item_id", "metric", "mean"]].rename(columns={"mean": "original"})
    pert = df[df["perturbation"] != ORIGINAL].rename(columns={"mean": "perturbed"})
    out = pert.merge(orig, on=["item_id", "metric"], how="inner")
    return out[list(SCORE_COLUMNS)].reset_index(drop=True)


def run_result(
    run_id: int, *, session: Session, weights: Mapping[str, Mapping[str, float]] | None = None
) -> DiscernmentResult | None:
    """The discernment of a run from its stored scores (None when it has no paired scores yet)."""
    run = session.get(DhpRun, run_id)
    if run is None:
        return None
    df = scores_frame(run_id, session=session)
    if df.empty:
        return None
    st = session.get(DhpSet, run.set_id)
    task = get_task(st.task, session=session) if st else None
    order = [p.key for p in task.perturbations] if task else None
    expected = {p.key: p.level for p in task.perturbations} if task else None
    return analyse(df, weights=weights, model=run.model, order=order, expected=expected)


# -- samples ----------------------------------------------------------------------------------------------
def sample_items(task_key: str) -> list[Item]:
    """The app's own sample texts of a built-in task (samples/dhp.json); [] for other tasks."""
    import json

    from services.config import PROJECT_ROOT

    path = PROJECT_ROOT / "samples" / "dhp.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    block = data.get(task_key)
    return perturb.items_from_records(block["items"]) if block else []


def parse_items_upload(name: str, data: bytes | str) -> list[Item]:
    """Items from an uploaded JSONL, JSON or CSV file; ValueError (InputError) with a readable message."""
    from services.text import read_records

    return perturb.items_from_records(read_records(data, name))


jobrunner.register(JobKind("dhp-run", process=process_run, recover=recover))
# Making a set's LLM-based perturbations holds no lease: a set left half made is finished when handed over again.
jobrunner.register(JobKind("dhp-perturb", process=process_set))
