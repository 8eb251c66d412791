"""Annotation queries: annotators, sentence labels, assignments, and the dataset and batch rows they read.

Keyword-only, `*, session`, typed results. Writing a label is an upsert on the annotator's own row
(INSERT ... ON CONFLICT DO UPDATE), so two annotators labelling the same sentence at once both keep theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, insert, update
from sqlmodel import Session, col, select

from db.engine import dialect_insert
from db.models import (
    AnnotationAssignment,
    Annotator,
    AnnotatorPublic,
    BatchItem,
    DatasetItem,
    Document,
    SentenceLabel,
    SentenceLabelPublic,
    utcnow,
)


@dataclass(frozen=True)
class QueueEntry:
    """One item assigned to an annotator."""

    item_id: int
    idx: int
    external_id: str
    status: str


@dataclass(frozen=True)
class AnnotationItem:
    """A dataset item as the annotator sees it."""

    id: int
    dataset_id: int
    idx: int
    external_id: str
    reference: str
    candidate: str
    sentences: list[str]


@dataclass(frozen=True)
class ItemSentences:
    """A dataset item's id, position, external id and sentences."""

    id: int
    idx: int
    external_id: str
    sentences: list[str]


@dataclass(frozen=True)
class LabelRow:
    """One label of a dataset item's sentence, with the item and the annotator's name."""

    item_id: int
    idx: int
    external_id: str
    sentences: list[str]
    sentence_idx: int
    annotator: str
    label: int
    note: str
    created_at: datetime | None
    updated_at: datetime | None
    annotator_id: int

    @property
    def sentence(self) -> str:
        """The labelled sentence's text ("" when the item has fewer sentences)."""
        sentences = self.sentences or []
        return sentences[self.sentence_idx] if self.sentence_idx < len(sentences) else ""


# -- annotators ----------------------------------------------------------------------------------
def insert_annotator(*, session: Session, name: str) -> None:
    """A new annotator with a fresh token; IntegrityError when the name is taken."""
    session.exec(insert(Annotator.__table__).values(**Annotator(name=name).model_dump(exclude={"id"})))  # type: ignore[call-overload]


def insert_annotator_if_missing(*, session: Session, name: str) -> None:
    """A new annotator with this name unless one exists already (safe when two callers race)."""
    session.exec(  # type: ignore[call-overload]
        dialect_insert(session.connection())(Annotator.__table__).on_conflict_do_nothing(),
        params=[Annotator(name=name).model_dump(exclude={"id"})],
    )


def _annotator(session: Session, where: Any) -> AnnotatorPublic | None:
    row = session.exec(select(Annotator.id, Annotator.name, Annotator.created_at).where(where)).first()
    return AnnotatorPublic(id=row[0], name=row[1], created_at=row[2]) if row else None


def annotator_by_id(*, session: Session, annotator_id: int) -> AnnotatorPublic | None:
    return _annotator(session, Annotator.id == annotator_id)


def annotator_by_name(*, session: Session, name: str) -> AnnotatorPublic | None:
    return _annotator(session, Annotator.name == name)


def annotator_by_token(*, session: Session, token: str) -> AnnotatorPublic | None:
    return _annotator(session, Annotator.token == token)


def annotator_token(*, session: Session, annotator_id: int) -> str | None:
    return session.exec(select(Annotator.token).where(Annotator.id == annotator_id)).first()


def set_annotator_token(*, session: Session, annotator_id: int, token: str) -> None:
    session.exec(update(Annotator.__table__).where(Annotator.id == annotator_id).values(token=token))  # type: ignore[call-overload]


def list_annotators(*, session: Session) -> list[AnnotatorPublic]:
    """Every annotator, by name."""
    rows = session.exec(select(Annotator.id, Annotator.name, Annotator.created_at).order_by(Annotator.name)).all()
    return [AnnotatorPublic(id=r[0], name=r[1], created_at=r[2]) for r in rows]


def annotator_names(*, session: Session, annotator_ids: Iterable[int]) -> dict[int, str]:
    """The names of those of these annotators that exist."""
    rows = session.exec(select(Annotator.id, Annotator.name).where(col(Annotator.id).in_(list(annotator_ids)))).all()
    return {r[0]: r[1] for r in rows if r[0] is not None}


