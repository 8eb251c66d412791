"""Assignment: dataset items given to annotators, balanced; each annotator's queue and progress."""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine

from db import annotations as queries
from db import datasets as db_datasets
from db.annotations import AnnotationItem, QueueEntry
from db.engine import get_session
from db.models import utcnow
from services.errors import InputError

log = logging.getLogger(__name__)


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
        if db_datasets.get_dataset(session=session, dataset_id=dataset_id) is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        items = db_datasets.item_ids(session=session, dataset_id=dataset_id)
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
            {
                "dataset_id": dataset_id,
                "dataset_item_id": item_id,
                "annotator_id": a,
                "status": "pending",
                "origin": "manual",
                "assigned_at": now,
                "done_at": None,
            }
            for item_id in items
            for a in new.get(item_id, [])
        ]
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


def get_item(engine: Engine, item_id: int) -> AnnotationItem | None:
    """A dataset item as the annotator sees it."""
    with get_session(engine) as session:
        return queries.get_item(session=session, item_id=item_id)


def datasets_of(engine: Engine, annotator_id: int) -> list[int]:
    """The datasets where an annotator has assignments: all a personal link opens."""
    with get_session(engine) as session:
        return queries.datasets_of(session=session, annotator_id=annotator_id)
