"""Methods compared over one dataset (paper 003: Tables 4-5, Figure 2, cost)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import metaeval as db
from db.models import BatchPublic
from services import stats
from services.metaeval.binary import resolve_threshold
from services.metaeval.classification import at_threshold

# -- methods compared over one dataset (paper 003: Tables 4-5, Figure 2, cost) -------------------------
LENGTH_BUCKETS = 4
ERROR_TYPE_KEYS = ("error_type", "error_types", "category", "categories")
NO_ERROR = "None"  # Table 5's first column: the consistent summaries, recalled when judged consistent


@dataclass(frozen=True)
class MethodComparison:
    """Batches of several methods over one dataset, side by side.

    `table`: one row per batch (balanced accuracy at the threshold, Pearson with the human score, cost per
    document); `repeats`: mean and standard deviation over repeated runs of one configuration (Table 4);
    `lengths`: accuracy by document- and summary-length bucket (Figure 2); `error_types`: recall of the
    inconsistent summaries of each error type, when the dataset's items carry types, and first, as Table 5's
    "None" column, the recall of the consistent summaries (judged consistent).
    """

    table: pd.DataFrame
    repeats: pd.DataFrame
    lengths: pd.DataFrame
    error_types: pd.DataFrame
    notes: tuple[str, ...] = ()


def _error_types(extra: dict[str, Any] | None) -> list[str]:
    for key in ERROR_TYPE_KEYS:
        value = (extra or {}).get(key)
        if isinstance(value, str) and value.strip():
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
    return []


def _method_items(engine: Engine, batch_id: int) -> pd.DataFrame:
    """A batch's items with their human judgments, lengths, error types and cost."""
    with Session(engine) as session:
        rows = db.method_item_rows(session=session, batch_id=batch_id)
    return pd.DataFrame(
        [
            {
                "item_id": r[0],
                "status": r[1],
                "score": r[2],
                "human_score": r[3],
                "human_label": r[4],
                "doc_words": round((r[5] or 0) / 5.5),  # characters to words, as English text averages
                "summary_words": len((r[6] or "").split()),
                "error_types": _error_types(r[7]),
                "calls": r[8] or 0,
                "tokens": (r[9] or 0) + (r[10] or 0),
                "seconds": (r[11] or 0.0) / 1000,
                "failed_units": r[12] or 0,
            }
            for r in rows
        ],
        columns=[
            "item_id",
            "status",
            "score",
            "human_score",
            "human_label",
            "doc_words",
            "summary_words",
            "error_types",
            "calls",
            "tokens",
            "seconds",
            "failed_units",
        ],
    )


def _batch_label(b: BatchPublic, window: int, sample: int, grouped: bool) -> str:
    from services.nli import paradigms as nli

    name = {
        "dce-amc": "DCE-AMC",
        "paragraph": "Paragraph",
        "evidence": "Evidence checker",
        "summ-nli": "Summ-NLI",
        "sent-nli": "Sent-NLI",
        "qg-qa": "QG-QA",
    }.get(b.method, b.method)
    if b.method in nli.WINDOWED:
        name += f" (w={window})"
    return name + (f" · run {sample + 1}" if grouped else "")


def _buckets(values: pd.Series, n: int) -> pd.Series:
    """Equal-count buckets labelled by their word range ("120–340 words")."""
    if values.nunique() < 2:
        return pd.Series([f"{int(values.min())} words"] * len(values), index=values.index) if len(values) else values
    cut = pd.qcut(values, q=min(n, values.nunique()), duplicates="drop")
    return cut.map(lambda iv: f"{max(0, int(math.floor(iv.left)) + 1)}–{int(iv.right)} words").astype(str)


