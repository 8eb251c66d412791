"""The whole report of a batch (every table, as JSON too) and the parts with bootstrap intervals."""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.models import BatchPublic
from services import stats
from services.metaeval.agreement import HumanAgreement, human_agreement
from services.metaeval.baseline_metrics import BASELINE_METRICS, baseline_table, cached_baselines, compute_baselines
from services.metaeval.binary import ScoreMeasure, VerdictMeasure, resolve_threshold, score_measure, verdict_measure
from services.metaeval.classification import Figure3, SentenceLevel, classification_frame, figure3, sentence_level
from services.metaeval.common import DEFAULT_BOOT, DEFAULT_SEED, numeric
from services.metaeval.loading import BatchData, load_batch
from services.metaeval.rai import RoundsResult, rai_table, rounds_of
from services.metaeval.reproducibility import bundle
from services.metaeval.selective import Selective, selective
from services.metaeval.summary import Correlations, SummaryLevel, correlations, summary_level
from services.stats.common import EXACT_RESAMPLE_MAX

# The parts of Estimates, each needed by one tab of the page: Summary level, Human agreement, Baselines.
PARTS: tuple[str, ...] = ("correlations", "agreement", "baselines")


@dataclass(frozen=True)
class Estimates:
    """The parts of the report that carry bootstrap intervals (the slow part on large batches); a part not
    asked for (see `parts` of estimates) is None."""

    correlations: Correlations | None
    agreement: HumanAgreement | None  # None when the data was loaded without sentences, or not asked for
    baselines: pd.DataFrame | None
    n_boot: int
    seed: int


def estimates(
    data: BatchData,
    baseline_values: pd.DataFrame | None = None,
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    parts: Collection[str] = PARTS,
) -> Estimates:
    """Correlations, AUROC, both alphas (when the data has its sentences) and the baselines table, with
    `n_boot` resamples (0: points only); only the `parts` asked for (PARTS), the others None. The baselines
    table's model row is the correlations' (the same score, humans, seed and resamples)."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; choose among {', '.join(PARTS)}")
    values = baseline_values if baseline_values is not None else pd.DataFrame(columns=list(BASELINE_METRICS))
    corr = None
    if "correlations" in parts or "baselines" in parts:
        corr = correlations(data.done, seed=seed, n_boot=n_boot)
    table = None
    if "baselines" in parts:
        table = baseline_table(
            data.items, values, model_label=model_label(data.batch), seed=seed, n_boot=n_boot, model=corr
        )
    return Estimates(
        correlations=corr if "correlations" in parts else None,
        agreement=human_agreement(data=data, seed=seed, n_boot=n_boot)
        if "agreement" in parts and data.has_sentences
        else None,
        baselines=table,
        n_boot=n_boot,
        seed=seed,
    )


def estimates_from_db(
    database_url: str,
    batch_id: int,
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    parts: Collection[str] = PARTS,
) -> Estimates:
    """estimates() for a batch read from the database at this URL (for a child process: nothing to pickle
    but the URL and the numbers); the sentences are read only when `parts` has the agreement."""
    from db.engine import make_engine

    engine = make_engine(database_url, migrate=False)
    try:
        data = load_batch(engine, batch_id, sentences="agreement" in parts)
        values = None
        if "baselines" in parts:
            values = cached_baselines(engine, data.done["item_id"].astype(int).tolist(), batch_id=batch_id)
        return estimates(data, values, seed=seed, n_boot=n_boot, parts=parts)
    finally:
        engine.dispose()


def bootstrap_seconds(data: BatchData, n_boot: int, n_baselines: int = 0, parts: Collection[str] = PARTS) -> float:
    """A rough CPU time for the bootstrap intervals of these parts of a batch. Up to EXACT_RESAMPLE_MAX items
    (units) the resamples are drawn item by item. Measured with 1,000 resamples: the three correlations and AUROC
    of a score column took about 0.4 s per 1,000 items, or 0.06 s when its scores and the humans' take few
    values (stats.tabulated: counted into contingency tables); both alphas about 0.07 s per 1,000 units. Above,
    the linear forms take a time that does not grow with the resamples (measured at 50,000 items: 0.5 s for
    the three correlations and AUROC of one column; 0.4 s for both alphas over 500,000 units). Items-only data
    counts sentences. Baseline metrics' scores are taken as many-valued."""
    if n_boot <= 0:
        return 0.0
    items = len(data.done)
    seconds = 0.0
    if items > EXACT_RESAMPLE_MAX:
        seconds = (("correlations" in parts) + ("baselines" in parts) * n_baselines) * items * 1e-5
    else:
        if "correlations" in parts or "baselines" in parts:  # the baselines table's model row is this column
            few = stats.tabulated(numeric(data.done["score"]), numeric(data.done["human_score"])) if items else True
            seconds += n_boot / 1000 * items * (6e-5 if few else 4e-4)
        if "baselines" in parts:
            seconds += n_baselines * n_boot / 1000 * items * 4e-4
    if "agreement" in parts:
        if data.has_sentences:
            units = int(data.votes.shape[1]) + int((data.sentences["n_votes"] > 0).sum())
        else:
            units = 2 * int(data.items["n_sentences"].sum())
        seconds += units * 1e-6 if units > 2 * EXACT_RESAMPLE_MAX else n_boot / 1000 * units * 7e-5
    return seconds


