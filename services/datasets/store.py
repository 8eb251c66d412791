"""Storing datasets and reading them back: import once per file (by hash), list, stats, items, delete."""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db import datasets as db_datasets
from db.documents import get_or_create_documents
from db.engine import get_session
from db.models import Dataset, DatasetPublic
from services.datasets.items import (
    IMPORT_ADVICE,
    LABEL_KINDS,
    ColumnMapping,
    ImportedItem,
    ImportResult,
    RejectedRow,
    has_kind,
    majority_vote,
)
from services.datasets.readers import read_dataset
from services.errors import InputError
from services.tables import check_size
from services.text import split_sentences

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

MAX_STORED_REJECTED = 1000


class SavedDataset(NamedTuple):
    """The dataset's id, and whether this call created it (False: the same file was imported before)."""

    id: int
    created: bool


# -- storing and reading datasets --------------------------------------------------------------
def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def find_existing(engine: Engine, data: bytes, fmt: str) -> DatasetPublic | None:
    """The dataset already imported from these bytes in this format, if any."""
    with get_session(engine) as session:
        return db_datasets.find_dataset(session=session, sha256=file_sha256(data), format=fmt)


def _label_counts(items: list[ImportedItem]) -> dict[str, int]:
    return {k: sum(has_kind(it, k) for it in items) for k in LABEL_KINDS}


def save_dataset(engine: Engine, *, name: str, data: bytes, result: ImportResult) -> SavedDataset:
    """Store a dataset and its items in one transaction; a file imported before in this format is not re-imported."""
    digest = file_sha256(data)
    for attempt in range(2):
        try:
            return _save(engine, name=name, digest=digest, result=result)
        except IntegrityError:  # a document inserted meanwhile by another writer: the retry finds it
            if attempt:
                raise
            log.info("retrying the import of %s after a concurrent document insert", name)
    raise AssertionError("unreachable")


def _save(engine: Engine, *, name: str, digest: str, result: ImportResult) -> SavedDataset:
    items = result.items
    sentences = [it.sentences if it.sentences is not None else split_sentences(it.candidate) for it in items]
    with get_session(engine) as session:
        existing = db_datasets.find_dataset(session=session, sha256=digest, format=result.format)
        if existing is not None:
            return SavedDataset(existing.id, False)
        ref_ids = get_or_create_documents(session=session, texts=[it.reference for it in items])
        meta = {
            **result.meta,
            "label_counts": _label_counts(items),
            "n_sentences": sum(map(len, sentences)),
            "n_references": len(set(ref_ids)),
        }
        dataset_id = db_datasets.add_dataset(
            session=session,
            data=Dataset(
                name=(name.strip() or "dataset")[:200],
                format=result.format,
                task=result.task,
                sha256=digest,
                label_kinds=list(result.label_kinds),
                meta=meta,
                n_items=len(items),
                n_rejected=len(result.rejected),
                rejected=[{"row": r.row, "reason": r.reason} for r in result.rejected[:MAX_STORED_REJECTED]],
            ),
        )
        db_datasets.add_dataset_items(
            session=session,
            rows=[
                {
                    "dataset_id": dataset_id,
                    "idx": i,
                    "external_id": it.external_id[:200],
                    "reference_id": ref_id,
                    "candidate": it.candidate,
                    "sentences": sents,
                    "human_score": it.human_score,
                    "human_label": it.human_label,
                    "sentence_labels": it.sentence_labels,
                    "extra": it.extra,
                    "system": it.system,
                }
                for i, (it, ref_id, sents) in enumerate(zip(items, ref_ids, sentences, strict=True))
            ],
        )
    log.info(
        "imported dataset %s (%s): %d items, %d rejected", dataset_id, result.format, len(items), len(result.rejected)
    )
    return SavedDataset(dataset_id, True)


def list_datasets(engine: Engine) -> list[DatasetPublic]:
    """Every saved dataset, newest first."""
    with get_session(engine) as session:
        return db_datasets.list_datasets(session=session)


def get_dataset(engine: Engine, dataset_id: int) -> DatasetPublic | None:
    with get_session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        return DatasetPublic.model_validate(ds) if ds else None


