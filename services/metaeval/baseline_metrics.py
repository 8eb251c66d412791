"""Baselines computed locally on the same items (ROUGE, the offline evidence checker, MiniLM), beside the model."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import metaeval as db
from db.engine import get_session
from services import baselines as bl
from services import stats
from services.metaeval.common import DEFAULT_BOOT, DEFAULT_SEED, numeric
from services.metaeval.summary import Correlations
from services.text import InputError

BASELINE_METRICS: dict[str, str] = {
    "rouge2_precision": "ROUGE-2 (precision)",
    "rougeL_precision": "ROUGE-L (precision)",
    "evidence_lexical": "Evidence checker (offline, lexical; mean sentence score, not Eq. 3)",
    "embedding_minilm": "MiniLM embedding similarity",
}
ROUGE_METRICS = ("rouge2_precision", "rougeL_precision")
EMBEDDING_METRIC = "embedding_minilm"
# The offline evidence checker in its lexical mode: no torch needed, so it is always computed.
EVIDENCE_METRIC = "evidence_lexical"


# -- baselines (Tables 1-3) --------------------------------------------------------------------------
def cached_baselines(engine: Engine, item_ids: Sequence[int], *, batch_id: int | None = None) -> pd.DataFrame:
    """Stored baseline values: one row per item id (index), one column per metric (NaN when missing). With
    `batch_id` (whose items include item_ids) the values are read by a join instead of a list of ids."""
    ids = [int(i) for i in item_ids]
    with Session(engine) as session:
        if batch_id is not None:
            rows = db.batch_baseline_rows(session=session, batch_id=batch_id, metrics=list(BASELINE_METRICS))
        else:
            rows = db.baseline_rows(session=session, item_ids=ids, metrics=list(BASELINE_METRICS))
    long = pd.DataFrame(rows, columns=["id", "item_id", "metric", "value"])
    # Two writers racing on the same item leave duplicates: the latest row wins.
    long = long.sort_values("id").drop_duplicates(["item_id", "metric"], keep="last")
    wide = long.pivot(index="item_id", columns="metric", values="value") if not long.empty else pd.DataFrame()
    wide = wide.reindex(index=pd.Index(ids, name="item_id"), columns=list(BASELINE_METRICS))
    return wide.astype(float)


def baseline_stamp(engine: Engine, dataset_id: int) -> str:
    """Changes whenever a baseline value of the dataset's items is added: a cache key."""
    with Session(engine) as session:
        return db.baseline_stamp(session=session, dataset_id=dataset_id)


def wanted_metrics(with_embeddings: bool) -> list[str]:
    return [*ROUGE_METRICS, EVIDENCE_METRIC, *([EMBEDDING_METRIC] if with_embeddings else [])]


def missing_baselines(engine: Engine, item_ids: Sequence[int], *, with_embeddings: bool) -> dict[str, int]:
    """How many of the items lack each baseline metric."""
    have = cached_baselines(engine, item_ids)
    return {m: int(have[m].isna().sum()) for m in wanted_metrics(with_embeddings)}


