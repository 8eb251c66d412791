"""Human annotation: annotators, their sentence labels, assignments, the queue, export/import, agreement.

A label is one annotator's verdict on one sentence of a target: a run's round (the Evaluate and History
pages) or a dataset item (the annotation queue). Labels live in their own table, one row per annotator and
sentence; they never change the model's verdicts. Writing a label is an upsert on that annotator's own row,
so two annotators labelling the same sentence at once both keep their label.
"""

from __future__ import annotations

import json
import logging
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

import pandas as pd
from sqlalchemy import case, func, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from db.engine import dialect_insert
from db.models import (
    AnnotationAssignment,
    Annotator,
    AnnotatorPublic,
    Batch,
    BatchItem,
    BatchPublic,
    Dataset,
    DatasetItem,
    Document,
    SentenceLabel,
    SentenceLabelPublic,
    new_token,
    utcnow,
)
from services import tables
from services.datasets import IMPORT_ADVICE, RejectedRow, parse_label
from services.errors import InputError
from services.export import records_csv, restore
from services.stats import AlphaResult, alpha_from_long, majority

log = logging.getLogger(__name__)

LABELS = {1: "consistent", 0: "inconsistent"}
VERDICT_CODES = {"consistent": 1, "inconsistent": 0}  # "unknown" and anything else: no verdict
MAX_NAME = 100
ExportFormat = Literal["jsonl", "csv"]
EXPORT_COLUMNS = (
    "dataset", "external_id", "item", "sentence_idx", "sentence", "annotator", "label", "note", "created_at",
    "updated_at",
)  # fmt: skip


# -- targets -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """What a label is about: round `round_idx` of a run, or a dataset item."""

    run_id: int | None = None
    round_idx: int | None = None
    dataset_item_id: int | None = None

    def __post_init__(self) -> None:
        is_run = self.run_id is not None and self.round_idx is not None and self.dataset_item_id is None
        is_item = self.dataset_item_id is not None and self.run_id is None and self.round_idx is None
        if not (is_run or is_item):
            raise ValueError("a target is either run_id + round_idx or dataset_item_id")

    @classmethod
    def run(cls, run_id: int, round_idx: int = 0) -> Target:
        return cls(run_id=run_id, round_idx=round_idx)

    @classmethod
    def item(cls, dataset_item_id: int) -> Target:
        return cls(dataset_item_id=dataset_item_id)

    @property
    def is_item(self) -> bool:
        return self.dataset_item_id is not None

    @property
    def key(self) -> str:
        """A short stable name, for widget keys: item12 or run5r0."""
        return f"item{self.dataset_item_id}" if self.is_item else f"run{self.run_id}r{self.round_idx}"

    def columns(self) -> dict[str, int | None]:
        return {"run_id": self.run_id, "round_idx": self.round_idx, "dataset_item_id": self.dataset_item_id}


# -- annotators ----------------------------------------------------------------------------------
def _clean_name(name: str) -> str:
    name = " ".join(str(name or "").split())
    if not name:
        raise InputError("Give the annotator a name.")
    if len(name) > MAX_NAME:
        raise InputError(f"An annotator's name has at most {MAX_NAME} characters.")
    return name


def _public(row: Annotator) -> AnnotatorPublic:
    return AnnotatorPublic.model_validate(row, from_attributes=True)


def create_annotator(engine: Engine, name: str) -> AnnotatorPublic:
    """A new annotator with an unguessable personal token; InputError when the name is taken."""
    name = _clean_name(name)
    with engine.begin() as conn:
        try:
            conn.execute(Annotator.__table__.insert().values(**Annotator(name=name).model_dump(exclude={"id"})))
        except IntegrityError:
            raise InputError(f"An annotator named {name!r} exists already; pick that name instead.") from None
    found = annotator_by_name(engine, name)
    assert found is not None
    return found


def get_or_create_annotator(engine: Engine, name: str) -> AnnotatorPublic:
    """The annotator with this name, created when missing (safe when two callers race)."""
    name = _clean_name(name)
    found = annotator_by_name(engine, name)
    if found is not None:
        return found
    with engine.begin() as conn:
        conn.execute(
            dialect_insert(conn)(Annotator.__table__).on_conflict_do_nothing(),
            [Annotator(name=name).model_dump(exclude={"id"})],
        )
    found = annotator_by_name(engine, name)
    assert found is not None
    return found


def _one(engine: Engine, where) -> AnnotatorPublic | None:  # noqa: ANN001
    with engine.connect() as conn:
        row = conn.execute(select(Annotator.id, Annotator.name, Annotator.created_at).where(where)).first()
    return AnnotatorPublic(id=row[0], name=row[1], created_at=row[2]) if row else None


def get_annotator(engine: Engine, annotator_id: int) -> AnnotatorPublic | None:
    return _one(engine, Annotator.id == annotator_id)


def annotator_by_name(engine: Engine, name: str) -> AnnotatorPublic | None:
    return _one(engine, Annotator.name == " ".join(str(name).split()))


def annotator_by_token(engine: Engine, token: str) -> AnnotatorPublic | None:
    """The annotator whose personal link carries this token, or None."""
    token = (token or "").strip()
    return _one(engine, Annotator.token == token) if token else None


