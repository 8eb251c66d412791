"""Runs: evaluate a candidate (round 0), improve it round by round, and save every step."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import runs as db_runs
from db.cache import SqlCache
from db.engine import get_session
from db.models import MethodResultPublic, RunCreate
from services import dcr, estimates
from services.config import BackendConfig, get_settings
from services.errors import InputError
from services.llm import UsageLedger, get_client
from services.nli import paradigms as nli
from services.run_records import RunDetail, load_run, save_round, save_usage
from services.text import check_pair, estimate_tokens

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

PROMPT_OVERHEAD_TOKENS = 450


def _evidence_model(bulk: bool = False) -> str:
    from services.dcr import evidence  # numpy and the checker load only for a run that uses it

    if bulk:  # a batch aligns as its worker will: lexically, unless EVIDENCE_EMBEDDINGS_IN_BULK
        with evidence.bulk():
            return evidence.model_name()
    return evidence.model_name()


def recorded_config(backend: BackendConfig, cfg: dcr.DCRConfig, *, bulk: bool = False) -> dict:
    """What a run or batch records of its backend and prompts (never the key); `bulk`: for a batch, whose
    evidence checker aligns as bulk work does (services.dcr.evidence.bulk)."""
    return {
        "backend_kind": backend.kind,
        "model": backend.model if cfg.uses_model else _evidence_model(bulk),
        "base_url": None if backend.is_embedded or not cfg.uses_model else backend.public_url,
        "params": {k: v for k, v in backend.public().items() if k not in ("base_url", "model", "kind")},
        "prompt_versions": cfg.prompt_versions(),
    }


def check_context(backend: BackendConfig, reference: str, candidate: str) -> None:
    """Refuse up front what the embedded model cannot read at once, with what to do instead."""
    if not backend.is_embedded:
        return
    n_ctx = get_settings().embedded_ctx
    need = estimate_tokens(reference) + 2 * estimate_tokens(candidate) + PROMPT_OVERHEAD_TOKENS + backend.max_tokens
    if need > n_ctx:
        raise InputError(
            f"This pair needs about {need:,} tokens (reference ~{estimate_tokens(reference):,}, candidate "
            f"~{estimate_tokens(candidate):,}, plus prompt and answer), more than the embedded model's "
            f"{n_ctx:,}-token context. Shorten the reference, or connect a long-context model in Settings."
        )


def start_run(
    engine: Engine,
    backend: BackendConfig,
    reference: str,
    candidate: str,
    cfg: dcr.DCRConfig,
    *,
    source: str = "app",
    title: str = "",
    progress: Progress | None = None,
) -> int:
    """Validate, create the run and evaluate round 0. Raises InputError for input the user must fix."""
    reference, candidate = reference.strip(), candidate.strip()
    sentences = check_pair(reference, candidate, max_chars=get_settings().max_input_chars)
    if cfg.uses_model:  # the evidence checker reads any length and never starts the model
        check_context(backend, reference, candidate)
    units = dcr.candidate_units(candidate, cfg, sentences)
    with get_session(engine) as session:
        run = db_runs.create_run(
            session=session,
            data=RunCreate(
                reference=reference,
                candidate=candidate,
                title=title or candidate[:80],
                source=source,
                task=cfg.task,
                criteria=cfg.criteria,
                method=cfg.method,
                amc=cfg.amc,
                max_rounds=cfg.max_rounds,
                **recorded_config(backend, cfg),
            ),
        )
        run_id: int = run.id  # type: ignore[assignment]
    ledger = UsageLedger()
    client = get_client(backend, cache=SqlCache(engine), ledger=ledger)
    if progress:
        if cfg.uses_model:
            progress(f"Round 0: judging {len(units)} sentence(s)…")
        else:
            progress(f"Checking {len(units)} sentence(s) with the offline evidence checker…")
    try:
        rnd = dcr.first_round(client, reference, units, cfg)
    except Exception as exc:  # the embedded server failed to start, or a bug: keep the run, say why
        log.exception("run %s failed", run_id)
        with get_session(engine) as session:
            save_usage(session=session, run_id=run_id, records=ledger.records)
            db_runs.finish_run(session=session, run_id=run_id, status="failed", error=str(exc))
        return run_id
    with get_session(engine) as session:
        save_round(session=session, run_id=run_id, rnd=rnd)
        save_usage(session=session, run_id=run_id, records=ledger.records)
        ev = rnd.evaluation
        db_runs.finish_run(
            session=session, run_id=run_id, status="failed" if ev.error and ev.n_judged == 0 else "done", error=ev.error
        )
    return run_id


def improve_run(
    engine: Engine,
    backend: BackendConfig,
    run_id: int,
    *,
    max_rounds: int | None = None,
    progress: Progress | None = None,
) -> RunDetail:
    """Algorithm 1 from the run's last round; each round is saved as soon as it is done."""
    with get_session(engine) as session:
        detail = load_run(session=session, run_id=run_id)
    if detail is None:
        raise InputError(f"Run {run_id} does not exist (deleted?).")
    r = detail.run
    rounds = detail.rounds
    if not rounds:
        raise InputError("This run has no evaluated round to improve; evaluate it again.")
    first_score = rounds[0].evaluation.score
    cfg = dcr.DCRConfig(
        task=r.task,
        criteria=r.criteria,
        method=r.method,
        amc=r.amc,  # type: ignore[arg-type]
        max_rounds=max_rounds if max_rounds is not None else r.max_rounds,
        alpha=first_score.set_alpha if first_score else dcr.DEFAULT_ALPHA,
        beta=first_score.set_beta if first_score else dcr.DEFAULT_BETA,
    )
    # Rounds after the last are recomputed from it, so earlier choices stay as the user left them.
    ledger = UsageLedger()
    client = get_client(backend, cache=SqlCache(engine), ledger=ledger)

    def saved(rnd: dcr.Round) -> None:
        with get_session(engine) as session:
            save_round(session=session, run_id=run_id, rnd=rnd)
            save_usage(session=session, run_id=run_id, records=ledger.records)
        ledger.records.clear()

    def improved(rnd: dcr.Round) -> None:
        if progress:
            n = sum(rw.changed for rw in rnd.rewrites)
            progress(f"Round {rnd.index}: {n} sentence(s) rewritten; re-evaluating…")
        saved(rnd)

    def evaluated(rnd: dcr.Round) -> None:
        if progress:
            s = rnd.evaluation.score
            progress(
                f"Round {rnd.index} judged: score {s.z_hat:.2f}"
                if s and s.z_hat is not None
                else f"Round {rnd.index} judged"
            )
        saved(rnd)

    with get_session(engine) as session:  # the m asked for now is the run's m: the stop reason is read against it
        db_runs.set_max_rounds(session=session, run_id=run_id, max_rounds=cfg.max_rounds)
    if progress:
        progress(f"Improving from round {rounds[-1].index} (at most {cfg.max_rounds} rounds)…")
    try:
        dcr.continue_rounds(client, detail.reference, rounds, cfg, on_improved=improved, on_round=evaluated)
    except Exception as exc:
        log.exception("improving run %s failed", run_id)
        with get_session(engine) as session:
            save_usage(session=session, run_id=run_id, records=ledger.records)
            db_runs.finish_run(session=session, run_id=run_id, status="failed", error=str(exc))
    else:
        with get_session(engine) as session:
            save_usage(session=session, run_id=run_id, records=ledger.records)
    with get_session(engine) as session:
        out = load_run(session=session, run_id=run_id)
        assert out is not None
        _store_delivered_score(session, out)
    return out