# -- labels --------------------------------------------------------------------------------------
def _label_target(run_id: int | None, round_idx: int | None, dataset_item_id: int | None) -> list[Any]:
    if dataset_item_id is not None:
        return [SentenceLabel.dataset_item_id == dataset_item_id]
    return [SentenceLabel.run_id == run_id, SentenceLabel.round_idx == round_idx]


def upsert_labels(*, session: Session, rows: list[dict[str, Any]], by_item: bool, keep_note: bool) -> None:
    """INSERT ... ON CONFLICT DO UPDATE on each annotator's own row: the label (and note), never created_at.

    `by_item`: the rows label dataset items (else runs' rounds); `keep_note` leaves a stored note as it is.
    """
    ins = dialect_insert(session.connection())(SentenceLabel.__table__)
    set_ = {"label": ins.excluded.label, "updated_at": ins.excluded.updated_at}
    if not keep_note:
        set_["note"] = ins.excluded.note
    conflict = ["annotator_id", "dataset_item_id"] if by_item else ["annotator_id", "run_id", "round_idx"]
    session.exec(ins.on_conflict_do_update(index_elements=[*conflict, "sentence_idx"], set_=set_), params=rows)  # type: ignore[call-overload]


def write_label(*, session: Session, row: dict[str, Any], keep_note: bool) -> SentenceLabelPublic:
    """Upsert one label (a row of SentenceLabel's columns), then refresh its assignment; returns the stored label.

    The upsert comes first: on SQLite it takes the write lock before any read, so a concurrent writer waits
    (busy_timeout) instead of failing on a stale read snapshot.
    """
    item_id = row["dataset_item_id"]
    upsert_labels(session=session, rows=[row], by_item=item_id is not None, keep_note=keep_note)
    if item_id is not None:
        refresh_assignments(session=session, pairs={(item_id, row["annotator_id"])})
    stored = session.exec(
        select(SentenceLabel).where(
            *_label_target(row["run_id"], row["round_idx"], item_id),
            SentenceLabel.annotator_id == row["annotator_id"],
            SentenceLabel.sentence_idx == row["sentence_idx"],
        )
    ).one()
    return SentenceLabelPublic.model_validate(stored)


def labels(
    *,
    session: Session,
    run_id: int | None = None,
    round_idx: int | None = None,
    dataset_item_id: int | None = None,
    annotator_id: int | None = None,
) -> list[SentenceLabelPublic]:
    """Every label of a target, a run's round or a dataset item (or one annotator's), by sentence then annotator."""
    q = select(SentenceLabel).where(*_label_target(run_id, round_idx, dataset_item_id))
    if annotator_id is not None:
        q = q.where(SentenceLabel.annotator_id == annotator_id)
    rows = session.exec(q.order_by(col(SentenceLabel.sentence_idx), col(SentenceLabel.annotator_id))).all()
    return [SentenceLabelPublic.model_validate(r) for r in rows]


def label_rows(*, session: Session, dataset_id: int) -> list[LabelRow]:
    """Every label of the dataset's items, in item order, then by sentence and annotator name."""
    rows = session.exec(
        select(
            DatasetItem.id,
            DatasetItem.idx,
            DatasetItem.external_id,
            DatasetItem.sentences,
            SentenceLabel.sentence_idx,
            Annotator.name,
            SentenceLabel.label,
            SentenceLabel.note,
            SentenceLabel.created_at,
            SentenceLabel.updated_at,
            SentenceLabel.annotator_id,
        )
        .join(DatasetItem, col(DatasetItem.id) == SentenceLabel.dataset_item_id)
        .join(Annotator, col(Annotator.id) == SentenceLabel.annotator_id)
        .where(DatasetItem.dataset_id == dataset_id)
        .order_by(col(DatasetItem.idx), col(DatasetItem.id), col(SentenceLabel.sentence_idx), col(Annotator.name))
    ).all()
    return [LabelRow(*r) for r in rows]


