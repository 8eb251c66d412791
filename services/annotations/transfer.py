"""Export and import of a dataset's labels: JSONL or CSV, one row per item, sentence and annotator."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.engine import Engine

from db import annotations as queries
from db import datasets as db_datasets
from db.annotations import ItemSentences
from db.engine import get_session
from db.models import utcnow
from services import tables
from services.annotations.annotators import clean_name, get_or_create_annotator
from services.datasets import IMPORT_ADVICE, RejectedRow, parse_label
from services.errors import InputError
from services.export import records_csv, restore

log = logging.getLogger(__name__)

ExportFormat = Literal["jsonl", "csv"]
EXPORT_COLUMNS = (
    "dataset",
    "external_id",
    "item",
    "sentence_idx",
    "sentence",
    "annotator",
    "label",
    "note",
    "created_at",
    "updated_at",
)


def _iso(t: datetime | None) -> str:
    return t.isoformat() if t else ""


def export_labels(engine: Engine, dataset_id: int, fmt: ExportFormat = "jsonl") -> bytes:
    """The dataset's labels, one row per item, sentence and annotator (label 1 consistent / 0 inconsistent)."""
    with get_session(engine) as session:
        dataset = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        if dataset is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        name = dataset.name
        rows = queries.label_rows(session=session, dataset_id=dataset_id)
    records = [
        {
            "dataset": name,
            "external_id": r.external_id,
            "item": r.idx,
            "sentence_idx": r.sentence_idx,
            "sentence": r.sentence,
            "annotator": r.annotator,
            "label": r.label,
            "note": r.note or "",
            "created_at": _iso(r.created_at),
            "updated_at": _iso(r.updated_at),
        }
        for r in rows
    ]
    if fmt == "jsonl":
        return "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in records).encode()
    if fmt == "csv":
        return records_csv(records, list(EXPORT_COLUMNS)).encode()
    raise InputError(f"Unknown export format {fmt!r}; use jsonl or csv.")


class _Reject(Exception):
    pass


def _field(rec: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = rec.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise _Reject(f"missing field '{key}'")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Reject(f"'{key}' is not text or a number")
    return str(value).strip()


def _int_field(rec: dict[str, Any], key: str, *, required: bool = True) -> int | None:
    raw = _field(rec, key, required=required)
    if raw is None:
        return None
    try:
        x = float(raw)
    except ValueError:
        raise _Reject(f"'{key}' ({raw!r}) is not a whole number") from None
    if not x.is_integer() or x < 0:
        raise _Reject(f"'{key}' ({raw!r}) is not a whole number of 0 or more")
    return int(x)


def _when(raw: Any) -> datetime | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        return datetime.fromisoformat(raw.strip())
    except ValueError:
        return None


def import_labels(
    engine: Engine, dataset_id: int, data: bytes, fmt: ExportFormat = "jsonl"
) -> tuple[int, list[RejectedRow]]:
    """Read labels exported by `export_labels` (or written by hand) back; returns (labels stored, rejected rows).

    Items are matched by external_id (and by `item`, the position, when an external_id is not unique),
    sentences by index; a row whose sentence text differs from the dataset's is rejected. Annotators missing
    here are created by name. A label replaces the same annotator's label of that sentence.
    """
    text = tables.decode(data, advice=IMPORT_ADVICE)
    if fmt == "jsonl":
        records = tables.json_records(text)
    elif fmt == "csv":
        _, rows = tables.records(text, "csv")
        # our own CSV export quoted formula-like cells: take the quote off again
        records = (
            (n, {k: restore(v) for k, v in obj.items()} if isinstance(obj, dict) else obj, err) for n, obj, err in rows
        )
    else:
        raise InputError(f"Unknown import format {fmt!r}; use jsonl or csv.")
    with get_session(engine) as session:
        if db_datasets.get_dataset(session=session, dataset_id=dataset_id) is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        item_rows = queries.items_with_sentences(session=session, dataset_id=dataset_id)
    by_external: dict[str, list[ItemSentences]] = defaultdict(list)
    for r in item_rows:
        by_external[str(r.external_id)].append(r)

    rejected: list[RejectedRow] = []
    good: dict[tuple[int, str, int], dict[str, Any]] = {}  # (item, annotator, sentence) -> row
    first_row: dict[tuple[int, str, int], int] = {}  # a repeat is rejected, naming the row that gave it first
    for row_no, rec, error in records:
        try:
            if error:
                raise _Reject(error)
            if not isinstance(rec, dict):
                raise _Reject("not a JSON object")
            external_id = _field(rec, "external_id")
            position = _int_field(rec, "item", required=False)
            sentence_idx = _int_field(rec, "sentence_idx")
            name = _field(rec, "annotator")
            try:
                label = parse_label(rec.get("label"))
                name = clean_name(name or "")
            except (ValueError, InputError) as exc:
                raise _Reject(str(exc)) from None
            if label is None:
                raise _Reject("missing field 'label'")
            matches = by_external.get(str(external_id), [])
            if len(matches) > 1 and position is not None:
                matches = [m for m in matches if m.idx == position]
            if not matches:
                raise _Reject(f"no item with external_id {external_id!r} in this dataset")
            if len(matches) > 1:
                raise _Reject(f"external_id {external_id!r} names {len(matches)} items; give 'item' (the position)")
            item_id, sentences = matches[0].id, matches[0].sentences or []
            assert sentence_idx is not None
            if sentence_idx >= len(sentences):
                raise _Reject(f"item {external_id!r} has {len(sentences)} sentence(s); no sentence_idx {sentence_idx}")
            given = _field(rec, "sentence", required=False)
            if given is not None and " ".join(given.split()) != " ".join(str(sentences[sentence_idx]).split()):
                raise _Reject(
                    f"the sentence text differs from sentence {sentence_idx} of item {external_id!r} "
                    f"(file: {given[:60]!r}, dataset: {str(sentences[sentence_idx])[:60]!r})"
                )
            key = (item_id, name, sentence_idx)
            if first_row.setdefault(key, row_no) != row_no:
                raise _Reject(
                    f"annotator {name!r} labels sentence {sentence_idx} of item {external_id!r} again "
                    f"(first on row {first_row[key]}); keep one row"
                )
            note = rec.get("note")
            good[key] = {
                "item_id": item_id,
                "name": name,
                "sentence_idx": sentence_idx,
                "label": label,
                "note": str(note).strip() if note is not None else "",
                "created_at": _when(rec.get("created_at")),
                "updated_at": _when(rec.get("updated_at")),
            }
        except _Reject as exc:
            rejected.append(RejectedRow(row_no, str(exc)))
    if not good:
        return 0, rejected
    ids = {n: get_or_create_annotator(engine, n).id for n in sorted({g["name"] for g in good.values()})}
    now = utcnow()
    rows = [
        {
            "run_id": None,
            "round_idx": None,
            "dataset_item_id": g["item_id"],
            "annotator_id": ids[g["name"]],
            "sentence_idx": g["sentence_idx"],
            "label": g["label"],
            "note": g["note"],
            "created_at": g["created_at"] or now,
            "updated_at": g["updated_at"] or g["created_at"] or now,
        }
        for g in good.values()
    ]
    with get_session(engine) as session:
        queries.upsert_labels(session=session, rows=rows, by_item=True, keep_note=False)
        queries.refresh_assignments(session=session, pairs={(r["dataset_item_id"], r["annotator_id"]) for r in rows})
    log.info("imported %d label(s) into dataset %s, %d row(s) rejected", len(rows), dataset_id, len(rejected))
    return len(rows), rejected