def annotator_token(engine: Engine, annotator_id: int) -> str | None:
    """The token of an annotator's personal link (for that annotator's eyes only)."""
    with engine.connect() as conn:
        return conn.execute(select(Annotator.token).where(Annotator.id == annotator_id)).scalar()


def replace_token(engine: Engine, annotator_id: int) -> str:
    """A new personal link for the annotator; the old one stops working at once. Labels are kept."""
    token = new_token()
    with engine.begin() as conn:
        conn.execute(Annotator.__table__.update().where(Annotator.id == annotator_id).values(token=token))
    return token


def list_annotators(engine: Engine) -> list[AnnotatorPublic]:
    """Every annotator, by name."""
    with engine.connect() as conn:
        rows = conn.execute(select(Annotator.id, Annotator.name, Annotator.created_at).order_by(Annotator.name)).all()
    return [AnnotatorPublic(id=r[0], name=r[1], created_at=r[2]) for r in rows]


# -- labels --------------------------------------------------------------------------------------
def _conflict_columns(target: Target) -> list[str]:
    if target.is_item:
        return ["annotator_id", "dataset_item_id", "sentence_idx"]
    return ["annotator_id", "run_id", "round_idx", "sentence_idx"]


def _upsert(conn: Connection, target: Target, rows: list[dict[str, Any]], *, keep_note: bool) -> None:
    """INSERT ... ON CONFLICT DO UPDATE on the annotator's own row: the label (and note), never created_at."""
    ins = dialect_insert(conn)(SentenceLabel.__table__)
    set_ = {"label": ins.excluded.label, "updated_at": ins.excluded.updated_at}
    if not keep_note:
        set_["note"] = ins.excluded.note
    conn.execute(ins.on_conflict_do_update(index_elements=_conflict_columns(target), set_=set_), rows)


def _check_label(label: int | bool) -> int:
    if isinstance(label, bool):
        return int(label)
    if label not in (0, 1):
        raise ValueError(f"label must be 1 (consistent) or 0 (inconsistent), got {label!r}")
    return int(label)


def label_sentence(
    engine: Engine,
    *,
    annotator_id: int,
    target: Target,
    sentence_idx: int,
    label: int,
    note: str | None = None,
) -> SentenceLabelPublic:
    """Store (or replace) this annotator's label of one sentence; note None keeps the note already there."""
    label = _check_label(label)
    if sentence_idx < 0:
        raise ValueError(f"sentence_idx must be 0 or more, got {sentence_idx}")
    if target.is_item:
        n = _n_sentences(engine, target.dataset_item_id)  # type: ignore[arg-type]
        if n is None:
            raise InputError(f"Dataset item {target.dataset_item_id} does not exist.")
        if sentence_idx >= n:
            raise InputError(f"The item has {n} sentence(s); there is no sentence {sentence_idx + 1}.")
    now = utcnow()
    row = {
        **target.columns(), "annotator_id": annotator_id, "sentence_idx": sentence_idx, "label": label,
        "note": (note or "").strip(), "created_at": now, "updated_at": now,
    }  # fmt: skip
    # The upsert comes first in the transaction: on SQLite it takes the write lock before any read, so a
    # concurrent writer waits (busy_timeout) instead of failing on a stale read snapshot.
    try:
        with engine.begin() as conn:
            stored = _write_label(conn, target, row, keep_note=note is None)
    except IntegrityError:  # a foreign key: the annotator, run or item is gone
        raise InputError(
            f"Cannot store the label: annotator {annotator_id} or the {target.key} it is about does not exist."
        ) from None
    return _label_public(stored)


def _write_label(conn: Connection, target: Target, row: dict[str, Any], *, keep_note: bool) -> Any:
    """Upsert one label, then refresh its assignment; returns the stored row."""
    annotator_id, sentence_idx = row["annotator_id"], row["sentence_idx"]
    _upsert(conn, target, [row], keep_note=keep_note)
    if target.is_item:
        _refresh_assignments(conn, {(target.dataset_item_id, annotator_id)})  # type: ignore[arg-type]
    return conn.execute(
        select(SentenceLabel).where(
            *_where_target(target),
            SentenceLabel.annotator_id == annotator_id,
            SentenceLabel.sentence_idx == sentence_idx,
        )
    ).first()


def _label_public(row: Any) -> SentenceLabelPublic:
    return SentenceLabelPublic.model_validate(dict(row._mapping))


def _where_target(target: Target) -> list[Any]:
    if target.is_item:
        return [SentenceLabel.dataset_item_id == target.dataset_item_id]
    return [SentenceLabel.run_id == target.run_id, SentenceLabel.round_idx == target.round_idx]


def labels_for(engine: Engine, target: Target, *, annotator_id: int | None = None) -> list[SentenceLabelPublic]:
    """Every label of a target (or one annotator's), by sentence then annotator."""
    q = select(SentenceLabel).where(*_where_target(target))
    if annotator_id is not None:
        q = q.where(SentenceLabel.annotator_id == annotator_id)
    with engine.connect() as conn:
        rows = conn.execute(q.order_by(SentenceLabel.sentence_idx, SentenceLabel.annotator_id)).all()
    return [_label_public(r) for r in rows]