# -- the whole report ------------------------------------------------------------------------------------
def jsonable(obj: Any) -> Any:
    """Plain JSON values from dataclasses, DataFrames, numpy scalars; NaN and infinities become None."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {k: jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, pd.DataFrame):
        return [jsonable(r) for r in obj.reset_index(drop=obj.index.name is None).to_dict(orient="records")]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


@dataclass(frozen=True)
class Report:
    """Every table of the meta-evaluation of one batch."""

    summary: SummaryLevel
    sentence: SentenceLevel
    figure3: Figure3
    baselines: pd.DataFrame
    rai: pd.DataFrame
    rounds: RoundsResult
    agreement: HumanAgreement
    notes: tuple[str, ...] = field(default_factory=tuple)
    selective: Selective | None = None  # risk-coverage and reliability of the scores
    score_measure: ScoreMeasure | None = None  # balanced accuracy of the score at the threshold (binary.py)
    verdicts: VerdictMeasure | None = None  # balanced accuracy of the judge's own verdicts (binary.py)


def build_report(
    data: BatchData,
    *,
    threshold: float | None = None,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    baseline_values: pd.DataFrame | None = None,
    other: BatchData | None = None,
) -> Report:
    """Every table from loaded data (no database access); `threshold` None: the method's own
    (binary.default_threshold)."""
    values = baseline_values if baseline_values is not None else pd.DataFrame(columns=list(BASELINE_METRICS))
    method = data.batch.method
    threshold = resolve_threshold(method, threshold)
    return Report(
        score_measure=score_measure(method, data.items, threshold),
        verdicts=verdict_measure(method, data.items),
        summary=summary_level(data.items, threshold=threshold, seed=seed, n_boot=n_boot),
        sentence=sentence_level(data=data),
        figure3=figure3(data=data, other=other),
        baselines=baseline_table(data.items, values, model_label=model_label(data.batch), seed=seed, n_boot=n_boot),
        rai=rai_table(data.items),
        rounds=rounds_of(data.items),
        agreement=human_agreement(data=data, seed=seed, n_boot=n_boot),
        selective=selective(data.items),
        notes=data.notes,
    )


def model_label(batch: BatchPublic) -> str:
    """How a batch is named in the baselines table: id, model, evaluator and converter."""
    if batch.method == "evidence":
        return f"Batch #{batch.id}: evidence checker (offline)"
    level = "paragraph" if batch.method == "paragraph" else "DCE"
    return f"Batch #{batch.id}: {batch.model or 'model'} ({level} + AMC {batch.amc})"


def report(
    engine: Engine,
    batch_id: int,
    *,
    threshold: float | None = None,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    other_batch_id: int | None = None,
    compute_baselines_first: bool = False,
    with_embeddings: bool = False,
) -> dict[str, Any]:
    """The meta-evaluation of a batch as JSON-serialisable data, with the reproducibility bundle; `threshold`
    None: the method's own (binary.default_threshold)."""
    data = load_batch(engine, batch_id)
    threshold = resolve_threshold(data.batch.method, threshold)
    other = load_batch(engine, other_batch_id) if other_batch_id is not None else None
    ids = data.done["item_id"].astype(int).tolist()
    if compute_baselines_first and ids:
        compute_baselines(engine, ids, with_embeddings=with_embeddings)
    rep = build_report(
        data, threshold=threshold, seed=seed, n_boot=n_boot, baseline_values=cached_baselines(engine, ids), other=other
    )
    settings = {"threshold": threshold, "seed": seed, "bootstrap_resamples": n_boot, "other_batch_id": other_batch_id}
    return report_dict(
        rep,
        batch_id=batch_id,
        settings=settings,
        bundle=bundle(engine, batch_id, seed=seed, n_boot=n_boot, threshold=threshold),
    )