def delivered_calls(detail: RunDetail) -> int:
    """Model calls that scoring the delivered text takes: one evaluation with the run's evaluator."""
    r = detail.run
    out = dcr.delivered(detail.rounds)
    return estimates.calls_per_document(r.method, n_sentences=max(1, len(out.sentences)), window=1, amc=r.amc)


def score_delivered(engine: Engine, backend: BackendConfig, run_id: int) -> RunDetail:
    """Score the text the run delivers inside the run: one more evaluation with the run's evaluator, saved as a
    round that judges exactly that text (noted as such; it proposes no rewrite). Nothing to do when a round
    already judged it."""
    with get_session(engine) as session:
        detail = load_run(session=session, run_id=run_id)
    if detail is None:
        raise InputError(f"Run {run_id} does not exist (deleted?).")
    if not detail.rounds:
        raise InputError("This run has no evaluated round; evaluate it again.")
    out = dcr.delivered(detail.rounds)
    if out.judged:
        return detail
    r = detail.run
    first_score = detail.rounds[0].evaluation.score
    cfg = dcr.DCRConfig(
        task=r.task,
        criteria=r.criteria,
        method=r.method,
        amc=r.amc,  # type: ignore[arg-type]
        max_rounds=r.max_rounds,
        alpha=first_score.set_alpha if first_score else dcr.DEFAULT_ALPHA,
        beta=first_score.set_beta if first_score else dcr.DEFAULT_BETA,
    )
    ledger = UsageLedger()
    client = get_client(backend, cache=SqlCache(engine), ledger=ledger)
    sentences = list(out.sentences)
    ev = dcr.evaluate(client, detail.reference, sentences, cfg)
    ev.notes.append(dcr.DELIVERED_NOTE)
    rnd = dcr.Round(index=detail.rounds[-1].index + 1, sentences=sentences, evaluation=ev)
    with get_session(engine) as session:
        save_round(session=session, run_id=run_id, rnd=rnd)
        save_usage(session=session, run_id=run_id, records=ledger.records)
    with get_session(engine) as session:
        done = load_run(session=session, run_id=run_id)
        assert done is not None
        _store_delivered_score(session, done)
    return done