def compute_baselines(
    engine: Engine,
    item_ids: Sequence[int],
    *,
    with_embeddings: bool,
    on_progress: Callable[[int, int, str], None] | None = None,
    rouge_chunk: int = 500,
    embedding_chunk: int = 64,
) -> dict[str, int]:
    """Compute the missing baseline values and store them (bulk insert, chunk by chunk); returns counts added.

    Each chunk is saved as it is done, so an interrupted run loses at most one chunk and the next call
    continues with what is still missing.
    """
    have = cached_baselines(engine, item_ids)
    todo = {m: [int(i) for i in have.index[have[m].isna()]] for m in wanted_metrics(with_embeddings)}
    if with_embeddings and todo.get(EMBEDDING_METRIC) and not bl.embeddings_available()[0]:
        raise InputError(bl.embeddings_available()[1])
    rouge_ids = sorted(set(todo.get(ROUGE_METRICS[0], [])) | set(todo.get(ROUGE_METRICS[1], [])))
    emb_ids = todo.get(EMBEDDING_METRIC, [])
    total = len(rouge_ids) + len(emb_ids) + len(todo.get(EVIDENCE_METRIC, []))
    added = {m: 0 for m in todo}
    wanted = {m: set(ids) for m, ids in todo.items()}
    done = 0
    if on_progress and total:
        on_progress(0, total, "ROUGE" if rouge_ids else "embeddings")

    def texts(ids: list[int]) -> tuple[list[str], list[str]]:
        with Session(engine) as session:
            rows = db.item_texts(session=session, item_ids=ids)
        return [rows[i][0] for i in ids], [rows[i][1] for i in ids]

    def store(rows: list[dict[str, Any]]) -> None:
        if rows:
            with get_session(engine) as session:
                db.add_baseline_values(session=session, rows=rows)

    for k in range(0, len(rouge_ids), rouge_chunk):
        ids = rouge_ids[k : k + rouge_chunk]
        refs, cands = texts(ids)
        scores = bl.rouge_scores(refs, cands)
        rows = []
        for i, sc in zip(ids, scores, strict=True):
            for m in ROUGE_METRICS:
                if i in wanted.get(m, ()):
                    rows.append({"item_id": i, "metric": m, "value": sc[m]})
                    added[m] += 1
        store(rows)
        done += len(ids)
        if on_progress:
            on_progress(done, total, "ROUGE")
    ev_ids = todo.get(EVIDENCE_METRIC, [])
    for k in range(0, len(ev_ids), rouge_chunk):
        from services.dcr import evidence

        ids = ev_ids[k : k + rouge_chunk]
        refs, cands = texts(ids)
        values = evidence.scores(refs, cands, embedder=evidence.lexical_only)
        store([{"item_id": i, "metric": EVIDENCE_METRIC, "value": v} for i, v in zip(ids, values, strict=True)])
        added[EVIDENCE_METRIC] += len(ids)
        done += len(ids)
        if on_progress:
            on_progress(done, total, "evidence checker")
    if emb_ids and on_progress and not bl.embedding_model_loaded():
        # The first chunk loads the model, which takes seconds to a minute: say so, or the bar seems stuck.
        on_progress(done, total, "loading the MiniLM embedding model (the first time takes up to a minute)")
    for k in range(0, len(emb_ids), embedding_chunk):
        ids = emb_ids[k : k + embedding_chunk]
        refs, cands = texts(ids)
        sims = bl.embedding_similarity(refs, cands) or [math.nan] * len(ids)
        store(
            [
                {"item_id": i, "metric": EMBEDDING_METRIC, "value": None if math.isnan(v) else v}
                for i, v in zip(ids, sims, strict=True)
            ]
        )
        added[EMBEDDING_METRIC] += len(ids)
        done += len(ids)
        if on_progress:
            on_progress(done, total, "embeddings")
    return added


def _metric_row(name: str, x: np.ndarray, hs: np.ndarray, hl: np.ndarray, *, seed: int, n_boot: int) -> dict[str, Any]:
    row: dict[str, Any] = {"metric": name, "n": int(np.isfinite(x).sum())}
    notes = []
    for m in stats.METHODS:
        c = stats.correlation(x, hs, m, n_boot=n_boot, seed=seed)  # type: ignore[arg-type]
        row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"] = c.r, c.ci_low, c.ci_high
        if c.note and m == "pearson":
            notes.append(c.note)
    a = stats.auroc(x, hl, n_boot=n_boot, seed=seed)
    row["auroc"], row["auroc_ci_low"], row["auroc_ci_high"] = a.auc, a.ci_low, a.ci_high
    if a.note:
        notes.append(a.note)
    row["note"] = " ".join(dict.fromkeys(notes))
    return row


