"""DHP queries: user-added tasks, sets of perturbed texts, benchmark runs and their scores (keyword-only,
`*, session`, typed results)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlmodel import Session

from db.engine import dialect_insert
from db.models import DhpRun, DhpRunPublic, DhpScore, DhpSet, DhpSetPublic, DhpTask, DhpText

SCORE_KEYS = ("item_id", "perturbation", "level", "metric", "mean")


# -- tasks ---------------------------------------------------------------------------------------------
def task_rows(*, session: Session) -> list[DhpTask]:
    """The user-added tasks, oldest first."""
    return list(session.execute(select(DhpTask).order_by(DhpTask.id)).scalars().all())


def task_row(*, session: Session, key: str) -> DhpTask | None:
    return session.execute(select(DhpTask).where(DhpTask.key == key)).scalars().first()


def add_task(*, session: Session, row: DhpTask) -> None:
    session.add(row)
    session.flush()


# -- sets and their texts ------------------------------------------------------------------------------
def add_set(*, session: Session, row: DhpSet, texts: list[dict[str, Any]] | None = None) -> int:
    """Store a set; `texts` are dhp_text rows without their set_id (it is filled in). Returns the set's id."""
    session.add(row)
    session.flush()
    sid = int(row.id)  # type: ignore[arg-type]
    if texts:
        session.execute(DhpText.__table__.insert(), [{**t, "set_id": sid} for t in texts])
    # The chosen perturbations, in order, so an LLM pass and the tables know the plan.
    session.execute(update(DhpSet).where(DhpSet.id == sid).values(items=row.items))  # type: ignore[arg-type]
    return sid


def set_row(*, session: Session, set_id: int) -> DhpSet | None:
    return session.get(DhpSet, set_id)


def get_set(*, session: Session, set_id: int) -> DhpSetPublic | None:
    row = session.get(DhpSet, set_id)
    return DhpSetPublic.model_validate(row) if row else None


def list_sets(*, session: Session, task: str | None = None) -> list[DhpSetPublic]:
    """Sets, newest first; only the task's with `task`."""
    q = select(DhpSet).order_by(DhpSet.id.desc())  # type: ignore[union-attr]
    if task:
        q = q.where(DhpSet.task == task)
    return [DhpSetPublic.model_validate(r) for r in session.execute(q).scalars().all()]


def delete_set(*, session: Session, set_id: int) -> bool:
    """Delete a set with its texts, runs and scores; False when it does not exist."""
    row = session.get(DhpSet, set_id)
    if row is None:
        return False
    session.delete(row)
    return True


def finish_set(*, session: Session, set_id: int, status: str, error: str | None) -> None:
    session.execute(update(DhpSet).where(DhpSet.id == set_id).values(status=status, error=error))  # type: ignore[arg-type]


def texts(*, session: Session, set_id: int, pending: bool = False, made: bool = False) -> list[DhpText]:
    """The texts of a set in order; `pending`: only those waiting for an LLM, `made`: only those with a text."""
    q = select(DhpText).where(DhpText.set_id == set_id)  # type: ignore[arg-type]
    if pending:
        q = q.where(DhpText.detail == "pending")  # type: ignore[arg-type]
    if made:
        q = q.where(DhpText.text.is_not(None))  # type: ignore[union-attr]
    return list(session.execute(q.order_by(DhpText.id)).scalars().all())  # type: ignore[arg-type]


def count_made_texts(*, session: Session, set_id: int) -> int:
    """How many texts of a set have a text (a perturbation that failed has none)."""
    q = select(func.count()).select_from(DhpText).where(DhpText.set_id == set_id, DhpText.text.is_not(None))  # type: ignore[union-attr]
    return int(session.execute(q).scalar_one())


def save_perturbed(*, session: Session, text_id: int, text: str | None, detail: str, error: str | None) -> None:
    """The outcome of one LLM-based perturbation."""
    session.execute(update(DhpText).where(DhpText.id == text_id).values(text=text, detail=detail, error=error))  # type: ignore[arg-type]


# -- runs and scores -----------------------------------------------------------------------------------
def add_run(*, session: Session, row: DhpRun) -> int:
    session.add(row)
    session.flush()
    return int(row.id)  # type: ignore[arg-type]


def get_run(*, session: Session, run_id: int) -> DhpRunPublic | None:
    row = session.get(DhpRun, run_id)
    return DhpRunPublic.model_validate(row) if row else None


def list_runs(*, session: Session, set_id: int | None = None) -> list[DhpRunPublic]:
    """Runs, newest first; only the set's with `set_id`."""
    q = select(DhpRun).order_by(DhpRun.id.desc())  # type: ignore[union-attr]
    if set_id is not None:
        q = q.where(DhpRun.set_id == set_id)
    return [DhpRunPublic.model_validate(r) for r in session.execute(q).scalars().all()]


def live_runs(
    *, session: Session, set_id: int, model: str, base_url: str | None, repeats: int, seed: int
) -> list[DhpRunPublic]:
    """Queued, running or finished runs of the set with this model, endpoint, r and seed, newest first."""
    q = select(DhpRun).where(
        DhpRun.set_id == set_id,
        DhpRun.model == model,
        DhpRun.base_url == base_url,
        DhpRun.repeats == repeats,
        DhpRun.seed == seed,
        DhpRun.status.in_(("queued", "running", "done")),  # type: ignore[union-attr]
    )
    rows = session.execute(q.order_by(DhpRun.id.desc())).scalars()  # type: ignore[union-attr]
    return [DhpRunPublic.model_validate(r) for r in rows]


def scored(*, session: Session, run_id: int) -> set[tuple[int, str]]:
    """(text id, metric) of the scores a run has saved."""
    rows = session.execute(select(DhpScore.text_id, DhpScore.metric).where(DhpScore.run_id == run_id)).all()
    return {(int(t), str(m)) for t, m in rows}


def save_score(*, session: Session, row: dict[str, Any]) -> None:
    """Insert or replace the scores of one text on one metric by a run."""
    ins = dialect_insert(session.connection())(DhpScore.__table__)
    session.execute(
        ins.on_conflict_do_update(
            index_elements=["run_id", "text_id", "metric"],
            set_={"scores": ins.excluded.scores, "mean": ins.excluded.mean, "error": ins.excluded.error},
        ),
        [row],
    )


def score_rows(*, session: Session, run_id: int) -> list[tuple[str, str, str, str, float | None]]:
    """(item_id, perturbation, level, metric, mean) of every score of a run."""
    rows = session.execute(
        select(DhpText.item_id, DhpText.perturbation, DhpText.level, DhpScore.metric, DhpScore.mean)
        .join(DhpScore, DhpScore.text_id == DhpText.id)  # type: ignore[arg-type]
        .where(DhpScore.run_id == run_id)
    ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]