def report_dict(rep: Report, *, batch_id: int, settings: dict[str, Any], bundle: dict[str, Any]) -> dict[str, Any]:
    """A Report as JSON-serialisable data (NaN as null), with the settings and the reproducibility bundle."""
    s = rep.summary
    h = rep.agreement
    return jsonable(
        {
            "batch_id": batch_id,
            "notes": list(rep.notes),
            "settings": {**settings, "positive_class": "consistent"},
            "binary": {
                "score": rep.score_measure.as_dict() if rep.score_measure else None,
                "verdicts": rep.verdicts.as_dict() if rep.verdicts else None,
            },
            "summary_level": {
                "n_items": s.correlations.n_items,
                "correlations": s.correlations.frame(),
                "notes": list(s.correlations.notes),
                "classification": classification_frame(s.classification).iloc[0].to_dict(),
            },
            "sentence_level": {
                **{k: v for k, v in asdict(rep.sentence).items() if k != "classification"},
                "classification": asdict(rep.sentence.classification) if rep.sentence.classification else None,
            },
            "figure3": {"table": rep.figure3.frame, "notes": list(rep.figure3.notes)},
            "baselines": rep.baselines,
            "rai": {"table4": rep.rai, "rounds": rep.rounds.share, "notes": list(rep.rounds.notes)},
            "human_agreement": {
                "alpha": h.among_humans.alpha if h.among_humans else None,
                "n_sentences": h.among_humans.n_pairable if h.among_humans else 0,
                "n_items": h.n_items,
                "n_workers": h.n_workers,
                "ci_low": h.among_humans.ci_low if h.among_humans else None,
                "ci_high": h.among_humans.ci_high if h.among_humans else None,
                "among_humans": h.among_humans,
                "model_vs_majority": h.model_vs_majority,
                "notes": list(h.notes),
            },
            "selective": None
            if rep.selective is None
            else {
                "n_items": rep.selective.n,
                "risk_coverage": rep.selective.risk_coverage.curve,
                "aurc": rep.selective.risk_coverage.aurc,
                "reliability": rep.selective.reliability.bins,
                "ece": rep.selective.reliability.ece,
                "own_verdicts": None
                if rep.selective.own is None
                else dict(zip(("share_decided", "accuracy", "n"), rep.selective.own, strict=True)),
                "notes": list(rep.selective.notes),
            },
            "bundle": bundle,
        }
    )


def report_json(rep: dict[str, Any]) -> str:
    """The report as indented JSON (strict: no NaN)."""
    return json.dumps(rep, indent=2, ensure_ascii=False, allow_nan=False)