def rejected_rows(engine: Engine, dataset_id: int) -> list[RejectedRow]:
    """The rejected rows stored with a dataset (the first MAX_STORED_REJECTED of them)."""
    with get_session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        return [RejectedRow(int(r["row"]), str(r["reason"])) for r in ds.rejected] if ds else []


def dataset_items_frame(engine: Engine, dataset_id: int, limit: int | None = None) -> pd.DataFrame:
    """A dataset's items in import order: id, external_id, candidate, n_sentences, human_score, human_label."""
    import pandas as pd  # only here: a command-line import need not wait for pandas

    with get_session(engine) as session:
        rows = db_datasets.dataset_item_rows(session=session, dataset_id=dataset_id, limit=limit)
    df = pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "external_id": [r[1] for r in rows],
            "candidate": [r[2] for r in rows],
            "n_sentences": [len(r[3] or []) for r in rows],
            "human_score": pd.array([r[4] for r in rows], dtype="Float64"),
            "human_label": pd.array([r[5] for r in rows], dtype="Int64"),
        }
    )
    return df


def system_counts(engine: Engine, dataset_id: int) -> dict[str, int]:
    """Items per system (prompt, model, version) of the dataset; empty when no system column was imported."""
    with get_session(engine) as session:
        return db_datasets.system_counts(session=session, dataset_id=dataset_id)


def delete_dataset(engine: Engine, dataset_id: int) -> bool:
    """Delete a dataset and its items; refuses (InputError) while a batch uses it."""
    with get_session(engine) as session:
        n = db_datasets.count_batches_for_dataset(session=session, dataset_id=dataset_id)
        if n:
            raise InputError(
                f"Dataset #{dataset_id} is used by {n} batch run(s). Delete those batches first; "
                "their results refer to the dataset's items."
            )
        return db_datasets.delete_dataset(session=session, dataset_id=dataset_id)


def dataset_stats(engine: Engine, dataset_id: int) -> dict[str, Any]:
    """Items, sentences, label kinds, mean human score and the share labelled consistent."""
    with get_session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        if ds is None:
            raise InputError(f"Dataset #{dataset_id} does not exist (it was deleted?).")
        agg = db_datasets.dataset_aggregates(session=session, dataset_id=dataset_id)
        # Counted by the database and streamed: a 50,000-item dataset is never held whole for its figures.
        n_sentences = db_datasets.sentence_count(session=session, dataset_id=dataset_id)
        n_labelled = n_consistent = 0
        for labels in db_datasets.sentence_label_lists(session=session, dataset_id=dataset_id):
            for v in labels or []:
                n_labelled += 1
                n_consistent += majority_vote(v)
        label_kinds, n_rejected = list(ds.label_kinds), ds.n_rejected
    return {
        "items": int(agg["items"]),
        "sentences": n_sentences,
        "references": int(agg["references"]),
        "rejected": n_rejected,
        "label_kinds": label_kinds,
        "scored": int(agg["scored"]),
        "score_mean": float(agg["score_mean"]) if agg["score_mean"] is not None else None,
        "score_min": agg["score_min"],
        "score_max": agg["score_max"],
        "labelled": int(agg["labelled"]),
        "share_consistent": float(agg["share_consistent"]) if agg["share_consistent"] is not None else None,
        "sentences_labelled": n_labelled,
        "sentence_share_consistent": n_consistent / n_labelled if n_labelled else None,
    }


def import_file(
    engine: Engine,
    *,
    name: str,
    data: bytes,
    fmt: str,
    mapping: ColumnMapping | None = None,
    task: str = "summarization",
) -> tuple[SavedDataset, ImportResult | None]:
    """Read and save in one step; a file imported before is neither read nor saved again (result None)."""
    check_size(data, name, IMPORT_ADVICE)
    existing = find_existing(engine, data, fmt)
    if existing is not None:
        return SavedDataset(existing.id, False), None
    result = read_dataset(data, fmt, mapping, task=task)
    return save_dataset(engine, name=name, data=data, result=result), result