def labels_for_run(engine: Engine, run_id: int, round_idx: int = 0) -> list[SentenceLabelPublic]:
    return labels_for(engine, Target.run(run_id, round_idx))


def labels_for_item(engine: Engine, item_id: int) -> list[SentenceLabelPublic]:
    return labels_for(engine, Target.item(item_id))


def my_labels(engine: Engine, annotator_id: int, target: Target) -> dict[int, SentenceLabelPublic]:
    """One annotator's labels of a target, by sentence index."""
    return {x.sentence_idx: x for x in labels_for(engine, target, annotator_id=annotator_id)}


def _n_sentences(engine: Engine, item_id: int) -> int | None:
    with engine.connect() as conn:
        sentences = conn.execute(select(DatasetItem.sentences).where(DatasetItem.id == item_id)).first()
    return None if sentences is None else len(sentences[0] or [])


def _refresh_assignments(conn: Connection, pairs: set[tuple[int, int]]) -> None:
    """Mark (item, annotator) assignments done once every sentence has that annotator's label (or pending)."""
    if not pairs:
        return
    items = {i for i, _ in pairs}
    sizes = dict(conn.execute(select(DatasetItem.id, DatasetItem.sentences).where(DatasetItem.id.in_(items))).all())
    counts = dict(
        ((r[0], r[1]), r[2])
        for r in conn.execute(
            select(SentenceLabel.dataset_item_id, SentenceLabel.annotator_id, func.count())
            .where(SentenceLabel.dataset_item_id.in_(items))
            .group_by(SentenceLabel.dataset_item_id, SentenceLabel.annotator_id)
        ).all()
    )
    now = utcnow()
    for item_id, annotator_id in pairs:
        done = counts.get((item_id, annotator_id), 0) >= len(sizes.get(item_id) or [])
        a = AnnotationAssignment
        status = "done" if done else "pending"
        conn.execute(
            update(a)
            .where(a.dataset_item_id == item_id, a.annotator_id == annotator_id, a.status != status)
            .values(status=status, done_at=now if done else None)
        )


# -- assignment ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AssignResult:
    """What `assign` did: new assignments, items now fully covered, and each annotator's load."""

    created: int
    items: int
    covered: int
    loads: dict[str, int]


def assign(engine: Engine, dataset_id: int, *, annotators: list[int], per_item: int, seed: int = 0) -> AssignResult:
    """Give each item of the dataset to `per_item` annotators, balanced; calling it again adds nothing.

    The rule: items are visited in dataset order; an item already held by `per_item` annotators (anyone,
    listed or not) is left alone. Otherwise it goes to the listed annotators not yet on it who hold the
    fewest items of this dataset, ties broken by a shuffle drawn from `seed` for each item. On a fresh
    dataset that is a shuffled round robin: nobody gets a k+1-th item before everyone has k, so loads differ
    by at most one, and the pairs of annotators sharing items vary (which helps the agreement estimate).
    """
    ids = list(dict.fromkeys(int(a) for a in annotators))
    if not ids:
        raise InputError("Choose at least one annotator.")
    if per_item < 1:
        raise InputError("Each item needs at least one annotator.")
    if per_item > len(ids):
        raise InputError(f"{per_item} annotators per item, but only {len(ids)} annotator(s) chosen.")
    with engine.begin() as conn:
        names = dict(conn.execute(select(Annotator.id, Annotator.name).where(Annotator.id.in_(ids))).all())
        missing = [a for a in ids if a not in names]
        if missing:
            raise InputError(f"Annotator(s) {missing} do not exist.")
        if conn.execute(select(Dataset.id).where(Dataset.id == dataset_id)).first() is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        items = list(
            conn.execute(select(DatasetItem.id).where(DatasetItem.dataset_id == dataset_id).order_by(DatasetItem.idx))
            .scalars()
        )  # fmt: skip
        holders: dict[int, set[int]] = defaultdict(set)
        for item_id, annotator_id in conn.execute(
            select(AnnotationAssignment.dataset_item_id, AnnotationAssignment.annotator_id).where(
                AnnotationAssignment.dataset_id == dataset_id
            )
        ).all():
            holders[item_id].add(annotator_id)
        load = {a: sum(a in h for h in holders.values()) for a in ids}
        rng = random.Random(seed)
        now = utcnow()
        new: dict[int, list[int]] = defaultdict(list)
        for item_id in items:
            need = per_item - len(holders[item_id])
            if need <= 0:
                continue
            free = [a for a in ids if a not in holders[item_id]]
            rng.shuffle(free)
            free.sort(key=load.__getitem__)  # stable: equal loads keep the shuffled order
            for a in free[:need]:
                new[item_id].append(a)
                holders[item_id].add(a)
                load[a] += 1
        _rebalance(new, holders, load)
        rows = [
            {"dataset_id": dataset_id, "dataset_item_id": item_id, "annotator_id": a, "status": "pending",
             "assigned_at": now, "done_at": None}
            for item_id in items for a in new.get(item_id, [])
        ]  # fmt: skip
        before = _count_assignments(conn, dataset_id)
        if rows:
            # A concurrent call may have assigned some of these pairs meanwhile: the unique key skips them.
            conn.execute(dialect_insert(conn)(AnnotationAssignment.__table__).on_conflict_do_nothing(), rows)
            _refresh_assignments(conn, {(r["dataset_item_id"], r["annotator_id"]) for r in rows})
        created = _count_assignments(conn, dataset_id) - before
        covered = sum(len(holders[i]) >= per_item for i in items)
    log.info("assigned %d item(s) of dataset %s to %d annotator(s)", created, dataset_id, len(ids))
    return AssignResult(created=created, items=len(items), covered=covered, loads={names[a]: load[a] for a in ids})


