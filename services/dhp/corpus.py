"""DHP material: the tasks (built-in and user-added), the sets of good texts with their perturbed versions, and
the sample and uploaded items they start from."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import dhp as db
from db.cache import SqlCache
from db.engine import get_session
from db.models import DhpSet, DhpSetPublic, DhpTask, utcnow
from services.config import BackendConfig, backend_from_record
from services.dhp import perturb
from services.dhp.catalogue import TASKS, TaskSpec, custom_task
from services.dhp.perturb import Item
from services.dhp.scoring import answer_format_of
from services.dhp.statistics import ORIGINAL
from services.llm import get_client

TEXT_COLUMNS = ["text_id", "item_id", "perturbation", "level", "original", "text", "detail", "error"]


# -- tasks ---------------------------------------------------------------------------------------------
def _task_from_row(row: DhpTask) -> TaskSpec:
    return custom_task(
        row.key,
        row.name,
        text_label=row.text_label,
        source_label=row.source_label,
        metrics=[(m["name"], m.get("definition", "")) for m in row.metrics],
        perturbations=row.perturbations,
        definition=row.definition,
    )


def list_tasks(*, session: Session) -> list[TaskSpec]:
    """The built-in tasks, then the ones users added."""
    return [*TASKS.values(), *(_task_from_row(r) for r in db.task_rows(session=session))]


def get_task(key: str, *, session: Session) -> TaskSpec | None:
    if key in TASKS:
        return TASKS[key]
    row = db.task_row(session=session, key=key)
    return _task_from_row(row) if row else None


def add_task(spec: TaskSpec, *, session: Session) -> None:
    """Store a user-added task; ValueError when its key is taken."""
    if get_task(spec.key, session=session) is not None:
        raise ValueError(f"A task with the key '{spec.key}' exists already.")
    row = DhpTask(
        key=spec.key,
        name=spec.name,
        text_label=spec.text_label,
        source_label=spec.source_label,
        definition=spec.definition,
        metrics=[{"name": m.name, "definition": m.definition} for m in spec.metrics],
        perturbations=[p.record() for p in spec.perturbations],
    )
    db.add_task(session=session, row=row)


# -- sets of perturbed texts ----------------------------------------------------------------------------
def _item_record(it: Item) -> dict[str, Any]:
    return {"id": it.id, "text": it.text, "source": it.source, **it.extra}


def _text_row(pz: perturb.Perturbed) -> dict[str, Any]:
    return {
        "item_id": pz.item_id,
        "perturbation": pz.perturbation,
        "level": pz.level,
        "text": pz.perturbed,
        "detail": pz.detail,
        "error": pz.error,
        "created_at": utcnow(),
    }


def create_set(
    task: TaskSpec,
    items: Sequence[Item],
    *,
    name: str,
    seed: int,
    session: Session,
    backend: BackendConfig | None = None,
    only: Sequence[str] | None = None,
    answer_format: str = "plain",
) -> int:
    """Store the originals and their rule-based perturbations now; LLM-based ones wait for `process_set`.

    `only` limits the set to some perturbation keys; without a backend the LLM-based ones are left out."""
    chosen = [p for p in task.perturbations if only is None or p.key in only]
    if backend is None:
        chosen = [p for p in chosen if p.spec.method == "rule"]
    llm = [p for p in chosen if p.spec.method == "llm"]
    row = DhpSet(
        name=name.strip() or f"{task.name} · seed {seed}",
        task=task.key,
        seed=seed,
        items=[_item_record(i) for i in items],
        status="generating" if llm else "ready",
        model=backend.model if (backend and llm) else "",
        params={**backend_params(backend), "answer_format": answer_format} if llm else {},
    )
    row.items = [*row.items]
    rows = [_text_row(perturb.Perturbed(i.id, ORIGINAL, "original", i.text, i.text, "the good text")) for i in items]
    for p in chosen:
        for it in items:
            if p.spec.method == "rule":
                rows.append(_text_row(perturb.apply_rule(p, it, items, seed)))
            else:
                rows.append(_text_row(perturb.Perturbed(it.id, p.key, p.level, it.text, None, "pending")))
    return db.add_set(session=session, row=row, texts=rows)


def backend_params(backend: BackendConfig | None) -> dict[str, Any]:
    """The public record of a backend (no key), as a set or a run stores it."""
    if backend is None:
        return {}
    d = backend.public()
    d.pop("has_api_key", None)
    return d


def backend_from_params(params: Mapping[str, Any]) -> BackendConfig:
    """A recorded backend; its key (never stored) comes from this process's environment."""
    return backend_from_record(
        params.get("kind", "embedded"),
        base_url=params.get("base_url"),
        model=params.get("model", ""),
        params=dict(params),
    )


