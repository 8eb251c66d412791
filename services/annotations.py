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
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db import annotations as queries
from db.annotations import AnnotationItem, ItemSentences, QueueEntry
from db.engine import get_session
from db.models import AnnotatorPublic, BatchPublic, SentenceLabelPublic, new_token, utcnow
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


def create_annotator(engine: Engine, name: str) -> AnnotatorPublic:
    """A new annotator with an unguessable personal token; InputError when the name is taken."""
    name = _clean_name(name)
    try:
        with get_session(engine) as session:
            queries.insert_annotator(session=session, name=name)
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
    with get_session(engine) as session:
        queries.insert_annotator_if_missing(session=session, name=name)
    found = annotator_by_name(engine, name)
    assert found is not None
    return found


def get_annotator(engine: Engine, annotator_id: int) -> AnnotatorPublic | None:
    with get_session(engine) as session:
        return queries.annotator_by_id(session=session, annotator_id=annotator_id)


def annotator_by_name(engine: Engine, name: str) -> AnnotatorPublic | None:
    with get_session(engine) as session:
        return queries.annotator_by_name(session=session, name=" ".join(str(name).split()))


def annotator_by_token(engine: Engine, token: str) -> AnnotatorPublic | None:
    """The annotator whose personal link carries this token, or None."""
    token = (token or "").strip()
    if not token:
        return None
    with get_session(engine) as session:
        return queries.annotator_by_token(session=session, token=token)


def annotator_token(engine: Engine, annotator_id: int) -> str | None:
    """The token of an annotator's personal link (for that annotator's eyes only)."""
    with get_session(engine) as session:
        return queries.annotator_token(session=session, annotator_id=annotator_id)


def replace_token(engine: Engine, annotator_id: int) -> str:
    """A new personal link for the annotator; the old one stops working at once. Labels are kept."""
    token = new_token()
    with get_session(engine) as session:
        queries.set_annotator_token(session=session, annotator_id=annotator_id, token=token)
    return token


def list_annotators(engine: Engine) -> list[AnnotatorPublic]:
    """Every annotator, by name."""
    with get_session(engine) as session:
        return queries.list_annotators(session=session)


# -- labels --------------------------------------------------------------------------------------
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
        with get_session(engine) as session:
            n = queries.item_sentence_count(session=session, item_id=target.dataset_item_id)  # type: ignore[arg-type]
        if n is None:
            raise InputError(f"Dataset item {target.dataset_item_id} does not exist.")
        if sentence_idx >= n:
            raise InputError(f"The item has {n} sentence(s); there is no sentence {sentence_idx + 1}.")
    now = utcnow()
    row = {
        **target.columns(), "annotator_id": annotator_id, "sentence_idx": sentence_idx, "label": label,
        "note": (note or "").strip(), "created_at": now, "updated_at": now,
    }  # fmt: skip
    try:
        with get_session(engine) as session:
            return queries.write_label(session=session, row=row, keep_note=note is None)
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
    with get_session(engine) as session:
        names = queries.annotator_names(session=session, annotator_ids=ids)
        missing = [a for a in ids if a not in names]
        if missing:
            raise InputError(f"Annotator(s) {missing} do not exist.")
        if not queries.dataset_exists(session=session, dataset_id=dataset_id):
            raise InputError(f"Dataset {dataset_id} does not exist.")
        items = queries.item_ids(session=session, dataset_id=dataset_id)
        holders: dict[int, set[int]] = defaultdict(set)
        for item_id, annotator_id in queries.assignment_pairs(session=session, dataset_id=dataset_id):
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
        before = queries.count_assignments(session=session, dataset_id=dataset_id)
        if rows:
            # A concurrent call may have assigned some of these pairs meanwhile: the unique key skips them.
            queries.insert_assignments(session=session, rows=rows)
            pairs = {(r["dataset_item_id"], r["annotator_id"]) for r in rows}
            queries.refresh_assignments(session=session, pairs=pairs)
        created = queries.count_assignments(session=session, dataset_id=dataset_id) - before
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