def _rebalance(new: dict[int, list[int]], holders: dict[int, set[int]], load: dict[int, int]) -> None:
    """Shift new assignments from busier to idler annotators until no shift narrows the spread.

    Greedy placement can strand load when an item's free annotators are all busy ones (a top-up, where
    most annotators hold the item already). A shift follows a chain hi -> x -> ... -> lo, each step handing
    one newly assigned item to an annotator who does not hold it, so only hi and lo change load. Each shift
    lowers the sum of squared loads, so this ends.
    """
    while True:
        for hi in sorted(load, key=lambda a: -load[a]):
            chain = _chain(hi, new, holders, load)
            if chain:
                for a, b, item in chain:
                    new[item][new[item].index(a)] = b
                    holders[item].discard(a)
                    holders[item].add(b)
                load[hi] -= 1
                load[chain[-1][1]] += 1
                break
        else:
            return


def _chain(
    start: int, new: dict[int, list[int]], holders: dict[int, set[int]], load: dict[int, int]
) -> list[tuple[int, int, int]] | None:
    """A shortest chain of hand-overs (giver, taker, item) from `start` to someone with 2+ items fewer."""
    came: dict[int, tuple[int, int] | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for a in frontier:
            for item, got in new.items():
                if a not in got:
                    continue
                for b in load:
                    if b in came or b in holders[item]:
                        continue
                    came[b] = (a, item)
                    if load[b] <= load[start] - 2:
                        steps = []
                        node = b
                        while came[node] is not None:
                            giver, via = came[node]  # type: ignore[misc]
                            steps.append((giver, node, via))
                            node = giver
                        return steps[::-1]
                    nxt.append(b)
        frontier = nxt
    return None


def _count_assignments(conn: Connection, dataset_id: int) -> int:
    return int(
        conn.execute(
            select(func.count()).select_from(AnnotationAssignment).where(AnnotationAssignment.dataset_id == dataset_id)
        ).scalar_one()
    )


# -- the queue -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueEntry:
    """One item assigned to an annotator."""

    item_id: int
    idx: int
    external_id: str
    status: str


def queue(engine: Engine, dataset_id: int, annotator_id: int) -> list[QueueEntry]:
    """An annotator's assignments in a dataset, in dataset order."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(DatasetItem.id, DatasetItem.idx, DatasetItem.external_id, AnnotationAssignment.status)
            .join(AnnotationAssignment, AnnotationAssignment.dataset_item_id == DatasetItem.id)
            .where(AnnotationAssignment.dataset_id == dataset_id, AnnotationAssignment.annotator_id == annotator_id)
            .order_by(DatasetItem.idx, DatasetItem.id)
        ).all()
    return [QueueEntry(r[0], r[1], r[2], r[3]) for r in rows]


def next_item(
    engine: Engine,
    dataset_id: int,
    annotator_id: int,
    *,
    after: int | None = None,
    before: int | None = None,
    pending_only: bool = False,
) -> int | None:
    """The item to show: the next assignment after item `after`, the previous one before item `before`.

    With neither, the first pending assignment (or the first one when all are done). None when there is no
    such item. `pending_only` skips items this annotator has finished.
    """
    entries = queue(engine, dataset_id, annotator_id)
    if pending_only:
        entries = [e for e in entries if e.status != "done"]
    if after is None and before is None:
        pending = [e for e in entries if e.status != "done"]
        first = pending or entries
        return first[0].item_id if first else None
    pivot_id = after if after is not None else before
    with engine.connect() as conn:
        pivot = conn.execute(select(DatasetItem.idx, DatasetItem.id).where(DatasetItem.id == pivot_id)).first()
    if pivot is None:
        return None
    place = (pivot[0], pivot[1])
    if after is not None:
        later = [e for e in entries if (e.idx, e.item_id) > place]
        return later[0].item_id if later else None
    earlier = [e for e in entries if (e.idx, e.item_id) < place]
    return earlier[-1].item_id if earlier else None


@dataclass(frozen=True)
class AnnotationProgress:
    """Assigned items, items done (every sentence labelled) and labels written."""

    assigned: int
    done: int
    labels: int

    @property
    def fraction(self) -> float:
        return self.done / self.assigned if self.assigned else 0.0


def progress(engine: Engine, dataset_id: int, annotator_id: int | None = None) -> AnnotationProgress:
    """Progress of one annotator in a dataset, or of everyone together."""
    a = AnnotationAssignment
    q = select(func.count(), func.coalesce(func.sum(case((a.status == "done", 1), else_=0)), 0))
    q = q.select_from(a).where(a.dataset_id == dataset_id)
    lq = (
        select(func.count())
        .select_from(SentenceLabel)
        .join(DatasetItem, DatasetItem.id == SentenceLabel.dataset_item_id)
        .where(DatasetItem.dataset_id == dataset_id)
    )
    if annotator_id is not None:
        q = q.where(a.annotator_id == annotator_id)
        lq = lq.where(SentenceLabel.annotator_id == annotator_id)
    with engine.connect() as conn:
        assigned, done = conn.execute(q).one()
        labels = conn.execute(lq).scalar_one()
    return AnnotationProgress(int(assigned), int(done), int(labels))


def progress_frame(engine: Engine, dataset_id: int) -> pd.DataFrame:
    """One row per annotator of the dataset: items assigned, done, and labels written."""
    a = AnnotationAssignment
    with engine.connect() as conn:
        assigned = conn.execute(
            select(Annotator.name, a.status, func.count())
            .join(Annotator, Annotator.id == a.annotator_id)
            .where(a.dataset_id == dataset_id)
            .group_by(Annotator.name, a.status)
        ).all()
        labels = conn.execute(
            select(Annotator.name, func.count())
            .select_from(SentenceLabel)
            .join(Annotator, Annotator.id == SentenceLabel.annotator_id)
            .join(DatasetItem, DatasetItem.id == SentenceLabel.dataset_item_id)
            .where(DatasetItem.dataset_id == dataset_id)
            .group_by(Annotator.name)
        ).all()
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"assigned": 0, "done": 0, "labels": 0})
    for name, status, n in assigned:
        table[name]["assigned"] += int(n)
        if status == "done":
            table[name]["done"] += int(n)
    for name, n in labels:
        table[name]["labels"] = int(n)
    return pd.DataFrame(
        [{"annotator": k, **v} for k, v in sorted(table.items())], columns=["annotator", "assigned", "done", "labels"]
    )


# -- items and model verdicts ------------------------------------------------------------------
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


def get_item(engine: Engine, item_id: int) -> AnnotationItem | None:
    with engine.connect() as conn:
        r = conn.execute(
            select(DatasetItem.id, DatasetItem.dataset_id, DatasetItem.idx, DatasetItem.external_id, Document.text,
                   DatasetItem.candidate, DatasetItem.sentences)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(DatasetItem.id == item_id)
        ).first()  # fmt: skip
    return AnnotationItem(r[0], r[1], r[2], r[3], r[4], r[5], list(r[6] or [])) if r else None


@dataclass(frozen=True)
class ModelVerdict:
    """The model's verdict on one sentence (consistent | inconsistent | unknown) and its reason."""

    index: int
    verdict: str
    reason: str | None = None


def datasets_of(engine: Engine, annotator_id: int) -> list[int]:
    """The datasets where an annotator has assignments: all a personal link opens."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(AnnotationAssignment.dataset_id)
            .where(AnnotationAssignment.annotator_id == annotator_id)
            .distinct()
            .order_by(AnnotationAssignment.dataset_id.desc())
        ).all()
    return [r[0] for r in rows]


# -- the lead's settings for a dataset's queue ------------------------------------------------------
QUEUE_SETTINGS_KEY = "annotation"  # under Dataset.meta


@dataclass(frozen=True)
class QueueSettings:
    """What a dataset's annotators see, set by the lead: whose round-0 verdicts are shown beside each sentence
    (None: none), and blind mode (a verdict shows only once the sentence has the annotator's label)."""

    batch_id: int | None
    blind: bool = True


def queue_settings(engine: Engine, dataset_id: int) -> QueueSettings:
    """The lead's settings; until set, the newest finished batch and blind mode on."""
    with engine.connect() as conn:
        meta = conn.execute(select(Dataset.meta).where(Dataset.id == dataset_id)).scalar() or {}
    saved = meta.get(QUEUE_SETTINGS_KEY) or {}
    batches = batches_for_dataset(engine, dataset_id)
    if "batch_id" in saved:
        batch_id = saved["batch_id"] if saved["batch_id"] in {b.id for b in batches} else None
    else:
        batch_id = next((b.id for b in batches if b.status == "done"), None)
    return QueueSettings(batch_id=batch_id, blind=bool(saved.get("blind", True)))


def set_queue_settings(engine: Engine, dataset_id: int, *, batch_id: int | None, blind: bool) -> QueueSettings:
    """Save the lead's settings for a dataset's queue; InputError for a batch of another dataset."""
    if batch_id is not None and batch_id not in {b.id for b in batches_for_dataset(engine, dataset_id)}:
        raise InputError(f"Batch #{batch_id} is not a batch of this dataset.")
    with engine.begin() as conn:
        meta = conn.execute(select(Dataset.meta).where(Dataset.id == dataset_id)).scalar()
        if meta is None:
            raise InputError(f"Dataset #{dataset_id} does not exist.")
        meta = {**meta, QUEUE_SETTINGS_KEY: {"batch_id": batch_id, "blind": bool(blind)}}
        conn.execute(update(Dataset).where(Dataset.id == dataset_id).values(meta=meta))
    return QueueSettings(batch_id=batch_id, blind=bool(blind))


def batches_for_dataset(engine: Engine, dataset_id: int) -> list[BatchPublic]:
    """The dataset's batches, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(select(Batch).where(Batch.dataset_id == dataset_id).order_by(Batch.id.desc())).all()
    return [BatchPublic.model_validate(dict(r._mapping)) for r in rows]


def _round0(result: dict[str, Any] | None, n_sentences: int) -> list[dict[str, Any]] | None:
    """Round 0's per-sentence records when they line up with the item's sentences (not a paragraph verdict)."""
    rounds = (result or {}).get("rounds") or []
    if not rounds:
        return None
    sentences = rounds[0].get("sentences") or []
    return sentences if len(sentences) == n_sentences else None


def model_verdicts(engine: Engine, batch_id: int, item_id: int) -> list[ModelVerdict] | None:
    """The batch's round-0 verdict for each sentence of the item, or None (not done, or not per sentence)."""
    with engine.connect() as conn:
        r = conn.execute(
            select(BatchItem.result, DatasetItem.sentences)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id, BatchItem.item_id == item_id, BatchItem.status == "done")
        ).first()
    if r is None:
        return None
    records = _round0(r[0], len(r[1] or []))
    if records is None:
        return None
    return [
        ModelVerdict(index=j, verdict=str(s.get("verdict") or "unknown"), reason=s.get("reason"))
        for j, s in enumerate(records)
    ]


def _batch_codes(conn: Connection, batch_id: int, sizes: dict[int, int]) -> dict[tuple[int, int], int | None]:
    """(item, sentence) -> 1/0/None (unknown) from a batch's round 0; items without per-sentence verdicts absent."""
    out: dict[tuple[int, int], int | None] = {}
    for item_id, result in conn.execute(
        select(BatchItem.item_id, BatchItem.result).where(BatchItem.batch_id == batch_id, BatchItem.status == "done")
    ).all():
        if item_id not in sizes:
            continue
        records = _round0(result, sizes[item_id])
        for j, s in enumerate(records or []):
            out[(item_id, j)] = VERDICT_CODES.get(str(s.get("verdict")))
    return out


def _batch_verdict_words(conn: Connection, batch_id: int, sizes: dict[int, int]) -> dict[tuple[int, int], str]:
    """(item, sentence) -> the batch's round-0 verdict word, for items with per-sentence verdicts."""
    rows = conn.execute(
        select(BatchItem.item_id, BatchItem.result).where(BatchItem.batch_id == batch_id, BatchItem.status == "done")
    ).all()
    return {
        (item_id, j): str(s.get("verdict") or "unknown")
        for item_id, result in rows
        if item_id in sizes
        for j, s in enumerate(_round0(result, sizes[item_id]) or [])
    }


# -- export and import ---------------------------------------------------------------------------
def _label_rows(conn: Connection, dataset_id: int) -> list[Any]:
    return conn.execute(
        select(DatasetItem.id, DatasetItem.idx, DatasetItem.external_id, DatasetItem.sentences,
               SentenceLabel.sentence_idx, Annotator.name, SentenceLabel.label, SentenceLabel.note,
               SentenceLabel.created_at,
               SentenceLabel.updated_at, SentenceLabel.annotator_id)
        .join(DatasetItem, DatasetItem.id == SentenceLabel.dataset_item_id)
        .join(Annotator, Annotator.id == SentenceLabel.annotator_id)
        .where(DatasetItem.dataset_id == dataset_id)
        .order_by(DatasetItem.idx, DatasetItem.id, SentenceLabel.sentence_idx, Annotator.name)
    ).all()  # fmt: skip


def _iso(t: datetime | None) -> str:
    return t.isoformat() if t else ""


def export_labels(engine: Engine, dataset_id: int, fmt: ExportFormat = "jsonl") -> bytes:
    """The dataset's labels, one row per item, sentence and annotator (label 1 consistent / 0 inconsistent)."""
    with engine.connect() as conn:
        name = conn.execute(select(Dataset.name).where(Dataset.id == dataset_id)).scalar()
        if name is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        rows = _label_rows(conn, dataset_id)
    records = [
        {
            "dataset": name, "external_id": r[2], "item": r[1], "sentence_idx": r[4],
            "sentence": (r[3] or [])[r[4]] if r[4] < len(r[3] or []) else "", "annotator": r[5], "label": r[6],
            "note": r[7] or "", "created_at": _iso(r[8]), "updated_at": _iso(r[9]),
        }
        for r in rows
    ]  # fmt: skip
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
        records = ((n, {k: restore(v) for k, v in obj.items()} if isinstance(obj, dict) else obj, err)
                   for n, obj, err in rows)  # fmt: skip
    else:
        raise InputError(f"Unknown import format {fmt!r}; use jsonl or csv.")
    with engine.connect() as conn:
        if conn.execute(select(Dataset.id).where(Dataset.id == dataset_id)).first() is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        item_rows = conn.execute(
            select(DatasetItem.id, DatasetItem.idx, DatasetItem.external_id, DatasetItem.sentences).where(
                DatasetItem.dataset_id == dataset_id
            )
        ).all()
    by_external: dict[str, list[Any]] = defaultdict(list)
    for r in item_rows:
        by_external[str(r[2])].append(r)

    rejected: list[RejectedRow] = []
    good: dict[tuple[int, str, int], dict[str, Any]] = {}  # (item, annotator, sentence) -> row; the last one wins
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
                name = _clean_name(name or "")
            except (ValueError, InputError) as exc:
                raise _Reject(str(exc)) from None
            if label is None:
                raise _Reject("missing field 'label'")
            matches = by_external.get(str(external_id), [])
            if len(matches) > 1 and position is not None:
                matches = [m for m in matches if m[1] == position]
            if not matches:
                raise _Reject(f"no item with external_id {external_id!r} in this dataset")
            if len(matches) > 1:
                raise _Reject(f"external_id {external_id!r} names {len(matches)} items; give 'item' (the position)")
            item_id, _, _, sentences = matches[0]
            sentences = sentences or []
            assert sentence_idx is not None
            if sentence_idx >= len(sentences):
                raise _Reject(f"item {external_id!r} has {len(sentences)} sentence(s); no sentence_idx {sentence_idx}")
            given = _field(rec, "sentence", required=False)
            if given is not None and " ".join(given.split()) != " ".join(str(sentences[sentence_idx]).split()):
                raise _Reject(
                    f"the sentence text differs from sentence {sentence_idx} of item {external_id!r} "
                    f"(file: {given[:60]!r}, dataset: {str(sentences[sentence_idx])[:60]!r})"
                )
            note = rec.get("note")
            good[(item_id, name, sentence_idx)] = {
                "item_id": item_id, "name": name, "sentence_idx": sentence_idx, "label": label,
                "note": str(note).strip() if note is not None else "",
                "created_at": _when(rec.get("created_at")), "updated_at": _when(rec.get("updated_at")),
            }  # fmt: skip
        except _Reject as exc:
            rejected.append(RejectedRow(row_no, str(exc)))
    if not good:
        return 0, rejected
    ids = {n: get_or_create_annotator(engine, n).id for n in sorted({g["name"] for g in good.values()})}
    now = utcnow()
    rows = [
        {
            "run_id": None, "round_idx": None, "dataset_item_id": g["item_id"], "annotator_id": ids[g["name"]],
            "sentence_idx": g["sentence_idx"], "label": g["label"], "note": g["note"],
            "created_at": g["created_at"] or now, "updated_at": g["updated_at"] or g["created_at"] or now,
        }
        for g in good.values()
    ]  # fmt: skip
    with engine.begin() as conn:
        _upsert(conn, Target.item(rows[0]["dataset_item_id"]), rows, keep_note=False)
        _refresh_assignments(conn, {(r["dataset_item_id"], r["annotator_id"]) for r in rows})
    log.info("imported %d label(s) into dataset %s, %d row(s) rejected", len(rows), dataset_id, len(rejected))
    return len(rows), rejected


# -- agreement -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Units:
    """Every labelled (item, sentence) of a dataset with its labels, sentence text and position."""

    labels: dict[tuple[int, int], dict[str, int]]  # unit -> {annotator name: 1/0}
    text: dict[tuple[int, int], str]
    order: dict[int, tuple[int, str]]  # item -> (position, external_id)
    sizes: dict[int, int]  # item -> number of sentences


def _units(conn: Connection, dataset_id: int) -> _Units:
    labels: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    text: dict[tuple[int, int], str] = {}
    order: dict[int, tuple[int, str]] = {}
    for item_id, idx, external_id, sentences, j, name, label, *_ in _label_rows(conn, dataset_id):
        labels[(item_id, j)][name] = int(label)
        text[(item_id, j)] = (sentences or [])[j] if j < len(sentences or []) else ""
        order[item_id] = (idx, external_id)
    sizes = {
        r[0]: len(r[1] or [])
        for r in conn.execute(
            select(DatasetItem.id, DatasetItem.sentences).where(DatasetItem.dataset_id == dataset_id)
        ).all()
    }
    return _Units(dict(labels), text, order, sizes)


def _batch_names(conn: Connection, batch_ids: Sequence[int]) -> dict[int, str]:
    rows = conn.execute(select(Batch.id, Batch.name).where(Batch.id.in_(list(batch_ids)))).all() if batch_ids else []
    return {r[0]: r[1] for r in rows}


def _join_notes(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return " ".join(kept) if kept else None


def _with_note(result: AlphaResult, extra: str | None) -> AlphaResult:
    return replace(result, note=_join_notes(extra, result.note))


def agreement(
    engine: Engine, dataset_id: int, *, batch_ids: Iterable[int] = (), n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) among the annotators, and between their majority and each batch.

    Units are (item, sentence). Among annotators the raters are the annotators; a unit labelled once does
    not count (alpha needs pairs). Against a batch there are two raters: the annotators' majority label
    (ties left out) and the model's round-0 verdict (unknown verdicts left out). Each result carries a
    bootstrap interval over units and a note when it cannot be computed or should be read with care.
    """
    batch_ids = list(dict.fromkeys(batch_ids))
    with engine.connect() as conn:
        u = _units(conn, dataset_id)
        names = _batch_names(conn, batch_ids)
        codes = {b: _batch_codes(conn, b, u.sizes) for b in batch_ids if b in names}
    long = [
        {"unit": f"{i}:{j}", "rater": a, "value": v} for (i, j), votes in u.labels.items() for a, v in votes.items()
    ]
    annotators = sorted({a for votes in u.labels.values() for a in votes})
    if long:
        among = alpha_from_long(pd.DataFrame(long), "nominal", n_boot=n_boot, seed=seed)
    else:
        among = AlphaResult(None, "nominal", 0, 0, 0, note="No sentence of this dataset has a label yet.")
    majorities = {unit: majority(votes) for unit, votes in u.labels.items()}
    ties = sum(m is None for m in majorities.values())
    models = []
    for b in batch_ids:
        if b not in names:
            continue
        rows, unknown, absent = [], 0, 0
        for unit, m in majorities.items():
            if unit not in codes[b]:
                absent += 1
                continue
            v = codes[b][unit]
            if v is None:
                unknown += 1
            if m is None or v is None:
                continue
            key = f"{unit[0]}:{unit[1]}"
            rows += [{"unit": key, "rater": "annotators", "value": m}, {"unit": key, "rater": "model", "value": v}]
        extra = []
        if ties:
            extra.append(f"{ties} sentence(s) with tied annotator labels left out.")
        if unknown:
            extra.append(f"{unknown} sentence(s) the model left unknown left out.")
        if absent:
            extra.append(f"{absent} labelled sentence(s) have no per-sentence verdict in this batch (not done, or "
                         "judged as one paragraph).")  # fmt: skip
        if rows:
            res = alpha_from_long(pd.DataFrame(rows), "nominal", n_boot=n_boot, seed=seed)
        else:
            res = AlphaResult(None, "nominal", 0, 0, 0, note="No sentence has both a majority label and a verdict.")
        models.append(
            {"batch_id": b, "name": names[b], "n_compared": len(rows) // 2, "alpha": _with_note(res, " ".join(extra))}
        )
    return {
        "n_units": len(u.labels),
        "n_annotators": len(annotators),
        "annotators": annotators,
        "among_annotators": among,
        "models": models,
    }


def agreement_frame(result: dict[str, Any]) -> pd.DataFrame:
    """The agreement results as a table: comparison, alpha, interval, units, raters, note."""

    def row(what: str, r: AlphaResult) -> dict[str, Any]:
        return {"comparison": what, "alpha": r.alpha, "ci_low": r.ci_low, "ci_high": r.ci_high,
                "pairable units": r.n_pairable, "raters": r.n_raters, "note": r.note or ""}  # fmt: skip

    rows = [row(f"among annotators ({result['n_annotators']})", result["among_annotators"])]
    rows += [row(f"annotators' majority vs batch #{m['batch_id']} {m['name']}", m["alpha"]) for m in result["models"]]
    return pd.DataFrame(rows)


def disagreements(engine: Engine, dataset_id: int, *, batch_ids: Iterable[int] = ()) -> pd.DataFrame:
    """The labelled sentences where annotators disagree, or where a model's verdict differs from their majority.

    One row per sentence: item position and external_id, sentence index (0-based) and text, each annotator's
    label, the majority, each batch's verdict and what differs. A model's unknown verdict is not a
    disagreement (it is not an answer).
    """
    batch_ids = list(dict.fromkeys(batch_ids))
    with engine.connect() as conn:
        u = _units(conn, dataset_id)
        names = _batch_names(conn, batch_ids)
        codes = {b: _batch_codes(conn, b, u.sizes) for b in batch_ids if b in names}
        verdicts = {b: _batch_verdict_words(conn, b, u.sizes) for b in codes}
    annotators = sorted({a for votes in u.labels.values() for a in votes})
    rows = []
    for unit in sorted(u.labels, key=lambda k: (u.order[k[0]][0], k[0], k[1])):
        votes = u.labels[unit]
        m = majority(votes)
        why = []
        if len(set(votes.values())) > 1:
            why.append("annotators disagree")
        differing = [b for b in codes if m is not None and codes[b].get(unit) is not None and codes[b][unit] != m]
        if differing:
            why.append("model differs: " + ", ".join(f"#{b}" for b in differing))
        if not why:
            continue
        row = {"item": u.order[unit[0]][0], "external_id": u.order[unit[0]][1], "sentence_idx": unit[1],
               "sentence": u.text[unit]}  # fmt: skip
        row |= {f"@{a}": LABELS[votes[a]] if a in votes else "" for a in annotators}
        row["majority"] = LABELS[m] if m is not None else "tie"
        row |= {f"batch #{b}": verdicts[b].get(unit, "") for b in codes}
        row["differs"] = "; ".join(why)
        rows.append(row)
    cols = ["item", "external_id", "sentence_idx", "sentence", *[f"@{a}" for a in annotators], "majority",
            *[f"batch #{b}" for b in codes], "differs"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)