# -- assignments ---------------------------------------------------------------------------------
def refresh_assignments(*, session: Session, pairs: set[tuple[int, int]]) -> None:
    """Mark (item, annotator) assignments done once every sentence has that annotator's label (or pending)."""
    if not pairs:
        return
    items = {i for i, _ in pairs}
    sizes = dict(
        session.exec(select(DatasetItem.id, DatasetItem.sentences).where(col(DatasetItem.id).in_(items))).all()
    )
    counts = {
        (r[0], r[1]): r[2]
        for r in session.exec(
            select(SentenceLabel.dataset_item_id, SentenceLabel.annotator_id, func.count())
            .where(col(SentenceLabel.dataset_item_id).in_(items))
            .group_by(col(SentenceLabel.dataset_item_id), col(SentenceLabel.annotator_id))
        ).all()
    }
    now = utcnow()
    a = AnnotationAssignment
    for item_id, annotator_id in pairs:
        done = counts.get((item_id, annotator_id), 0) >= len(sizes.get(item_id) or [])
        status = "done" if done else "pending"
        session.exec(  # type: ignore[call-overload]
            update(a.__table__)
            .where(a.dataset_item_id == item_id, a.annotator_id == annotator_id, a.status != status)
            .values(status=status, done_at=now if done else None)
        )


def assignment_pairs(*, session: Session, dataset_id: int) -> list[tuple[int, int]]:
    """The dataset's (item, annotator) assignments."""
    rows = session.exec(
        select(AnnotationAssignment.dataset_item_id, AnnotationAssignment.annotator_id).where(
            AnnotationAssignment.dataset_id == dataset_id
        )
    ).all()
    return [(r[0], r[1]) for r in rows]


def insert_assignments(*, session: Session, rows: list[dict[str, Any]]) -> None:
    """Add assignments; a pair assigned already (by a concurrent call, say) is skipped by the unique key."""
    session.exec(  # type: ignore[call-overload]
        dialect_insert(session.connection())(AnnotationAssignment.__table__).on_conflict_do_nothing(), params=rows
    )


def count_assignments(*, session: Session, dataset_id: int) -> int:
    q = select(func.count()).select_from(AnnotationAssignment).where(AnnotationAssignment.dataset_id == dataset_id)
    return int(session.exec(q).one())


def queue(*, session: Session, dataset_id: int, annotator_id: int) -> list[QueueEntry]:
    """An annotator's assignments in a dataset, in dataset order."""
    rows = session.exec(
        select(DatasetItem.id, DatasetItem.idx, DatasetItem.external_id, AnnotationAssignment.status)
        .join(AnnotationAssignment, col(AnnotationAssignment.dataset_item_id) == DatasetItem.id)
        .where(AnnotationAssignment.dataset_id == dataset_id, AnnotationAssignment.annotator_id == annotator_id)
        .order_by(col(DatasetItem.idx), col(DatasetItem.id))
    ).all()
    return [QueueEntry(r[0], r[1], r[2], r[3]) for r in rows]  # type: ignore[arg-type]


def progress_counts(*, session: Session, dataset_id: int, annotator_id: int | None = None) -> tuple[int, int, int]:
    """(items assigned, items done, labels written) in a dataset, for one annotator or everyone together."""
    a = AnnotationAssignment
    q = select(func.count(), func.coalesce(func.sum(case((col(a.status) == "done", 1), else_=0)), 0))
    q = q.select_from(a).where(a.dataset_id == dataset_id)
    lq = (
        select(func.count())
        .select_from(SentenceLabel)
        .join(DatasetItem, col(DatasetItem.id) == SentenceLabel.dataset_item_id)
        .where(DatasetItem.dataset_id == dataset_id)
    )
    if annotator_id is not None:
        q = q.where(a.annotator_id == annotator_id)
        lq = lq.where(SentenceLabel.annotator_id == annotator_id)
    assigned, done = session.exec(q).one()
    n_labels = session.exec(lq).one()
    return int(assigned), int(done), int(n_labels)


def assignment_counts_by_annotator(*, session: Session, dataset_id: int) -> list[tuple[str, str, int]]:
    """(annotator name, status, assignments) for the dataset."""
    a = AnnotationAssignment
    rows = session.exec(
        select(Annotator.name, a.status, func.count())
        .join(Annotator, col(Annotator.id) == a.annotator_id)
        .where(a.dataset_id == dataset_id)
        .group_by(col(Annotator.name), col(a.status))
    ).all()
    return [(r[0], r[1], int(r[2])) for r in rows]