# -- the queue -----------------------------------------------------------------------------------
def queue(engine: Engine, dataset_id: int, annotator_id: int) -> list[QueueEntry]:
    """An annotator's assignments in a dataset, in dataset order."""
    with get_session(engine) as session:
        return queries.queue(session=session, dataset_id=dataset_id, annotator_id=annotator_id)


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
    with get_session(engine) as session:
        place = queries.item_place(session=session, item_id=pivot_id)  # type: ignore[arg-type]
    if place is None:
        return None
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
    with get_session(engine) as session:
        counts = queries.progress_counts(session=session, dataset_id=dataset_id, annotator_id=annotator_id)
    return AnnotationProgress(*counts)


def progress_frame(engine: Engine, dataset_id: int) -> pd.DataFrame:
    """One row per annotator of the dataset: items assigned, done, and labels written."""
    with get_session(engine) as session:
        assigned = queries.assignment_counts_by_annotator(session=session, dataset_id=dataset_id)
        labels = queries.label_counts_by_annotator(session=session, dataset_id=dataset_id)
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"assigned": 0, "done": 0, "labels": 0})
    for name, status, n in assigned:
        table[name]["assigned"] += n
        if status == "done":
            table[name]["done"] += n
    for name, n in labels:
        table[name]["labels"] = n
    return pd.DataFrame(
        [{"annotator": k, **v} for k, v in sorted(table.items())], columns=["annotator", "assigned", "done", "labels"]
    )


# -- items and model verdicts ------------------------------------------------------------------
def get_item(engine: Engine, item_id: int) -> AnnotationItem | None:
    """A dataset item as the annotator sees it."""
    with get_session(engine) as session:
        return queries.get_item(session=session, item_id=item_id)


@dataclass(frozen=True)
class ModelVerdict:
    """The model's verdict on one sentence (consistent | inconsistent | unknown) and its reason."""

    index: int
    verdict: str
    reason: str | None = None


def datasets_of(engine: Engine, annotator_id: int) -> list[int]:
    """The datasets where an annotator has assignments: all a personal link opens."""
    with get_session(engine) as session:
        return queries.datasets_of(session=session, annotator_id=annotator_id)


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
    with get_session(engine) as session:
        meta = queries.dataset_meta(session=session, dataset_id=dataset_id) or {}
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
        meta = queries.dataset_meta(session=session, dataset_id=dataset_id)
        if meta is None:
            raise InputError(f"Dataset #{dataset_id} does not exist.")
        meta = {**meta, QUEUE_SETTINGS_KEY: {"batch_id": batch_id, "blind": bool(blind)}}
        queries.set_dataset_meta(session=session, dataset_id=dataset_id, meta=meta)
    return QueueSettings(batch_id=batch_id, blind=bool(blind))


def batches_for_dataset(engine: Engine, dataset_id: int) -> list[BatchPublic]:
    """The dataset's batches, newest first."""
    with get_session(engine) as session:
        return queries.batches_for_dataset(session=session, dataset_id=dataset_id)


def _round0(result: dict[str, Any] | None, n_sentences: int) -> list[dict[str, Any]] | None:
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
    records = _round0(result, len(sentences))
    if records is None:
        return None
    return [
        ModelVerdict(index=j, verdict=str(s.get("verdict") or "unknown"), reason=s.get("reason"))
        for j, s in enumerate(records)
    ]


def _batch_codes(
    results: list[tuple[int, dict[str, Any] | None]], sizes: dict[int, int]
) -> dict[tuple[int, int], int | None]:
    """(item, sentence) -> 1/0/None (unknown) from a batch's round 0; items without per-sentence verdicts absent."""
    out: dict[tuple[int, int], int | None] = {}
    for item_id, result in results:
        if item_id not in sizes:
            continue
        records = _round0(result, sizes[item_id])
        for j, s in enumerate(records or []):
            out[(item_id, j)] = VERDICT_CODES.get(str(s.get("verdict")))
    return out