def _store_delivered_score(session: Session, detail: RunDetail) -> None:
    """The run's final score is the delivered text's (None when no round judged exactly that text)."""
    score = dcr.delivered(detail.rounds).z_hat
    if detail.run.final_score != score:
        db_runs.set_final_score(session=session, run_id=detail.run.id, score=score)
        detail.run.final_score = score


def stop_reason(detail: RunDetail) -> str | None:
    """Why the run's last round cannot be improved further, or None while Improve can go on.

    Algorithm 1 stops when every sentence is consistent or after m rounds; the app also stops early when a
    round gives the improver nothing to work with (no inconsistent sentence, a failed call, or no change).
    """
    if not detail.rounds:
        return None
    last = detail.rounds[-1]
    ev, r = last.evaluation, last.index
    if ev.fatal:
        return f"Round {r} could not be judged ({ev.error or 'the evaluator failed'}), so there is nothing to improve."
    if ev.all_consistent:
        return f"Every sentence is judged consistent in round {r}: Algorithm 1 stops here."
    if last.improve_error:
        return f"The improver failed in round {r} ({last.improve_error}); improving stopped there. Try Improve again."
    if last.rewrites and not any(rw.changed for rw in last.rewrites):
        return (
            f"The improver proposed no change in round {r}: judging the same text again would repeat its verdicts, "
            "so improving stopped early."
        )
    if not any(s.verdict == "inconsistent" for s in ev.sentences):
        unknown = f" ({ev.n_unknown} of {len(ev.sentences)} could not be judged)" if ev.n_unknown else ""
        return f"No sentence of round {r} is judged inconsistent{unknown}, so the improver has nothing to rewrite."
    if r >= detail.run.max_rounds and r > 0:
        return (
            f"Round {r} is the maximum m = {detail.run.max_rounds} asked for: Algorithm 1 stops here. "
            "Raise “Up to round” to go on."
        )
    return None


def load(engine: Engine, run_id: int) -> RunDetail | None:
    with get_session(engine) as session:
        return load_run(session=session, run_id=run_id)


def set_rewrite(engine: Engine, run_id: int, round_idx: int, sentence_idx: int, accepted: bool) -> bool:
    """Accept or reject a rewrite; the run's final score follows the text it now delivers."""
    with get_session(engine) as session:
        found = db_runs.set_rewrite_accepted(
            session=session, run_id=run_id, round_idx=round_idx, sentence_idx=sentence_idx, accepted=accepted
        )
        session.flush()
        detail = load_run(session=session, run_id=run_id) if found else None
        if detail is not None:
            _store_delivered_score(session, detail)
        return found


