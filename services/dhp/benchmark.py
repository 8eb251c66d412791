"""DHP benchmark runs: an evaluator model scores every text of a set on every metric, r times, in the worker;
the discernment of a run comes from its stored scores (services.dhp.statistics)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import dhp as db
from db.cache import SqlCache
from db.engine import get_session
from db.models import DhpRun, DhpRunPublic, utcnow
from services.config import BackendConfig
from services.dhp.corpus import backend_from_params, backend_params, get_task, process_set
from services.dhp.scoring import ANSWER_FORMATS, answer_format_of, eval_prompts, score_text
from services.dhp.statistics import ORIGINAL, SCORE_COLUMNS, DiscernmentResult, analyse
from services.errors import InputError
from services.jobs import runner as jobrunner
from services.jobs.runner import JobKind, JobTable
from services.llm import UsageLedger, get_client


def create_run(
    set_id: int,
    backend: BackendConfig,
    *,
    repeats: int = 5,
    seed: int = 0,
    session: Session,
    answer_format: str = "plain",
) -> int:
    """Record a benchmark run of one evaluator on a set (hand it to the worker with services.jobs.queue)."""
    if repeats < 1:
        raise ValueError("repeats must be 1 or more")
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"the answer format must be one of {', '.join(ANSWER_FORMATS)}")
    st = db.get_set(session=session, set_id=set_id)
    if st is None:
        raise ValueError(f"set {set_id} does not exist")
    task = get_task(st.task, session=session)
    if task is None:
        raise ValueError(f"the set's task {st.task!r} does not exist")
    n_texts = db.count_made_texts(session=session, set_id=set_id)
    pv = {m: p.id for m, p in eval_prompts(task, answer_format).items()}
    run = DhpRun(
        set_id=set_id,
        backend_kind=backend.kind,
        model=backend.model,
        base_url=backend.public_url,
        repeats=repeats,
        seed=seed,
        params={**backend_params(backend), "answer_format": answer_format},
        prompt_versions=pv,
        n_total=n_texts * len(task.metrics),
    )
    return db.add_run(session=session, row=run)


def get_run(run_id: int, *, session: Session) -> DhpRunPublic | None:
    return db.get_run(session=session, run_id=run_id)


def list_runs(*, session: Session, set_id: int | None = None) -> list[DhpRunPublic]:
    return db.list_runs(session=session, set_id=set_id)


def same_run(
    set_id: int, backend: BackendConfig, *, repeats: int, seed: int, session: Session, answer_format: str | None = None
) -> DhpRunPublic | None:
    """A queued, running or finished run of the set with the same model, endpoint, r, seed and reply format, if
    any: starting another would only repeat it (its answers are cached)."""
    found = db.live_runs(
        session=session, set_id=set_id, model=backend.model, base_url=backend.public_url, repeats=repeats, seed=seed
    )
    for run in found:
        if answer_format is None or answer_format_of(run.params or {}) == answer_format:
            return run
    return None


JOBS = JobTable(DhpRun)


def request_cancel(run_id: int, *, session: Session) -> None:
    """Ask the workers to stop the run (see services.jobs.runner: cancel means the same for every job)."""
    JOBS.request_cancel(session.connection(), run_id)


def process_run(engine: Engine, run_id: int, *, backend: BackendConfig | None = None) -> str:
    """Score every text of the run's set on every metric, r times; resumes where it stopped. Returns the status."""
    return jobrunner.run(engine, JOBS, run_id, lambda: _score_run(engine, run_id, backend)) or "not claimed"