def _row_of(name: str, corr: Correlations) -> dict[str, Any]:
    """_metric_row's row from correlations already computed on the same values (the model's score)."""
    row: dict[str, Any] = {"metric": name, "n": corr.n_items}
    notes = []
    for c in corr.correlations:
        row[c.method], row[f"{c.method}_ci_low"], row[f"{c.method}_ci_high"] = c.r, c.ci_low, c.ci_high
        if c.note and c.method == "pearson":
            notes.append(c.note)
    a = corr.auroc
    row["auroc"], row["auroc_ci_low"], row["auroc_ci_high"] = a.auc, a.ci_low, a.ci_high
    if a.note:
        notes.append(a.note)
    row["note"] = " ".join(dict.fromkeys(notes))
    return row


TABLE_COLUMNS = [
    "metric",
    "n",
    "pearson",
    "pearson_ci_low",
    "pearson_ci_high",
    "spearman",
    "spearman_ci_low",
    "spearman_ci_high",
    "kendall",
    "kendall_ci_low",
    "kendall_ci_high",
    "auroc",
    "auroc_ci_low",
    "auroc_ci_high",
    "note",
]


def baseline_table(
    df: pd.DataFrame,
    values: pd.DataFrame,
    *,
    model_label: str | None = "Model",
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    model: Correlations | None = None,
) -> pd.DataFrame:
    """Tables 1-3 side by side: the model's score and each baseline against the same humans, same items.

    `df` is a batch_frame (its done items define the items; model_label=None leaves the model row out);
    `values` is cached_baselines for them. A baseline without any value is listed with n = 0 and a note.
    `model`: summary.correlations of the same done items with the same seed and resamples, to take the model
    row from instead of computing it again.
    """
    done = df[(df["status"] == "done") & df["score"].notna()].set_index("item_id")
    hs, hl = numeric(done["human_score"]), numeric(done["human_label"])
    rows = []
    if model_label is not None and model is not None:
        if model.n_items != len(done) or model.seed != seed or model.n_boot != n_boot:
            raise ValueError("model: correlations of other items or settings than this table's")
        rows.append(_row_of(model_label, model))
    elif model_label is not None:
        rows.append(_metric_row(model_label, numeric(done["score"]), hs, hl, seed=seed, n_boot=n_boot))
    v = values.reindex(done.index.astype(int))
    for metric, label in BASELINE_METRICS.items():
        col = v[metric] if metric in v else pd.Series(np.nan, index=v.index)
        x = numeric(col)
        if not np.isfinite(x).any():
            rows.append({"metric": label, "n": 0, "note": "Not computed yet."})
            continue
        row = _metric_row(label, x, hs, hl, seed=seed, n_boot=n_boot)
        missing = int((~np.isfinite(x)).sum())
        if missing:
            row["note"] = (row["note"] + f" {missing:,} item(s) not computed yet.").strip()
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS)


def baselines(
    engine: Engine,
    dataset_id: int,
    item_ids: Sequence[int],
    *,
    with_embeddings: bool,
    df: pd.DataFrame | None = None,
    model_label: str | None = "Model",
    compute: bool = True,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
) -> pd.DataFrame:
    """Compute what is missing (when `compute`), then the Tables 1-3 frame for these items of the dataset.

    Without `df` (a batch_frame) there is no model row: the table compares the baselines only.
    """
    ids = [int(i) for i in item_ids]
    with Session(engine) as session:
        rows = db.human_judgments(session=session, dataset_id=dataset_id, item_ids=ids)
    if len(rows) != len(set(ids)):
        raise InputError(f"Some items are not in dataset #{dataset_id}.")
    if compute:
        compute_baselines(engine, ids, with_embeddings=with_embeddings)
    values = cached_baselines(engine, ids)
    if df is None:
        df = pd.DataFrame(
            {
                "item_id": [r[0] for r in rows],
                "status": "done",
                "score": 0.0,
                "human_score": [r[1] for r in rows],
                "human_label": [r[2] for r in rows],
            }
        )
        return baseline_table(df, values, model_label=None, seed=seed, n_boot=n_boot)
    return baseline_table(df, values, model_label=model_label, seed=seed, n_boot=n_boot)
