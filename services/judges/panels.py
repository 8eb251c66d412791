"""Saved judge comparisons (what a judges report and its share link are built from) and the batches that
can be judges."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.engine import Engine

from db import batches as db_batches
from db import judges as db
from db.engine import get_session
from db.models import BatchPublic, JudgePanel, JudgePanelPublic
from services.errors import InputError


def candidate_batches(engine: Engine, dataset_id: int) -> list[BatchPublic]:
    """The dataset's batches that have finished some items (done, cancelled or still running)."""
    with get_session(engine) as session:
        found = db_batches.batches_for_dataset(session=session, dataset_id=dataset_id)
    return [b for b in found if b.status in ("done", "cancelled", "running")]


def save_panel(
    engine: Engine, dataset_id: int, batch_ids: list[int] | list[int | str], options: dict[str, Any], name: str = ""
) -> int:
    """The id of the saved comparison of these judges (batch ids, score columns) with these options."""
    if not batch_ids:
        raise InputError("Choose at least one judge.")
    # As stored: a JSON column gives tuples back as lists, and a choice must find its own row again.
    options = json.loads(json.dumps(options))
    with get_session(engine) as session:
        found = db.find_panel(session=session, dataset_id=dataset_id, batch_ids=batch_ids, options=options)
        if found is not None:
            return found
        row = JudgePanel(name=name[:200], dataset_id=dataset_id, batch_ids=list(batch_ids), options=options)
        return int(db.add_panel(session=session, row=row).id)


def list_panels(engine: Engine) -> list[JudgePanelPublic]:
    """Saved comparisons, newest first."""
    with get_session(engine) as session:
        return db.list_panels(session=session)


def get_panel(engine: Engine, panel_id: int) -> JudgePanelPublic | None:
    with get_session(engine) as session:
        return db.get_panel(session=session, panel_id=panel_id)


def stamp(engine: Engine, dataset_id: int, refs: list[int] | list[int | str]) -> str:
    """Changes when the judges' results, the dataset's score columns or its annotator labels change: the
    cards' cache key."""
    from db import metaeval as db_metaeval

    with get_session(engine) as session:
        parts = [db.labels_stamp(session=session, dataset_id=dataset_id)]
        if any(isinstance(r, str) for r in refs):
            parts.append(db_metaeval.baseline_stamp(session=session, dataset_id=dataset_id))
        parts += [db_metaeval.batch_stamp(session=session, batch_id=r) for r in refs if isinstance(r, int)]
    return "|".join(parts)