def compare_method_batches(
    engine: Engine,
    batch_ids: Sequence[int],
    *,
    threshold: float | None = None,
    n_buckets: int = LENGTH_BUCKETS,
) -> MethodComparison:
    """Balanced accuracy, Pearson, length buckets, error-type recall, repeat spread and cost of several batches.

    A score below the threshold predicts "inconsistent" (the positive class); `threshold` None, the default, is
    each batch's method's own (services.metaeval.binary): 1.0, where a summary is inconsistent when any sentence,
    window or question is, as the paradigms' Eqs. 2 and 4 say; 0.5 for the evidence checker's probability.
    """
    from services.jobs import batches as batch_service

    with Session(engine) as session:
        found = db.batches_by_id(session=session, batch_ids=batch_ids)
    opts = batch_service.all_options(engine)
    groups = pd.Series([opts[b].repeat_group for b in found if b in opts and opts[b].repeat_group]).value_counts()
    rows, length_rows, type_rows, notes = [], [], [], []
    item_frames: dict[int, pd.DataFrame] = {}
    for bid in batch_ids:
        b = found.get(bid)
        if b is None:
            notes.append(f"Batch {bid} does not exist (deleted?); left out.")
            continue
        o = opts.get(bid)
        window, sample, group = (o.window, o.sample, o.repeat_group) if o else (1, 0, None)
        grouped = group is not None and groups.get(group, 0) > 1
        label = _batch_label(b, window, sample, grouped)
        items = _method_items(engine, bid)
        item_frames[bid] = items
        t = resolve_threshold(b.method, threshold)
        done = items[(items["status"] == "done") & items["score"].notna()]
        cls = at_threshold(done, t, positive=0) if len(done) else None  # 003: errors are what is found
        hs = done[done["human_score"].notna()]
        pear = stats.correlation(hs["score"].to_numpy(float), hs["human_score"].to_numpy(float), "pearson", n_boot=0)
        n_docs = max(1, len(items[items["status"].isin(("done", "failed"))]))
        rows.append(
            {
                "batch": bid,
                "method": label,
                "configuration": f"{b.method}|{window}|{b.amc}|{b.model}",
                "repeat_group": group,
                "n": len(done),
                "threshold": t,
                "balanced_accuracy": cls.balanced_accuracy if cls else None,
                "recall": cls.recall if cls else None,
                "pearson": pear.r,
                "calls_per_doc": items["calls"].sum() / n_docs,
                "tokens_per_doc": items["tokens"].sum() / n_docs,
                "seconds_per_doc": items["seconds"].sum() / n_docs,
                "failed_units": int(items["failed_units"].sum()),
                "failed_items": int((items["status"] == "failed").sum()),
            }
        )
        labelled = done[done["human_label"].notna()].copy()
        if len(labelled):
            labelled["correct"] = (labelled["score"] >= t).astype(int) == labelled["human_label"].astype(int)
            for kind, col in (("document length", "doc_words"), ("summary length", "summary_words")):
                labelled["bucket"] = _buckets(labelled[col], n_buckets)
                labelled["order"] = labelled.groupby("bucket")[col].transform("min")
                for (bucket, order), g in labelled.groupby(["bucket", "order"], sort=False):
                    length_rows.append(
                        {
                            "batch": bid,
                            "method": label,
                            "kind": kind,
                            "bucket": bucket,
                            "order": order,
                            "n": len(g),
                            "accuracy": float(g["correct"].mean()),
                        }
                    )
            bad = labelled[labelled["human_label"] == 0]
            etypes = sorted({t for ts in bad["error_types"] for t in ts})
            good = labelled[labelled["human_label"] == 1]
            if etypes and len(good):  # Table 5's "None": recall of the consistent summaries (no error)
                type_rows.append(
                    {
                        "batch": bid,
                        "method": label,
                        "error_type": NO_ERROR,
                        "n": len(good),
                        "recall": float((good["score"] >= t).mean()),
                    }
                )
            for etype in etypes:
                g = bad[bad["error_types"].map(lambda ts, e=etype: e in ts)]
                type_rows.append(
                    {
                        "batch": bid,
                        "method": label,
                        "error_type": etype,
                        "n": len(g),
                        "recall": float((g["score"] < t).mean()),
                    }
                )
    table = pd.DataFrame(
        rows,
        columns=[
            "batch",
            "method",
            "configuration",
            "repeat_group",
            "n",
            "threshold",
            "balanced_accuracy",
            "recall",
            "pearson",
            "calls_per_doc",
            "tokens_per_doc",
            "seconds_per_doc",
            "failed_units",
            "failed_items",
        ],
    )
    repeats = _repeat_spread(table)
    lengths = pd.DataFrame(length_rows, columns=["batch", "method", "kind", "bucket", "order", "n", "accuracy"])
    if len(lengths):
        lengths = lengths.sort_values(["batch", "kind", "order"]).drop(columns="order").reset_index(drop=True)
    else:
        lengths = lengths.drop(columns="order")
    types = pd.DataFrame(type_rows, columns=["batch", "method", "error_type", "n", "recall"])
    if not len(types) and len(table):
        notes.append("The dataset's items carry no error types (an `error_type` field), so Table 5 is not shown.")
    return MethodComparison(table=table, repeats=repeats, lengths=lengths, error_types=types, notes=tuple(notes))


def _repeat_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample standard deviation over the repeats of each configuration (Table 4's ±)."""
    cols = [
        "method",
        "runs",
        "balanced_accuracy_mean",
        "balanced_accuracy_std",
        "pearson_mean",
        "pearson_std",
        "calls_per_doc",
    ]
    reps = table[table["repeat_group"].notna()]
    out = []
    for _group, g in reps.groupby("repeat_group", sort=False):
        if len(g) < 2:
            continue
        ba, pe = g["balanced_accuracy"].astype(float), g["pearson"].astype(float)
        out.append(
            {
                "method": g["method"].iloc[0].rsplit(" · run ", 1)[0],
                "runs": len(g),
                "balanced_accuracy_mean": ba.mean(),
                "balanced_accuracy_std": ba.std(ddof=1),
                "pearson_mean": pe.mean(),
                "pearson_std": pe.std(ddof=1),
                "calls_per_doc": g["calls_per_doc"].mean(),
            }
        )
    return pd.DataFrame(out, columns=cols)