def get_set(set_id: int, *, session: Session) -> DhpSetPublic | None:
    return db.get_set(session=session, set_id=set_id)


def list_sets(*, session: Session, task: str | None = None) -> list[DhpSetPublic]:
    return db.list_sets(session=session, task=task)


def set_items(s: DhpSetPublic) -> list[Item]:
    return perturb.items_from_records(s.items)


def texts_frame(set_id: int, *, session: Session) -> pd.DataFrame:
    """Every text of a set with its original: item_id, perturbation, level, original, text, detail, error."""
    rows = db.texts(session=session, set_id=set_id)
    originals = {r.item_id: r.text for r in rows if r.perturbation == ORIGINAL}
    return pd.DataFrame(
        [
            {
                "text_id": r.id,
                "item_id": r.item_id,
                "perturbation": r.perturbation,
                "level": r.level,
                "original": originals.get(r.item_id, ""),
                "text": r.text,
                "detail": r.detail,
                "error": r.error,
            }
            for r in rows
        ],
        columns=TEXT_COLUMNS,
    )


def process_set(engine: Engine, set_id: int, *, backend: BackendConfig | None = None) -> int:
    """Make the pending LLM-based perturbations of a set; returns how many failed."""
    with get_session(engine) as s:
        row = db.set_row(session=s, set_id=set_id)
        if row is None:
            return 0
        task = get_task(row.task, session=s)
        items = perturb.items_from_records(row.items)
        params = dict(row.params)
        todo = [(r.id, r.item_id, r.perturbation) for r in db.texts(session=s, set_id=set_id, pending=True)]
    if task is None:
        _finish_set(engine, set_id, "failed", f"task {row.task!r} is gone")
        return len(todo)
    backend = backend or backend_from_params(params)
    client = get_client(backend, cache=SqlCache(engine))
    by_id = {i.id: i for i in items}
    failed = 0
    lock = threading.Lock()

    def one(job: tuple[int, str, str]) -> None:
        nonlocal failed
        tid, iid, key = job
        pz = perturb.perturb_item(
            task,
            task.perturbation(key),
            by_id[iid],
            items,
            seed=0,
            client=client,
            answer_format=answer_format_of(params),
        )
        with lock:
            failed += pz.error is not None
        with get_session(engine) as s:
            db.save_perturbed(session=s, text_id=tid, text=pz.perturbed, detail=pz.detail, error=pz.error)

    with ThreadPoolExecutor(max_workers=max(1, backend.concurrency)) as pool:
        list(pool.map(one, todo))
    _finish_set(engine, set_id, "ready", f"{failed} LLM-based perturbation(s) failed" if failed else None)
    return failed


def _finish_set(engine: Engine, set_id: int, status: str, error: str | None) -> None:
    with get_session(engine) as s:
        db.finish_set(session=s, set_id=set_id, status=status, error=error)


def delete_set(set_id: int, *, session: Session) -> bool:
    return db.delete_set(session=session, set_id=set_id)


# -- samples ----------------------------------------------------------------------------------------------
def sample_items(task_key: str) -> list[Item]:
    """The app's own sample texts of a built-in task (samples/dhp.json); [] for other tasks."""
    import json

    from services.config import PROJECT_ROOT

    path = PROJECT_ROOT / "samples" / "dhp.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    block = data.get(task_key)
    return perturb.items_from_records(block["items"]) if block else []


def parse_items_upload(name: str, data: bytes | str) -> list[Item]:
    """Items from an uploaded JSONL, JSON or CSV file; ValueError (InputError) with a readable message."""
    from services.text import read_records

    return perturb.items_from_records(read_records(data, name))


# -- for pages, which hold no session ---------------------------------------------------------------------
def tasks(engine: Engine) -> list[TaskSpec]:
    """Every task (built-in, then user-added)."""
    with get_session(engine) as s:
        return list_tasks(session=s)


def new_task(engine: Engine, spec: TaskSpec) -> None:
    """Store a user-added task; ValueError when its key is taken."""
    with get_session(engine) as s:
        add_task(spec, session=s)


def sets(engine: Engine, task: str | None = None) -> list[DhpSetPublic]:
    """The sets (of one task), newest first."""
    with get_session(engine) as s:
        return list_sets(session=s, task=task)


def make_set(engine: Engine, task: TaskSpec, items: Sequence[Item], **options: Any) -> int:
    """`create_set` in its own transaction."""
    with get_session(engine) as s:
        return create_set(task, items, session=s, **options)


def find_set(engine: Engine, set_id: int) -> DhpSetPublic | None:
    with get_session(engine) as s:
        return get_set(set_id, session=s)


def set_texts(engine: Engine, set_id: int) -> pd.DataFrame:
    """`texts_frame` of a set."""
    with get_session(engine) as s:
        return texts_frame(set_id, session=s)
