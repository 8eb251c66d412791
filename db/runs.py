"""Runs: a candidate's rounds with their verdicts and rewrites, loaded back as domain objects."""

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
from services.dcr.results import Evaluation, ExtraReason, Rewrite, Round, Score, SentenceVerdict, score_evaluation
from services.llm import CallRecord, summarize_records


def create_run(*, session: Session, data: RunCreate) -> Run:
    ref = get_or_create_document(session=session, text=data.reference)
    cand = get_or_create_document(session=session, text=data.candidate)
    run = Run.model_validate(data, update={"reference_id": ref.id, "candidate_id": cand.id})
    session.add(run)
    session.flush()
    return run


def save_round(*, session: Session, run_id: int, rnd: Round) -> int:
    """Insert or replace round `rnd.index` of a run with its sentences and rewrites."""
    existing = session.exec(select(EvalRound).where(EvalRound.run_id == run_id, EvalRound.idx == rnd.index)).first()
    if existing is not None:
        _delete_round_children(session, [existing.id])
        session.delete(existing)
        session.flush()
    ev = rnd.evaluation
    score = ev.score or Score(k=0, alpha=0, beta=0, z=None, z_hat=None)
    row = EvalRound(
        run_id=run_id,
        idx=rnd.index,
        text=rnd.text,
        k=score.k,
        alpha=score.alpha,
        beta=score.beta,
        z=score.z,
        z_hat=score.z_hat,
        n_judged=ev.n_judged,
        n_unknown=ev.n_unknown,
        model_is_consistent=ev.model_is_consistent,
        error=ev.error,
        improve_error=rnd.improve_error,
        notes=list(ev.notes),
        extras=[{"text": x.text, "mark": x.mark} for x in ev.extras],
        amc_agree=ev.amc_agreement[0] if ev.amc_agreement else None,
        amc_compared=ev.amc_agreement[1] if ev.amc_agreement else None,
    )
    session.add(row)
    session.flush()
    for s in ev.sentences:
        session.add(
            SentenceRow(
                round_id=row.id,
                idx=s.index,
                text=s.text,
                verdict=s.verdict,
                reason=s.reason,
                mark=s.mark,
                rule_mark=s.rule_mark,
                error=s.error,
            )
        )
    for rw in rnd.rewrites:
        session.add(
            RewriteRow(
                round_id=row.id, idx=rw.index, before=rw.before, after=rw.after, reason=rw.reason, accepted=rw.accepted
            )
        )
    run = session.get(Run, run_id)
    if run is not None:
        run.n_rounds = max(run.n_rounds, rnd.index + 1)
        if rnd.index == 0:
            run.initial_score = score.z_hat
        run.final_score = score.z_hat if rnd.index + 1 >= run.n_rounds else run.final_score
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
class RunDetail:
    """A run with its documents, rounds (domain objects) and usage."""

    run: RunPublic
    reference: str
    candidate: str
    rounds: list[Round]
    usage: dict[str, Any]
    usage_by_stage: list[dict[str, Any]] = field(default_factory=list)


def _stored_score(r: EvalRound, sentences: list[SentenceRow]) -> Score:
    """Eq. 3 again from the stored marks, so a loaded round carries its partial score and unknown count; the
    user's alpha and beta are the stored ones less Appendix E.4's offsets for the paragraph-level reasons."""
    if not sentences:
        return Score(k=r.k, alpha=r.alpha, beta=r.beta, z=r.z, z_hat=r.z_hat)
    extra_marks = [x.get("mark") for x in r.extras if x.get("mark") is not None]
    return score_evaluation(
        [s.mark for s in sorted(sentences, key=lambda s: s.idx)],
        extra_marks,
        alpha=r.alpha + sum(extra_marks),
        beta=r.beta + len(extra_marks),
    )


def _round_from_rows(r: EvalRound, sentences: list[SentenceRow], rewrites: list[RewriteRow]) -> Round:
    ev = Evaluation(
        sentences=[
            SentenceVerdict(
                index=s.idx,
                text=s.text,
                verdict=s.verdict,
                reason=s.reason,  # type: ignore[arg-type]
                mark=s.mark,
                rule_mark=s.rule_mark,
                error=s.error,
            )
            for s in sorted(sentences, key=lambda s: s.idx)
        ],
        extras=[ExtraReason(text=x.get("text", ""), mark=x.get("mark")) for x in r.extras],
        score=_stored_score(r, sentences),
        model_is_consistent=r.model_is_consistent,
        error=r.error,
        notes=list(r.notes),
        amc_agreement=(r.amc_agree, r.amc_compared) if r.amc_compared is not None else None,  # type: ignore[arg-type]
    )
    return Round(
        index=r.idx,
        sentences=[s.text for s in ev.sentences],
        evaluation=ev,
        rewrites=[
            Rewrite(index=w.idx, before=w.before, after=w.after, reason=w.reason, accepted=w.accepted)
            for w in sorted(rewrites, key=lambda w: w.idx)
        ],
        improve_error=r.improve_error,
    )


def load_run(*, session: Session, run_id: int) -> RunDetail | None:
    """Everything about a run, or None if it does not exist."""
    run = session.get(Run, run_id)
    if run is None:
        return None
    rounds_rows = session.exec(select(EvalRound).where(EvalRound.run_id == run_id).order_by(EvalRound.idx)).all()
    ids = [r.id for r in rounds_rows]
    sentences = session.exec(select(SentenceRow).where(col(SentenceRow.round_id).in_(ids))).all() if ids else []
    rewrites = session.exec(select(RewriteRow).where(col(RewriteRow.round_id).in_(ids))).all() if ids else []
    rounds = [
        _round_from_rows(r, [s for s in sentences if s.round_id == r.id], [w for w in rewrites if w.round_id == r.id])
        for r in rounds_rows
    ]
    events = session.exec(select(UsageEvent).where(UsageEvent.run_id == run_id)).all()
    records = [
        CallRecord(
            stage=e.stage,
            prompt_version=e.prompt_version,
            cached=e.cached,
            requests=e.requests,
            prompt_tokens=e.prompt_tokens,
            completion_tokens=e.completion_tokens,
            latency_ms=e.latency_ms,
            error=e.error,
        )
        for e in events
    ]
    stages = sorted({r.stage for r in records})
    by_stage = [{"stage": st, **summarize_records([r for r in records if r.stage == st])} for st in stages]
    ref = session.get(Document, run.reference_id)
    cand = session.get(Document, run.candidate_id)
    return RunDetail(
        run=RunPublic.model_validate(run),
        reference=ref.text if ref else "",
        candidate=cand.text if cand else "",
        rounds=rounds,
        usage=summarize_records(records),
        usage_by_stage=by_stage,
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
