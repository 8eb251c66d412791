"""A judge's predictions and a dataset's human judgments, read from the database into frames.

A judge is a batch over a dataset: its prediction of an item is the batch's continuous score (for the
offline evidence checker, its calibrated `checker_score` when the result carries one, else its summary score:
the mean support of the sentences, which it has even where it abstains); its verdict is 1 when every
sentence was judged consistent (Eq. 3's score of 1), 0 otherwise, none when it failed or left a sentence
unknown; the evidence checker's is its own summary verdict (`model_is_consistent`, none when undecided).

The human side of an item: the label and score it was imported with, and the annotators' labels from the
Annotate queue (an annotator's verdict on an item counts once they have labelled every sentence of it:
consistent when every sentence is; the item's label is the majority of those verdicts, a tie has none).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db import judges as db
from db.engine import get_session
from db.models import BatchPublic
from services.dcr.results import CONSISTENT_AT
from services.errors import InputError
from services.result_columns import checker_parts, evidence_score, evidence_verdict

LabelSource = Literal["all", "annotators", "dataset"]
LABEL_SOURCES: dict[str, str] = {
    "all": "Imported labels and annotators' labels",
    "annotators": "Annotators' labels only (from the Annotate queue)",
    "dataset": "Imported labels only",
}
# Label origins whose items count as a random draw of the dataset. Imported labels are the dataset's own: a
# census when every item has one, else assumed a random draw (the card says so).
RANDOM_ORIGINS = ("imported", "random")
ORIGIN_NAMES = {
    "imported": "imported with the dataset",
    "random": "a random draw",
    "uncertain": "chosen where the judges are unsure or disagree",
    "manual": "picked by hand",
    "unknown": "chosen before origins were recorded",
}


def _checker_columns(engine: Engine, batch_id: int, item_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The evidence checker's prediction and verdict of these items, from the parts of their stored results:
    taken out by the database where it can (SQLite, PostgreSQL), else decoded here."""
    with get_session(engine) as session:
        if db.has_checker_parts(engine.dialect.name):
            parts = db.checker_parts(session=session, batch_id=batch_id)
        else:
            rows = db.judge_items(session=session, batch_id=batch_id, with_result=True)
            parts = {int(r[0]): checker_parts(r[-1]) for r in rows}
    none = (None, None, None, None, None)
    got = [parts.get(int(i), none) for i in item_ids]
    pred = np.array([evidence_score(p) for p in got], dtype=float)
    verdict = np.array([evidence_verdict(p) for p in got], dtype=float)
    return pred, verdict


def judge_frame(engine: Engine, batch: BatchPublic) -> pd.DataFrame:
    """One row per batch item: item_id, status, prediction (in [0, 1]), verdict (1/0/NaN), n_sentences,
    n_unknown and the cost columns."""
    is_evidence = batch.method == "evidence"
    with get_session(engine) as session:
        rows = db.judge_items(session=session, batch_id=batch.id)
    df = pd.DataFrame(rows, columns=list(db.JUDGE_ITEM_FIELDS))
    for name in ("score", "latency_ms"):
        df[name] = df[name].astype(float)  # None -> NaN
    for name in ("n_sentences", "n_unknown", "calls", "cache_hits", "prompt_tokens", "completion_tokens"):
        df[name] = df[name].fillna(0).astype(int)
    df["latency_ms"] = df["latency_ms"].fillna(0.0)
    done = (df["status"] == "done").to_numpy()
    score = df["score"].to_numpy(dtype=float)
    if is_evidence:
        # The checker scores every sentence, even one it abstains on: an item whose verdict is unknown (failed)
        # still has a prediction.
        pred, verdict = _checker_columns(engine, batch.id, df["item_id"].tolist())
        pred = np.where(np.isfinite(pred), pred, np.where(done, score, np.nan))
        has = np.isfinite(pred)
    else:
        pred, has = score, done
        verdict = np.where(np.isfinite(score), (score >= CONSISTENT_AT).astype(float), np.nan)
    df["prediction"] = np.where(has, np.clip(pred, 0.0, 1.0), np.nan)
    df["verdict"] = np.where(done & np.isfinite(verdict), verdict, np.nan)
    return df


