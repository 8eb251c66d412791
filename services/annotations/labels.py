"""Sentence labels: one annotator's verdict on one sentence of a target, a run's round or a dataset item.

Labels live in their own table, one row per annotator and sentence; they never change the model's verdicts.
Writing a label is an upsert on that annotator's own row, so two annotators labelling the same sentence at
once both keep their label.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db import annotations as queries
from db.engine import get_session
from db.models import SentenceLabelPublic, utcnow
from services.errors import InputError

LABELS = {1: "consistent", 0: "inconsistent"}
LINK_REVOKED = (
    "Not stored: this personal link is no longer valid (replaced by a newer one, or the annotator removed). "
    "Ask the lead of the annotation for your current link."
)


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
    token: str | None = None,
) -> SentenceLabelPublic:
    """Store (or replace) this annotator's label of one sentence; note None keeps the note already there.

    `token`: the personal link the label comes through (None for the owner). It is checked in the write's own
    transaction, after the upsert has taken the write lock, so a link replaced at any moment before stores
    nothing (InputError LINK_REVOKED), even from a button drawn while it was still valid."""
    label = _check_label(label)
    if sentence_idx < 0:
        raise ValueError(f"sentence_idx must be 0 or more, got {sentence_idx}")
    if target.is_item:
        with get_session(engine) as session:
            n = queries.item_sentence_count(session=session, item_id=target.dataset_item_id)  # type: ignore[arg-type]
        if n is None:
            raise InputError(f"Dataset item {target.dataset_item_id} does not exist.")
        if sentence_idx >= n:
            raise InputError(f"The item has {n} sentence(s); there is no sentence {sentence_idx + 1}.")
    now = utcnow()
    row = {
        **target.columns(),
        "annotator_id": annotator_id,
        "sentence_idx": sentence_idx,
        "label": label,
        "note": (note or "").strip(),
        "created_at": now,
        "updated_at": now,
    }
    try:
        with get_session(engine) as session:
            stored = queries.write_label(session=session, row=row, keep_note=note is None)
            if token is not None:
                current = queries.annotator_token(session=session, annotator_id=annotator_id)
                if current is None or not hmac.compare_digest(current.encode(), token.encode()):
                    raise InputError(LINK_REVOKED)  # the session rolls the label back
            return stored
    except IntegrityError:  # a foreign key: the annotator, run or item is gone
        raise InputError(
            f"Cannot store the label: annotator {annotator_id} or the {target.key} it is about does not exist."
        ) from None


def labels_for(engine: Engine, target: Target, *, annotator_id: int | None = None) -> list[SentenceLabelPublic]:
    """Every label of a target (or one annotator's), by sentence then annotator."""
    with get_session(engine) as session:
        return queries.labels(session=session, **target.columns(), annotator_id=annotator_id)


def labels_for_run(engine: Engine, run_id: int, round_idx: int = 0) -> list[SentenceLabelPublic]:
    return labels_for(engine, Target.run(run_id, round_idx))


def labels_for_item(engine: Engine, item_id: int) -> list[SentenceLabelPublic]:
    return labels_for(engine, Target.item(item_id))


def my_labels(engine: Engine, annotator_id: int, target: Target) -> dict[int, SentenceLabelPublic]:
    """One annotator's labels of a target, by sentence index."""
    return {x.sentence_idx: x for x in labels_for(engine, target, annotator_id=annotator_id)}
