"""Datasets: imported files and their items (reference documents are shared, see db.documents)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, insert, text, update
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


# Labelled sentences and those whose raters' majority says consistent (more than half; a tie is not), counted by
# the database from each item's list of {rater: 0/1} votes (services.datasets.items.majority_vote's rule):
# parsing every list in Python took 4 s at 100,000 items. A list that is not a JSON array counts nothing.
_LABEL_TOTALS: dict[str, str] = {
    "sqlite": """
SELECT COUNT(*),
       COALESCE(SUM(CASE WHEN 2 * (SELECT COALESCE(SUM(v.value), 0) FROM json_each(l.value) v)
                              > (SELECT COUNT(*) FROM json_each(l.value) v) THEN 1 ELSE 0 END), 0)
FROM dataset_item di, json_each(di.sentence_labels) l
WHERE di.dataset_id = :d AND json_type(di.sentence_labels) = 'array'
""",
    "postgresql": """
SELECT COUNT(*), COALESCE(SUM(CASE WHEN 2 * COALESCE(x.yes, 0) > x.n THEN 1 ELSE 0 END), 0)
FROM dataset_item di
CROSS JOIN LATERAL json_array_elements(
    CASE WHEN json_typeof(di.sentence_labels) = 'array' THEN di.sentence_labels END) l(value)
CROSS JOIN LATERAL (
    SELECT SUM(CASE v.value WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE v.value::numeric END) AS yes, COUNT(*) AS n
    FROM json_each_text(CASE WHEN json_typeof(l.value) = 'object' THEN l.value END) v) x
WHERE di.dataset_id = :d
""",
}


def sentence_label_totals(*, session: Session, dataset_id: int) -> tuple[int, int] | None:
    """(labelled sentences, those with a consistent majority) over a dataset's items, counted by the database;
    None on a database without these JSON functions (the caller counts from sentence_label_lists)."""
    sql = _LABEL_TOTALS.get(session.get_bind().dialect.name)
    if sql is None:
        return None
    n, yes = session.connection().execute(text(sql), {"d": dataset_id}).one()
    return int(n or 0), int(yes or 0)


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
