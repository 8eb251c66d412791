"""Runs between the domain and the database: a round as rows and back, a run's rows as a `RunDetail`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlmodel import Session

from db import runs as db_runs
from db.models import EvalRound, RewriteRow, RunPublic, SentenceRow
from db.usage import save_usage as save_usage_rows
from services.dcr.results import Evaluation, ExtraReason, Rewrite, Round, Score, SentenceVerdict, score_evaluation
from services.llm import CallRecord, summarize_records


@dataclass
class RunDetail:
    """A run with its documents, rounds (domain objects) and usage."""

    run: RunPublic
    reference: str
    candidate: str
    rounds: list[Round]
    usage: dict[str, Any]
    usage_by_stage: list[dict[str, Any]] = field(default_factory=list)


def round_rows(rnd: Round) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The columns of a round's row, of its sentences' rows and of its rewrites' rows."""
    ev = rnd.evaluation
    score = ev.score or Score(k=0, alpha=0, beta=0, z=None, z_hat=None)
    row = {
        "idx": rnd.index,
        "text": rnd.text,
        "k": score.k,
        "alpha": score.alpha,
        "beta": score.beta,
        "z": score.z,
        "z_hat": score.z_hat,
        "n_judged": ev.n_judged,
        "n_unknown": ev.n_unknown,
        "model_is_consistent": ev.model_is_consistent,
        "error": ev.error,
        "improve_error": rnd.improve_error,
        "notes": list(ev.notes),
        "extras": [{"text": x.text, "mark": x.mark} for x in ev.extras],
        "amc_agree": ev.amc_agreement[0] if ev.amc_agreement else None,
        "amc_compared": ev.amc_agreement[1] if ev.amc_agreement else None,
    }
    sentences = [
        {
            "idx": s.index,
            "text": s.text,
            "verdict": s.verdict,
            "reason": s.reason,
            "mark": s.mark,
            "rule_mark": s.rule_mark,
            "error": s.error,
        }
        for s in ev.sentences
    ]
    rewrites = [
        {"idx": rw.index, "before": rw.before, "after": rw.after, "reason": rw.reason, "accepted": rw.accepted}
        for rw in rnd.rewrites
    ]
    return row, sentences, rewrites


def save_round(*, session: Session, run_id: int, rnd: Round) -> int:
    """Insert or replace round `rnd.index` of a run with its sentences and rewrites."""
    row, sentences, rewrites = round_rows(rnd)
    return db_runs.save_round(session=session, run_id=run_id, round_row=row, sentences=sentences, rewrites=rewrites)


def save_usage(*, session: Session, run_id: int | None, records: list[CallRecord]) -> None:
    """One usage row per call record (the answer's text is not stored)."""
    events = [{k: v for k, v in asdict(r).items() if k != "raw"} for r in records]
    save_usage_rows(session=session, run_id=run_id, events=events)


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


def round_from_rows(r: EvalRound, sentences: list[SentenceRow], rewrites: list[RewriteRow]) -> Round:
    """The domain round stored in these rows."""
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
    rows = db_runs.load_run(session=session, run_id=run_id)
    if rows is None:
        return None
    records = [
        CallRecord(
            stage=e.stage,
            prompt_version=e.prompt_version,
            cached=e.cached,
            requests=e.requests,
            answered=e.answered,
            prompt_tokens=e.prompt_tokens,
            completion_tokens=e.completion_tokens,
            latency_ms=e.latency_ms,
            error=e.error,
        )
        for e in rows.usage
    ]
    stages = sorted({r.stage for r in records})
    by_stage = [{"stage": st, **summarize_records([r for r in records if r.stage == st])} for st in stages]
    return RunDetail(
        run=rows.run,
        reference=rows.reference,
        candidate=rows.candidate,
        rounds=[round_from_rows(r, s, w) for r, s, w in rows.rounds],
        usage=summarize_records(records),
        usage_by_stage=by_stage,
    )
