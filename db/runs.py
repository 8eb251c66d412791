"""Runs: a candidate's rounds with their verdicts and rewrites, stored and loaded as rows (services/run_records.py
maps them to and from the domain's rounds)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, delete, select

from db.documents import get_or_create_document
from db.models import (
    Document,
    EvalRound,
    LLMCacheEntry,
    MethodResult,
    MethodResultPublic,
    RewriteRow,
    Run,
    RunCreate,
    RunPublic,
    SentenceRow,
    UsageEvent,
    utcnow,
)


def create_run(*, session: Session, data: RunCreate) -> Run:
    ref = get_or_create_document(session=session, text=data.reference)
    cand = get_or_create_document(session=session, text=data.candidate)
    run = Run.model_validate(data, update={"reference_id": ref.id, "candidate_id": cand.id})
    session.add(run)
    session.flush()
    return run


def save_round(
    *,
    session: Session,
    run_id: int,
    round_row: dict[str, Any],
    sentences: list[dict[str, Any]],
    rewrites: list[dict[str, Any]],
) -> int:
    """Insert or replace round `round_row["idx"]` of a run with its sentences and rewrites (each a dict of the
    row's columns)."""
    idx = round_row["idx"]
    existing = session.exec(select(EvalRound).where(EvalRound.run_id == run_id, EvalRound.idx == idx)).first()
    if existing is not None:
        _delete_round_children(session, [existing.id])
        session.delete(existing)
        session.flush()
    row = EvalRound(run_id=run_id, **round_row)
    session.add(row)
    session.flush()
    for s in sentences:
        session.add(SentenceRow(round_id=row.id, **s))
    for rw in rewrites:
        session.add(RewriteRow(round_id=row.id, **rw))
    run = session.get(Run, run_id)
    if run is not None:
        run.n_rounds = max(run.n_rounds, idx + 1)
        if idx == 0:
            run.initial_score = row.z_hat
        run.final_score = row.z_hat if idx + 1 >= run.n_rounds else run.final_score
        run.updated_at = utcnow()
        session.add(run)
    session.flush()
    return row.id  # type: ignore[return-value]


def finish_run(*, session: Session, run_id: int, status: str, error: str | None = None) -> None:
    run = session.get(Run, run_id)
    if run is not None:
        run.status = status
        run.error = error
        run.updated_at = utcnow()
        session.add(run)


@dataclass
class RunRows:
    """A run's rows: the run, its documents' texts, each round with its sentences and rewrites (in order), and
    its usage events."""

    run: RunPublic
    reference: str
    candidate: str
    rounds: list[tuple[EvalRound, list[SentenceRow], list[RewriteRow]]]
    usage: list[UsageEvent] = field(default_factory=list)


def load_run(*, session: Session, run_id: int) -> RunRows | None:
    """Every row of a run, or None if it does not exist."""
    run = session.get(Run, run_id)
    if run is None:
        return None
    rounds_rows = session.exec(select(EvalRound).where(EvalRound.run_id == run_id).order_by(EvalRound.idx)).all()
    ids = [r.id for r in rounds_rows]
    sentences = session.exec(select(SentenceRow).where(col(SentenceRow.round_id).in_(ids))).all() if ids else []
    rewrites = session.exec(select(RewriteRow).where(col(RewriteRow.round_id).in_(ids))).all() if ids else []
    rounds = [
        (
            r,
            sorted((s for s in sentences if s.round_id == r.id), key=lambda s: s.idx),
            sorted((w for w in rewrites if w.round_id == r.id), key=lambda w: w.idx),
        )
        for r in rounds_rows
    ]
    events = list(session.exec(select(UsageEvent).where(UsageEvent.run_id == run_id)).all())
    ref = session.get(Document, run.reference_id)
    cand = session.get(Document, run.candidate_id)
    return RunRows(
        run=RunPublic.model_validate(run),
        reference=ref.text if ref else "",
        candidate=cand.text if cand else "",
        rounds=rounds,
        usage=events,
    )


def list_runs(*, session: Session, limit: int = 500) -> list[tuple[RunPublic, str]]:
    """Newest runs first, each with the start of its candidate text."""
    rows = session.exec(
        select(Run, Document).join(Document, Document.id == Run.candidate_id).order_by(col(Run.id).desc()).limit(limit)
    ).all()
    return [(RunPublic.model_validate(run), doc.text[:160]) for run, doc in rows]


def _delete_round_children(session: Session, round_ids: list[int | None]) -> None:
    ids = [i for i in round_ids if i is not None]
    if ids:
        session.exec(delete(SentenceRow).where(col(SentenceRow.round_id).in_(ids)))  # type: ignore[call-overload]
        session.exec(delete(RewriteRow).where(col(RewriteRow.round_id).in_(ids)))  # type: ignore[call-overload]


def delete_run(*, session: Session, run_id: int) -> bool:
    """Delete a run with its rounds, verdicts, rewrites and usage; documents stay (they may be shared)."""
    run = session.get(Run, run_id)
    if run is None:
        return False
    round_ids = list(session.exec(select(EvalRound.id).where(EvalRound.run_id == run_id)).all())
    _delete_round_children(session, round_ids)
    session.exec(delete(EvalRound).where(EvalRound.run_id == run_id))  # type: ignore[call-overload]
    session.exec(delete(UsageEvent).where(UsageEvent.run_id == run_id))  # type: ignore[call-overload]
    session.delete(run)
    return True


def set_rewrite_accepted(*, session: Session, run_id: int, round_idx: int, sentence_idx: int, accepted: bool) -> bool:
    row = session.exec(
        select(RewriteRow)
        .join(EvalRound, EvalRound.id == RewriteRow.round_id)
        .where(EvalRound.run_id == run_id, EvalRound.idx == round_idx, RewriteRow.idx == sentence_idx)
    ).first()
    if row is None:
        return False
    row.accepted = accepted
    session.add(row)
    return True


def counts(*, session: Session) -> dict[str, int]:
    """How many of each thing the database holds."""

    def n(model: Any) -> int:
        return int(session.exec(select(func.count()).select_from(model)).one())

    return {
        "runs": n(Run),
        "documents": n(Document),
        "rounds": n(EvalRound),
        "sentence verdicts": n(SentenceRow),
        "cached answers": n(LLMCacheEntry),
        "model calls": int(session.exec(select(func.coalesce(func.sum(UsageEvent.requests), 0))).one()),
    }


def set_max_rounds(*, session: Session, run_id: int, max_rounds: int) -> None:
    """Record the m a run is improved up to now."""
    row = session.get(Run, run_id)
    if row is not None and row.max_rounds != max_rounds:
        row.max_rounds = max_rounds
        session.add(row)


def set_final_score(*, session: Session, run_id: int, score: float | None) -> None:
    """The score of the text a run delivers (its last round's, unless rewrites were rejected)."""
    row = session.get(Run, run_id)
    if row is not None:
        row.final_score = score
        session.add(row)


def set_single_score(*, session: Session, run_id: int, score: float | None) -> None:
    """A one-step run (an NLI paradigm): its score is both the first and the final one."""
    row = session.get(Run, run_id)
    if row is not None:
        row.initial_score = row.final_score = score
        row.n_rounds = 1
        session.add(row)


# -- method records (the factual-inconsistency paradigms and comparisons) ---------------------------------
def save_method_result(*, session: Session, run_id: int, record: dict[str, Any], group: str | None = None) -> None:
    """Store a method's record (services.nli.paradigms.result_record shape) for a run."""
    session.add(
        MethodResult(
            run_id=run_id,
            method=record["method"],
            window=record.get("window"),
            label=record.get("label"),
            score=record.get("score"),
            n_units=record.get("n_units", 0),
            n_failed=record.get("n_failed", 0),
            compare_group=group,
            detail=record,
        )
    )


def get_method_result(*, session: Session, run_id: int) -> MethodResultPublic | None:
    row = session.exec(select(MethodResult).where(MethodResult.run_id == run_id)).first()
    return MethodResultPublic.model_validate(row) if row else None


def group_results(*, session: Session, group: str) -> list[MethodResultPublic]:
    rows = session.exec(
        select(MethodResult).where(MethodResult.compare_group == group).order_by(col(MethodResult.run_id))
    ).all()
    return [MethodResultPublic.model_validate(r) for r in rows]


def method_results(*, session: Session, run_ids: Sequence[int]) -> dict[int, MethodResultPublic]:
    if not run_ids:
        return {}
    rows = session.exec(select(MethodResult).where(col(MethodResult.run_id).in_(list(run_ids)))).all()
    return {r.run_id: MethodResultPublic.model_validate(r) for r in rows}