def _batch_verdict_words(
    results: list[tuple[int, dict[str, Any] | None]], sizes: dict[int, int]
) -> dict[tuple[int, int], str]:
    """(item, sentence) -> the batch's round-0 verdict word, for items with per-sentence verdicts."""
    return {
        (item_id, j): str(s.get("verdict") or "unknown")
        for item_id, result in results
        if item_id in sizes
        for j, s in enumerate(_round0(result, sizes[item_id]) or [])
    }


# -- export and import ---------------------------------------------------------------------------
def _sentence(sentences: list[str] | None, j: int) -> str:
    """Sentence j of an item, or "" when the item has fewer sentences."""
    return (sentences or [])[j] if j < len(sentences or []) else ""


def _iso(t: datetime | None) -> str:
    return t.isoformat() if t else ""


def export_labels(engine: Engine, dataset_id: int, fmt: ExportFormat = "jsonl") -> bytes:
    """The dataset's labels, one row per item, sentence and annotator (label 1 consistent / 0 inconsistent)."""
    with get_session(engine) as session:
        name = queries.dataset_name(session=session, dataset_id=dataset_id)
        if name is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        rows = queries.label_rows(session=session, dataset_id=dataset_id)
    records = [
        {
            "dataset": name, "external_id": r.external_id, "item": r.idx, "sentence_idx": r.sentence_idx,
            "sentence": _sentence(r.sentences, r.sentence_idx), "annotator": r.annotator, "label": r.label,
            "note": r.note or "", "created_at": _iso(r.created_at), "updated_at": _iso(r.updated_at),
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
    with get_session(engine) as session:
        if not queries.dataset_exists(session=session, dataset_id=dataset_id):
            raise InputError(f"Dataset {dataset_id} does not exist.")
        item_rows = queries.items_with_sentences(session=session, dataset_id=dataset_id)
    by_external: dict[str, list[ItemSentences]] = defaultdict(list)
    for r in item_rows:
        by_external[str(r.external_id)].append(r)

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
    with get_session(engine) as session:
        queries.upsert_labels(session=session, rows=rows, by_item=True, keep_note=False)
        queries.refresh_assignments(session=session, pairs={(r["dataset_item_id"], r["annotator_id"]) for r in rows})
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


BatchResults = dict[int, list[tuple[int, dict[str, Any] | None]]]  # batch -> (item, result) of its finished items


def _units(engine: Engine, dataset_id: int, batch_ids: list[int]) -> tuple[_Units, dict[int, str], BatchResults]:
    """The dataset's labelled units, the names of those of the batches that exist, and their finished results."""
    labels: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    text: dict[tuple[int, int], str] = {}
    order: dict[int, tuple[int, str]] = {}
    with get_session(engine) as session:
        for r in queries.label_rows(session=session, dataset_id=dataset_id):
            unit = (r.item_id, r.sentence_idx)
            labels[unit][r.annotator] = int(r.label)
            text[unit] = _sentence(r.sentences, r.sentence_idx)
            order[r.item_id] = (r.idx, r.external_id)
        sizes = queries.sentence_counts(session=session, dataset_id=dataset_id)
        names = queries.batch_names(session=session, batch_ids=batch_ids)
        results = {b: queries.done_results(session=session, batch_id=b) for b in batch_ids if b in names}
    return _Units(dict(labels), text, order, sizes), names, results


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
    u, names, results = _units(engine, dataset_id, batch_ids)
    codes = {b: _batch_codes(r, u.sizes) for b, r in results.items()}
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
    u, _, results = _units(engine, dataset_id, batch_ids)
    codes = {b: _batch_codes(r, u.sizes) for b, r in results.items()}
    verdicts = {b: _batch_verdict_words(r, u.sizes) for b, r in results.items()}
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
