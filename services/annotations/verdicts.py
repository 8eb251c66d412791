"""The model's verdicts beside an annotator's item, and the lead's settings for them.

The lead picks, per dataset, whose round-0 verdicts the annotators see beside each sentence (or none) and
whether blind mode hides a verdict until the sentence has the annotator's own label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from db import annotations as queries
from db import batches as db_batches
from db import datasets as db_datasets
from db.engine import get_session
from db.models import BatchPublic
from services.errors import InputError


@dataclass(frozen=True)
class ModelVerdict:
    """The model's verdict on one sentence (consistent | inconsistent | unknown) and its reason."""

    index: int
    verdict: str
    reason: str | None = None


QUEUE_SETTINGS_KEY = "annotation"  # under Dataset.meta


@dataclass(frozen=True)
class QueueSettings:
    """What a dataset's annotators see, set by the lead: whose round-0 verdicts are shown beside each sentence
    (None: none), and blind mode (a verdict shows only once the sentence has the annotator's label)."""

    batch_id: int | None
    blind: bool = True


def queue_settings(engine: Engine, dataset_id: int) -> QueueSettings:
    """The lead's settings; until set, the newest finished batch and blind mode on."""
    with get_session(engine) as session:
        dataset = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        meta = (dataset.meta if dataset else None) or {}
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
    with get_session(engine) as session:
        dataset = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        if dataset is None:
            raise InputError(f"Dataset #{dataset_id} does not exist.")
        meta = {**(dataset.meta or {}), QUEUE_SETTINGS_KEY: {"batch_id": batch_id, "blind": bool(blind)}}
        db_datasets.set_meta(session=session, dataset_id=dataset_id, meta=meta)
    return QueueSettings(batch_id=batch_id, blind=bool(blind))


def batches_for_dataset(engine: Engine, dataset_id: int) -> list[BatchPublic]:
    """The dataset's batches, newest first."""
    with get_session(engine) as session:
        return db_batches.batches_for_dataset(session=session, dataset_id=dataset_id)


def round0_records(result: dict[str, Any] | None, n_sentences: int) -> list[dict[str, Any]] | None:
    """Round 0's per-sentence records when they line up with the item's sentences (not a paragraph verdict)."""
    rounds = (result or {}).get("rounds") or []
    if not rounds:
        return None
    sentences = rounds[0].get("sentences") or []
    return sentences if len(sentences) == n_sentences else None


def model_verdicts(engine: Engine, batch_id: int, item_id: int) -> list[ModelVerdict] | None:
    """The batch's round-0 verdict for each sentence of the item, or None (not done, or not per sentence)."""
    with get_session(engine) as session:
        found = queries.done_item_result(session=session, batch_id=batch_id, item_id=item_id)
    if found is None:
        return None
    result, sentences = found
    records = round0_records(result, len(sentences))
    if records is None:
        return None
    return [
        ModelVerdict(index=j, verdict=str(s.get("verdict") or "unknown"), reason=s.get("reason"))
        for j, s in enumerate(records)
    ]