def label_counts_by_annotator(*, session: Session, dataset_id: int) -> list[tuple[str, int]]:
    """(annotator name, labels written) for the dataset's items."""
    rows = session.exec(
        select(Annotator.name, func.count())
        .select_from(SentenceLabel)
        .join(Annotator, col(Annotator.id) == SentenceLabel.annotator_id)
        .join(DatasetItem, col(DatasetItem.id) == SentenceLabel.dataset_item_id)
        .where(DatasetItem.dataset_id == dataset_id)
        .group_by(col(Annotator.name))
    ).all()
    return [(r[0], int(r[1])) for r in rows]


def datasets_of(*, session: Session, annotator_id: int) -> list[int]:
    """The datasets where an annotator has assignments, newest first."""
    rows = session.exec(
        select(AnnotationAssignment.dataset_id)
        .where(AnnotationAssignment.annotator_id == annotator_id)
        .distinct()
        .order_by(col(AnnotationAssignment.dataset_id).desc())
    ).all()
    return list(rows)


# -- datasets and their items --------------------------------------------------------------------
def items_with_sentences(*, session: Session, dataset_id: int) -> list[ItemSentences]:
    """The dataset's items with their sentences."""
    rows = session.exec(
        select(DatasetItem.id, DatasetItem.idx, DatasetItem.external_id, DatasetItem.sentences).where(
            DatasetItem.dataset_id == dataset_id
        )
    ).all()
    return [ItemSentences(*r) for r in rows]  # type: ignore[arg-type]


def sentence_counts(*, session: Session, dataset_id: int) -> dict[int, int]:
    """Item id -> number of sentences, for the dataset's items."""
    return {i.id: len(i.sentences or []) for i in items_with_sentences(session=session, dataset_id=dataset_id)}


def item_sentence_count(*, session: Session, item_id: int) -> int | None:
    """The number of sentences of a dataset item, or None when there is no such item."""
    row = session.exec(select(DatasetItem.id, DatasetItem.sentences).where(DatasetItem.id == item_id)).first()
    return None if row is None else len(row[1] or [])


def item_place(*, session: Session, item_id: int) -> tuple[int, int] | None:
    """(position, id) of a dataset item: its place in dataset order."""
    row = session.exec(select(DatasetItem.idx, DatasetItem.id).where(DatasetItem.id == item_id)).first()
    return (row[0], row[1]) if row is not None and row[1] is not None else None


def get_item(*, session: Session, item_id: int) -> AnnotationItem | None:
    r = session.exec(
        select(
            DatasetItem.id,
            DatasetItem.dataset_id,
            DatasetItem.idx,
            DatasetItem.external_id,
            Document.text,
            DatasetItem.candidate,
            DatasetItem.sentences,
        )
        .join(Document, col(Document.id) == DatasetItem.reference_id)
        .where(DatasetItem.id == item_id)
    ).first()
    return AnnotationItem(r[0], r[1], r[2], r[3], r[4], r[5], list(r[6] or [])) if r else None  # type: ignore[arg-type]


def done_results(
    *, session: Session, batch_id: int, item_ids: Sequence[int] | None = None
) -> list[tuple[int, dict[str, Any] | None]]:
    """(item id, result) of each finished item of a batch, or of those among `item_ids` (read 5,000 at a time)."""
    q = select(BatchItem.item_id, BatchItem.result).where(BatchItem.batch_id == batch_id, BatchItem.status == "done")
    if item_ids is None:
        return [(r[0], r[1]) for r in session.exec(q).all()]
    ids = list(item_ids)
    out: list[tuple[int, dict[str, Any] | None]] = []
    for k in range(0, len(ids), 5000):
        out += [(r[0], r[1]) for r in session.exec(q.where(col(BatchItem.item_id).in_(ids[k : k + 5000]))).all()]
    return out


def done_item_result(
    *, session: Session, batch_id: int, item_id: int
) -> tuple[dict[str, Any] | None, list[str]] | None:
    """(result, the item's sentences) when the batch has finished the item, else None."""
    r = session.exec(
        select(BatchItem.result, DatasetItem.sentences)
        .join(DatasetItem, col(DatasetItem.id) == BatchItem.item_id)
        .where(BatchItem.batch_id == batch_id, BatchItem.item_id == item_id, BatchItem.status == "done")
    ).first()
    return None if r is None else (r[0], list(r[1] or []))