def annotator_truth(engine: Engine, dataset_id: int, *, sizes: dict[int, int] | None = None) -> pd.DataFrame:
    """Per item with a complete annotator verdict: label (majority, NaN on a tie), score (mean share of
    consistent sentences) and how many annotators it rests on. `sizes`: item id -> its sentences, when the
    caller has read them already."""
    with get_session(engine) as session:
        if sizes is None:
            sizes = {h.item_id: h.n_sentences for h in db.human_rows(session=session, dataset_id=dataset_id)}
        labels = db.annotator_labels(session=session, dataset_id=dataset_id)
    by_pair: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for item_id, annotator_id, sentence_idx, label in labels:
        by_pair[(item_id, annotator_id)][sentence_idx] = label
    verdicts: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for (item_id, _), marks in by_pair.items():
        if len(marks) >= sizes.get(item_id, 1):
            values = list(marks.values())
            verdicts[item_id].append((min(values), float(np.mean(values))))
    out = []
    for item_id, vs in verdicts.items():
        yes = sum(v for v, _ in vs)
        label = 1.0 if 2 * yes > len(vs) else 0.0 if 2 * yes < len(vs) else np.nan
        out.append({"item_id": item_id, "label": label, "hscore": float(np.mean([s for _, s in vs])), "n_ann": len(vs)})
    return pd.DataFrame(out, columns=["item_id", "label", "hscore", "n_ann"])


def human_frame(
    engine: Engine, dataset_id: int, *, source: LabelSource = "all", budget: int | None = None, seed: int = 0
) -> pd.DataFrame:
    """One row per dataset item: item_id, idx, external_id, label (1/0/NaN), hscore (NaN when none), where
    they come from (source: "imported", "annotators" or "") and how the item was chosen for labelling (origin:
    "imported", "random", "uncertain", "manual", "unknown", or "" when it has no label; see RANDOM_ORIGINS).

    `budget` keeps a random `budget` of the imported judgments (drawn with `seed`) and hides the rest: what the
    estimates would be had only that many items been labelled. Annotators' labels always count in full.
    """
    if source not in LABEL_SOURCES:
        raise InputError(f"Unknown label source {source!r}; one of {', '.join(LABEL_SOURCES)}.")
    with get_session(engine) as session:
        rows = db.human_rows(session=session, dataset_id=dataset_id)
    if not rows:
        raise InputError(f"Dataset {dataset_id} has no items (or does not exist).")
    df = pd.DataFrame(
        {
            "item_id": [r.item_id for r in rows],
            "idx": [r.idx for r in rows],
            "external_id": [r.external_id for r in rows],
            "label": [np.nan if r.human_label is None else float(r.human_label) for r in rows],
            "hscore": [np.nan if r.human_score is None else float(r.human_score) for r in rows],
        }
    )
    df["source"] = np.where(df["label"].notna() | df["hscore"].notna(), "imported", "")
    if source == "annotators":
        df[["label", "hscore"]] = np.nan
        df["source"] = ""
    elif budget is not None:
        has = np.flatnonzero(df["source"].to_numpy() == "imported")
        if budget < 0:
            raise InputError("The number of labels to keep must be 0 or more.")
        keep = np.random.default_rng(seed).choice(has, size=min(budget, has.size), replace=False)
        hide = np.setdiff1d(has, keep)
        df.loc[hide, ["label", "hscore"]] = np.nan
        df.loc[hide, "source"] = ""
    df["origin"] = np.where(df["source"] == "imported", "imported", "")
    if budget is not None and source != "annotators":
        df.loc[df["source"] == "imported", "origin"] = "random"  # the kept ones are a random draw made here
    if source != "dataset":
        ann = annotator_truth(engine, dataset_id, sizes={r.item_id: r.n_sentences for r in rows}).set_index("item_id")
        free = df["source"].to_numpy() == ""
        ids = df["item_id"].to_numpy()
        fill = free & np.isin(ids, ann.index.to_numpy())
        if fill.any():
            got = ann.loc[ids[fill]]
            df.loc[fill, "label"] = got["label"].to_numpy()
            df.loc[fill, "hscore"] = got["hscore"].to_numpy()
            df.loc[fill, "source"] = "annotators"
            with get_session(engine) as session:
                origins = db.assignment_origins(session=session, dataset_id=dataset_id)
            # an annotator's label on an item nobody assigned them was picked by hand
            df.loc[fill, "origin"] = [origins.get(int(i), "manual") for i in ids[fill]]
    return df


def batches(engine: Engine, batch_ids: list[int]) -> list[BatchPublic]:
    """These batches in the order given; InputError for ids that do not exist."""
    with get_session(engine) as session:
        found = db.batches(session=session, batch_ids=batch_ids)
    missing = sorted(set(batch_ids) - {b.id for b in found})
    if missing:
        raise InputError(f"Batch(es) {', '.join(map(str, missing))} do not exist.")
    return found
