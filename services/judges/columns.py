"""Score columns as judges: a number per item that something outside the app computed (another evaluator,
a metric), imported from a file and stored with the dataset, or a local baseline metric already stored.

A column's prediction is its value clipped to [0, 1]; its verdict "consistent" is a value of 0.5 or more.
It costs nothing here: it was computed elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db import judges as db
from db.engine import get_session
from services import tables
from services.errors import InputError

PREFIX = "column:"
MAX_NAME = 40 - len(PREFIX)
THRESHOLD = 0.5


@dataclass(frozen=True)
class ImportedColumn:
    name: str  # the stored metric, "column:NAME"
    n_matched: int
    n_unmatched: int  # rows whose id is not an item of the dataset
    n_missing: int  # matched rows without a number


def list_columns(engine: Engine, dataset_id: int) -> list[str]:
    """The score columns stored for the dataset's items (imported ones and local baseline metrics)."""
    with get_session(engine) as session:
        return db.score_columns(session=session, dataset_id=dataset_id)


def column_frame(engine: Engine, dataset_id: int, metric: str) -> pd.DataFrame:
    """A score column in the shape of data.judge_frame (no cost)."""
    with get_session(engine) as session:
        values = db.column_values(session=session, dataset_id=dataset_id, metric=metric)
        items = [h.item_id for h in db.human_rows(session=session, dataset_id=dataset_id)]
    v = np.array([np.nan if values.get(i) is None else float(values[i]) for i in items], dtype=float)
    has = np.isfinite(v)
    zeros = np.zeros(len(items), dtype=int)
    return pd.DataFrame(
        {
            "item_id": items,
            "status": np.where(has, "done", "failed"),
            "score": v,
            "n_sentences": zeros,
            "n_unknown": zeros,
            "calls": zeros,
            "cache_hits": zeros,
            "prompt_tokens": zeros,
            "completion_tokens": zeros,
            "latency_ms": np.zeros(len(items)),
            "prediction": np.where(has, np.clip(v, 0.0, 1.0), np.nan),
            "verdict": np.where(has, (v >= THRESHOLD).astype(float), np.nan),
        }
    )


def _rows(data: bytes, filename: str) -> list[dict]:
    # the one table reader: the upload limit, a bounded number of columns, the line of the first bad row
    tables.check_size(data, filename, tables.IMPORT_ADVICE)
    return tables.read_rows(data, filename)


def _named(columns: list[str], shown: int = 5) -> str:
    """A few of a file's columns, for a message (a file may have up to MAX_COLUMNS of them)."""
    names = ", ".join(repr(c) for c in columns[:shown])
    return names + (f" and {len(columns) - shown:,} more" if len(columns) > shown else "")


def import_column(
    engine: Engine, dataset_id: int, *, name: str, data: bytes, filename: str, id_column: str = "id", score_column: str
) -> ImportedColumn:
    """Store one column of a CSV/JSONL file (rows with an id of the dataset's items) as a judge's scores."""
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise InputError(f"Give the column a name of 1 to {MAX_NAME} characters.")
    rows = _rows(data, filename)
    if not rows:
        raise InputError(f"{filename} has no rows of named fields.")
    if id_column not in rows[0] or score_column not in rows[0]:
        raise InputError(
            f"{filename} needs the columns {id_column!r} and {score_column!r}; it has {_named(list(rows[0]))}."
        )
    with get_session(engine) as session:
        ids = db.external_ids(session=session, dataset_id=dataset_id)
    if not ids:
        raise InputError(f"Dataset {dataset_id} has no items.")
    rows_of: dict[str, list[int]] = {}
    for k, r in enumerate(rows, 1):
        rows_of.setdefault(str(r.get(id_column)), []).append(k)
    repeated = [(i, ks) for i, ks in rows_of.items() if len(ks) > 1]
    if repeated:  # two scores for one item: neither may silently win
        shown = "; ".join(f"{i!r} on rows {', '.join(map(str, ks[:10]))}" for i, ks in repeated[:3])
        more = f" (and {len(repeated) - 3} more)" if len(repeated) > 3 else ""
        raise InputError(f"{filename}: ids repeat in {id_column!r}: {shown}{more}. Give each item one row.")
    out, unmatched, missing = [], 0, 0
    for k, r in enumerate(rows, 1):
        item = ids.get(str(r.get(id_column)))
        if item is None:
            unmatched += 1
            continue
        value = r.get(score_column)
        if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
            missing += 1
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(f"Row {k}: {score_column} = {value!r} is not a number.") from None
        if not 0.0 <= number <= 1.0:
            raise InputError(f"Row {k}: {score_column} = {number:g} is outside [0, 1]; rescale the column first.")
        out.append({"item_id": item, "metric": PREFIX + name, "value": number})
    if not out:
        raise InputError(f"No row of {filename} matches an item of the dataset by {id_column!r}.")
    with get_session(engine) as session:
        db.replace_column(session=session, item_ids=list(ids.values()), metric=PREFIX + name, rows=out)
    return ImportedColumn(PREFIX + name, len(out), unmatched, missing)