def delete(engine: Engine, run_id: int) -> bool:
    with get_session(engine) as session:
        return db_runs.delete_run(session=session, run_id=run_id)


HISTORY_LIMIT = 500


def list_all(engine: Engine, limit: int = HISTORY_LIMIT) -> list[tuple]:
    with get_session(engine) as session:
        return db_runs.list_runs(session=session, limit=limit)


def db_counts(engine: Engine) -> dict[str, int]:
    with get_session(engine) as session:
        return db_runs.counts(session=session)


def final_text(detail: RunDetail) -> str:
    """The final candidate under the user's accept/reject choices."""
    return " ".join(dcr.compose_final(detail.rounds))


def delivered(detail: RunDetail) -> dcr.Delivered:
    """What the run delivers: the final text, the score of the round that judged exactly it, the rewrites left out."""
    return dcr.delivered(detail.rounds)


def spent(detail: RunDetail, prices: BackendConfig) -> estimates.Spent:
    """What a run actually used: its tokens at the prices set on Settings for its model (`prices`: in use)."""
    r, u = detail.run, detail.usage or {}
    return estimates.spent(
        prices,
        model=r.model,
        base_url=r.base_url,
        kind=r.backend_kind,
        input_tokens=int(u.get("prompt_tokens", 0)),
        output_tokens=int(u.get("completion_tokens", 0)),
    )


def connection_check(backend: BackendConfig) -> tuple[bool, str]:
    """Test a backend with a tiny request; (ok, message saying what worked or what is wrong)."""
    return get_client(backend).test_connection()


# -- the factual-inconsistency paradigms (paper 003) and comparisons of methods on one document -----------
COMPARE_METHODS = ("dce-amc", "summ-nli", "sent-nli", "qg-qa")


def method_config(backend: BackendConfig, method: str, window: int) -> dict:
    """What an NLI run or batch records of its backend and prompts (never the key)."""
    versions = nli.prompt_versions(method) | ({"window": str(window)} if method in nli.WINDOWED else {})
    return {
        "backend_kind": backend.kind,
        "model": backend.model,
        "base_url": None if backend.is_embedded else backend.public_url,
        "params": {k: v for k, v in backend.public().items() if k not in ("base_url", "model", "kind")},
        "prompt_versions": versions,
    }


def start_method_run(
    engine: Engine,
    backend: BackendConfig,
    reference: str,
    candidate: str,
    method: str,
    *,
    window: int = 1,
    group: str | None = None,
    source: str = "app",
    title: str = "",
    progress: Progress | None = None,
) -> int:
    """Run Summ-NLI, Sent-NLI or QG-QA on one pair and save it. Raises InputError for input the user must fix.

    Documents over the token budget are cut to their retrieved sentences (Appendix B), so no length check
    is made here beyond the app's input limit.
    """
    if not nli.is_nli(method):
        raise InputError(f"Unknown method {method!r}; expected one of {', '.join(nli.NLI_METHODS)}.")
    if window < 1:
        raise InputError("The window w must be 1 or more sentences.")
    reference, candidate = reference.strip(), candidate.strip()
    check_pair(reference, candidate, max_chars=get_settings().max_input_chars)
    with get_session(engine) as session:
        run = db_runs.create_run(
            session=session,
            data=RunCreate(
                reference=reference,
                candidate=candidate,
                title=title or candidate[:80],
                source=source,
                task="summarization",
                method=method,
                amc="none",
                max_rounds=0,
                **method_config(backend, method, window),
            ),
        )
        run_id: int = run.id  # type: ignore[assignment]
    ledger = UsageLedger()
    client = get_client(backend, cache=SqlCache(engine), ledger=ledger)
    if progress:
        progress(f"{nli.METHOD_LABELS[method]}: judging…")
    try:
        result = nli.run_method(client, reference, candidate, method, window=window)
    except Exception as exc:  # the embedded server failed to start, or a bug: keep the run, say why
        log.exception("run %s failed", run_id)
        with get_session(engine) as session:
            save_usage(session=session, run_id=run_id, records=ledger.records)
            db_runs.finish_run(session=session, run_id=run_id, status="failed", error=str(exc))
        return run_id
    record = nli.result_record(result, method, candidate, window=window)
    errors = _unit_errors(record)
    with get_session(engine) as session:
        db_runs.save_method_result(session=session, run_id=run_id, record=record, group=group)
        save_usage(session=session, run_id=run_id, records=ledger.records)
        db_runs.set_single_score(session=session, run_id=run_id, score=record["score"])
        failed = record["label"] is None
        db_runs.finish_run(
            session=session,
            run_id=run_id,
            status="failed" if failed else "done",
            error=(f"{len(errors)} of {record['n_units']} unit(s) unreadable: {errors[0]}" if errors else None),
        )
    return run_id


