"""Datasets: imported files and their items (reference documents are shared, see db.documents)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, insert, update
from sqlmodel import Session, col, delete, select

from db.models import Batch, Dataset, DatasetItem, DatasetPublic


def find_dataset(*, session: Session, sha256: str, format: str) -> DatasetPublic | None:
    """The dataset imported from a file with this hash in this format, if any."""
    row = session.exec(
        select(Dataset).where(Dataset.sha256 == sha256, Dataset.format == format).order_by(col(Dataset.id))
    ).first()
    return DatasetPublic.model_validate(row) if row else None


def add_dataset(*, session: Session, data: Dataset) -> int:
    """Store a new dataset row; returns its id."""
    session.add(data)
    session.flush()
    return data.id  # type: ignore[return-value]


def add_dataset_items(*, session: Session, rows: list[dict[str, Any]]) -> None:
    """Bulk insert of dataset items (dicts with every DatasetItem column but id)."""
    for i in range(0, len(rows), 2000):
        session.execute(insert(DatasetItem), rows[i : i + 2000])


def reference_count(*, session: Session, dataset_id: int) -> int:
    """The number of distinct reference documents of a dataset's items."""
    q = select(func.count(func.distinct(DatasetItem.reference_id))).where(DatasetItem.dataset_id == dataset_id)
    return int(session.exec(q).one())


def list_datasets(*, session: Session) -> list[DatasetPublic]:
    """Every dataset, newest first."""
    rows = session.exec(select(Dataset).order_by(col(Dataset.id).desc())).all()
    return [DatasetPublic.model_validate(r) for r in rows]


def get_dataset(*, session: Session, dataset_id: int) -> Dataset | None:
    return session.get(Dataset, dataset_id)


def set_meta(*, session: Session, dataset_id: int, meta: dict[str, Any]) -> None:
    session.exec(update(Dataset.__table__).where(Dataset.id == dataset_id).values(meta=meta))  # type: ignore[call-overload]


def item_ids(*, session: Session, dataset_id: int, limit: int | None = None) -> list[int]:
    """The ids of a dataset's first `limit` items (all when None), in import order."""
    q = select(DatasetItem.id).where(DatasetItem.dataset_id == dataset_id).order_by(col(DatasetItem.idx))
    if limit is not None:
        q = q.limit(limit)
    return list(session.exec(q).all())  # type: ignore[arg-type]


def dataset_item_rows(*, session: Session, dataset_id: int, limit: int | None = None) -> list[Any]:
    """(id, external_id, candidate, sentences, human_score, human_label, sentence_labels) rows in import order."""
    q = (
        select(
            DatasetItem.id,
            DatasetItem.external_id,
            DatasetItem.candidate,
            DatasetItem.sentences,
            DatasetItem.human_score,
            DatasetItem.human_label,
            DatasetItem.sentence_labels,
        )
        .where(DatasetItem.dataset_id == dataset_id)
        .order_by(col(DatasetItem.idx))
    )
    if limit is not None:
        q = q.limit(limit)
    return list(session.exec(q).all())


def sentence_count(*, session: Session, dataset_id: int) -> int:
    """The number of candidate sentences over a dataset's items, counted by the database."""
    n = session.exec(
        select(func.sum(func.json_array_length(DatasetItem.sentences))).where(DatasetItem.dataset_id == dataset_id)
    ).one()
    return int(n or 0)


def sentence_label_lists(*, session: Session, dataset_id: int, chunk: int = 2000) -> Iterator[Any]:
    """The items' per-sentence labels, streamed `chunk` rows at a time (SQL NULLs left out by the database)."""
    q = (
        select(DatasetItem.sentence_labels)
        .where(DatasetItem.dataset_id == dataset_id, DatasetItem.sentence_labels.is_not(None))
        .execution_options(yield_per=chunk)
    )
    yield from session.exec(q)


def dataset_aggregates(*, session: Session, dataset_id: int) -> dict[str, Any]:
    """Counts and means over a dataset's items, computed by the database."""
    row = session.exec(
        select(
            func.count(),
            func.count(func.distinct(DatasetItem.reference_id)),
            func.count(DatasetItem.human_score),
            func.avg(DatasetItem.human_score),
            func.min(DatasetItem.human_score),
            func.max(DatasetItem.human_score),
            func.count(DatasetItem.human_label),
            func.avg(DatasetItem.human_label),
        ).where(DatasetItem.dataset_id == dataset_id)
    ).one()
    keys = ("items", "references", "scored", "score_mean", "score_min", "score_max", "labelled", "share_consistent")
    return dict(zip(keys, row, strict=True))


def count_batches_for_dataset(*, session: Session, dataset_id: int) -> int:
    return int(session.exec(select(func.count()).select_from(Batch).where(Batch.dataset_id == dataset_id)).one())


def delete_dataset(*, session: Session, dataset_id: int) -> bool:
    """Delete a dataset and its items (documents stay: they may be shared). The caller checks batches first."""
    ds = session.get(Dataset, dataset_id)
    if ds is None:
        return False
    session.exec(delete(DatasetItem).where(DatasetItem.dataset_id == dataset_id))  # type: ignore[call-overload]
    session.delete(ds)
    return True


def item_systems(*, session: Session, dataset_id: int) -> list[tuple[int, str | None, int]]:
    """(item id, system, reference id) of every item of the dataset, in import order."""
    rows = session.exec(
        select(DatasetItem.id, DatasetItem.system, DatasetItem.reference_id)
        .where(DatasetItem.dataset_id == dataset_id)
        .order_by(col(DatasetItem.idx), col(DatasetItem.id))
    ).all()
    return [(int(r[0]), r[1], int(r[2])) for r in rows]  # type: ignore[arg-type]


def system_counts(*, session: Session, dataset_id: int) -> dict[str, int]:
    """Items per system of the dataset (items without a system are not counted)."""
    rows = session.exec(
        select(DatasetItem.system, func.count())
        .where(DatasetItem.dataset_id == dataset_id, col(DatasetItem.system).is_not(None))
        .group_by(DatasetItem.system)
        .order_by(DatasetItem.system)
    ).all()
    return {str(s): int(n) for s, n in rows}