def _score_run(engine: Engine, run_id: int, backend: BackendConfig | None) -> None:
    """The scores of a claimed run not yet saved; stops at the next score once its cancel is asked for."""
    with get_session(engine) as s:
        run = db.get_run(session=s, run_id=run_id)
        st = db.get_set(session=s, set_id=run.set_id)  # type: ignore[union-attr]
        task = get_task(st.task, session=s)  # type: ignore[union-attr]
        texts = db.texts(session=s, set_id=st.id, made=True)  # type: ignore[union-attr]
        done = db.scored(session=s, run_id=run_id)
        items = {i["id"]: i for i in st.items}  # type: ignore[union-attr]
        repeats, seed, params = run.repeats, run.seed, dict(run.params)  # type: ignore[union-attr]
        jobs = [(t.id, t.item_id, t.text) for t in texts]
    if task is None:
        raise InputError("the set's task no longer exists")
    backend = backend or backend_from_params(params)
    client = get_client(backend, cache=SqlCache(engine))
    fmt = answer_format_of(params)
    ps = eval_prompts(task, fmt)
    work = [(tid, iid, text, m) for tid, iid, text in jobs for m in ps if (tid, m) not in done]
    stop = threading.Event()
    fatal: list[str] = []
    cancelled = threading.Event()

    def one(job: tuple[int, str, str, str]) -> None:
        if stop.is_set():
            return
        tid, iid, text, metric = job
        source = str(items.get(iid, {}).get("source", ""))
        own = client.fork(UsageLedger())  # this score's usage only
        scores, err = score_text(own, ps[metric], text, source, repeats=repeats, seed=seed, answer_format=fmt)
        u = own.ledger.summary()
        mean = float(np.mean(scores)) if scores else None
        row = {
            "run_id": run_id,
            "text_id": tid,
            "metric": metric,
            "scores": scores,
            "mean": mean,
            "error": None if scores else err,
            "created_at": utcnow(),
        }
        with get_session(engine) as s:
            db.save_score(session=s, row=row)
            used = {k: u[k] or 0 for k in ("calls", "answered", "cache_hits", "prompt_tokens", "completion_tokens")}
            if JOBS.advance(s.connection(), run_id, n_done=1, n_failed=0 if scores else 1, **used):
                cancelled.set()
                stop.set()
        if err and not scores and ("Cannot reach" in err or "rejected the API key" in err or "404" in err):
            fatal.append(err)
            stop.set()

    with ThreadPoolExecutor(max_workers=max(1, backend.concurrency)) as pool:
        list(pool.map(one, work))
    if cancelled.is_set() or JOBS.cancel_requested(engine, run_id):
        raise jobrunner.Cancelled
    if fatal:
        raise InputError(fatal[0])


def recover(engine: Engine) -> list[int]:
    """Runs whose worker went quiet: queued again, to hand to the workers."""
    return JOBS.recover(engine)


def scores_frame(run_id: int, *, session: Session) -> pd.DataFrame:
    """Mean scores of a run in the `dhp stats` layout: item_id, perturbation, level, metric, original, perturbed."""
    df = pd.DataFrame(db.score_rows(session=session, run_id=run_id), columns=list(db.SCORE_KEYS))
    if df.empty:
        return pd.DataFrame(columns=list(SCORE_COLUMNS))
    orig = df[df["perturbation"] == ORIGINAL][["item_id", "metric", "mean"]].rename(columns={"mean": "original"})
    pert = df[df["perturbation"] != ORIGINAL].rename(columns={"mean": "perturbed"})
    out = pert.merge(orig, on=["item_id", "metric"], how="inner")
    return out[list(SCORE_COLUMNS)].reset_index(drop=True)


def run_result(
    run_id: int, *, session: Session, weights: Mapping[str, Mapping[str, float]] | None = None
) -> DiscernmentResult | None:
    """The discernment of a run from its stored scores (None when it has no paired scores yet)."""
    run = db.get_run(session=session, run_id=run_id)
    if run is None:
        return None
    df = scores_frame(run_id, session=session)
    if df.empty:
        return None
    st = db.get_set(session=session, set_id=run.set_id)
    task = get_task(st.task, session=session) if st else None
    order = [p.key for p in task.perturbations] if task else None
    expected = {p.key: p.level for p in task.perturbations} if task else None
    return analyse(df, weights=weights, model=run.model, order=order, expected=expected)


# -- for pages, which hold no session ---------------------------------------------------------------------
def runs(engine: Engine, set_id: int | None = None) -> list[DhpRunPublic]:
    """The runs (on one set), newest first."""
    with get_session(engine) as s:
        return list_runs(session=s, set_id=set_id)


def start_runs(
    engine: Engine,
    set_id: int,
    backends: Sequence[BackendConfig],
    *,
    repeats: int,
    seed: int,
    answer_format: str = "plain",
) -> tuple[list[int], list[DhpRunPublic]]:
    """Record a run per evaluator, except where the same run exists already: (new run ids, the existing runs)."""
    ids: list[int] = []
    repeated: list[DhpRunPublic] = []
    with get_session(engine) as s:
        for backend in backends:
            same = same_run(set_id, backend, repeats=repeats, seed=seed, session=s, answer_format=answer_format)
            if same is not None:
                repeated.append(same)
                continue
            ids.append(create_run(set_id, backend, repeats=repeats, seed=seed, session=s, answer_format=answer_format))
    return ids, repeated


def cancel_run(engine: Engine, run_id: int) -> None:
    """`request_cancel` in its own transaction."""
    with get_session(engine) as s:
        request_cancel(run_id, session=s)


def discernment_of(
    engine: Engine, run_id: int, weights: Mapping[str, Mapping[str, float]] | None = None
) -> DiscernmentResult | None:
    """`run_result` of one run."""
    with get_session(engine) as s:
        return run_result(run_id, session=s, weights=weights)


jobrunner.register(JobKind("dhp-run", process=process_run, recover=recover))
# Making a set's LLM-based perturbations holds no lease: a set left half made is finished when handed over again.
jobrunner.register(JobKind("dhp-perturb", process=process_set))
