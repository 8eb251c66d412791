"""Report queries: the stored items a report shows as worked examples (keyword-only, `*, session`, typed results)."""

from __future__ import annotations

from sqlmodel import Session, select

from db.models import BatchItem, DatasetItem, Document


def batch_examples(*, session: Session, batch_id: int, limit: int) -> list[tuple[BatchItem, DatasetItem, str]]:
    """Finished items of a batch with their dataset item and document text: those that went through rewrite
    rounds first (they show the most), then the ones flagged hardest."""
    rows = session.exec(
        select(BatchItem, DatasetItem, Document.text)
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .join(Document, Document.id == DatasetItem.reference_id)
        .where(BatchItem.batch_id == batch_id, BatchItem.status == "done")
        .order_by(BatchItem.n_rounds.desc(), BatchItem.score, DatasetItem.idx)
        .limit(limit)
    ).all()
    return [(bi, di, text) for bi, di, text in rows]


def item_with_document(*, session: Session, item_id: int) -> tuple[DatasetItem, Document]:
    """A dataset item and the document it is judged against."""
    di = session.get(DatasetItem, item_id)
    return di, session.get(Document, di.reference_id)  # type: ignore[union-attr, return-value]


def batch_item(*, session: Session, batch_id: int, item_id: int) -> BatchItem | None:
    """A batch's record of one dataset item."""
    return session.exec(select(BatchItem).where(BatchItem.batch_id == batch_id, BatchItem.item_id == item_id)).first()
