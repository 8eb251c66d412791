"""Queries of the distillation set: labelled items with the judgements batches made of them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlmodel import Session, col, select

from db.models import BatchItem, Dataset, DatasetItem, Document


def batch_item_rows(*, session: Session, batch_id: int) -> list[tuple[BatchItem, DatasetItem, Document, str]]:
    """Each item of the batch with its dataset item, reference document and dataset name, in dataset order."""
    return session.exec(  # type: ignore[return-value]
        select(BatchItem, DatasetItem, Document, Dataset.name)
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .join(Document, Document.id == DatasetItem.reference_id)
        .join(Dataset, Dataset.id == DatasetItem.dataset_id)
        .where(BatchItem.batch_id == batch_id)
        .order_by(DatasetItem.idx)
    ).all()


def labelled_item_rows(
    *, session: Session, dataset_ids: Iterable[int], labels: Sequence[int]
) -> list[tuple[DatasetItem, Document, str]]:
    """The items of these datasets whose human label is one of `labels`, with their document and dataset name."""
    return session.exec(  # type: ignore[return-value]
        select(DatasetItem, Document, Dataset.name)
        .join(Document, Document.id == DatasetItem.reference_id)
        .join(Dataset, Dataset.id == DatasetItem.dataset_id)
        .where(col(DatasetItem.dataset_id).in_(list(dataset_ids)), col(DatasetItem.human_label).in_(list(labels)))
    ).all()