def _unit_errors(record: dict[str, Any]) -> list[str]:
    units = [record.get("summary") or {}, *record.get("windows", []), *record.get("pairs", [])]
    return [u["error"] for u in units if u.get("error")]


def dce_record(detail: RunDetail) -> dict[str, Any]:
    """A DCE (or paragraph / evidence) run's round 0 in the method-record shape, for comparisons."""
    ev = detail.rounds[0].evaluation if detail.rounds else None
    label = None
    if ev is not None and ev.n_judged:
        label = "inconsistent" if any(s.verdict == "inconsistent" for s in ev.sentences) else "consistent"
    sentences = [
        {"index": s.index, "text": s.text, "verdict": s.verdict, "reason": s.reason, "error": s.error}
        for s in (ev.sentences if ev else [])
    ]
    return {
        "method": detail.run.method,
        "window": None,
        "label": label,
        "score": ev.score.z_hat if ev is not None and ev.score else None,
        "n_units": len(sentences),
        "n_failed": ev.n_unknown if ev else 0,
        "sentences": sentences,
        "usage": detail.usage,
    }


def compare_methods(
    engine: Engine,
    backend: BackendConfig,
    reference: str,
    candidate: str,
    methods: Sequence[str] = COMPARE_METHODS,
    *,
    window: int = 1,
    amc: str = "rule",
    progress: Progress | None = None,
) -> str:
    """Run each method on the same pair as its own run (listed in History), grouped; returns the group id."""
    if not methods:
        raise InputError("Choose at least one method to compare.")
    reference, candidate = reference.strip(), candidate.strip()
    check_pair(reference, candidate, max_chars=get_settings().max_input_chars)
    if any(not nli.is_nli(m) and m != "evidence" for m in methods):
        check_context(backend, reference, candidate)  # before any run, so a refused pair leaves no half comparison
    group = uuid.uuid4().hex[:12]
    for method in methods:
        if nli.is_nli(method):
            start_method_run(
                engine,
                backend,
                reference,
                candidate,
                method,
                window=window,
                group=group,
                source="app",
                title=f"compare: {candidate[:70]}",
                progress=progress,
            )
            continue
        cfg = dcr.DCRConfig(method=method, amc=amc, max_rounds=0)  # type: ignore[arg-type]
        run_id = start_run(
            engine, backend, reference, candidate, cfg, title=f"compare: {candidate[:70]}", progress=progress
        )
        detail = load(engine, run_id)
        if detail is not None:
            with get_session(engine) as session:
                db_runs.save_method_result(session=session, run_id=run_id, record=dce_record(detail), group=group)
    return group


def load_method(engine: Engine, run_id: int) -> MethodResultPublic | None:
    with get_session(engine) as session:
        return db_runs.get_method_result(session=session, run_id=run_id)


def load_group(engine: Engine, group: str) -> list[tuple[MethodResultPublic, RunDetail]]:
    """The runs of a comparison, in the order they were made, each with its stored method record."""
    with get_session(engine) as session:
        found = db_runs.group_results(session=session, group=group)
        out = []
        for m in found:
            d = load_run(session=session, run_id=m.run_id)
            if d is not None:
                out.append((m, d))
        return out


def list_methods(engine: Engine, run_ids: Sequence[int]) -> dict[int, MethodResultPublic]:
    with get_session(engine) as session:
        return db_runs.method_results(session=session, run_ids=run_ids)
