"""Running a study: dICL examples, prompts, asking the models in chunks, saving answers and progress."""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from db import conseval as q
from db.cache import BufferedSqlCache
from db.engine import get_session
from db.models import ConsevalItem, ConsevalStudyPublic
from services.config import BackendConfig
from services.conseval.analysis import analyse
from services.conseval.raters import human_ratings_frame
from services.conseval.scales import SCALES, SCORE_SCHEMA, answer_of, parse_score
from services.conseval.store import JOBS, get_study, items_frame, ratings_frame
from services.conseval.study import (
    GREEDY,
    IMPORTED,
    NO_EXAMPLE,
    SAMPLE_TEMPERATURE,
    Call,
    StudyConfig,
    plan_calls,
    test_instances,
)
from services.jobs import runner as jobrunner
from services.jobs.runner import JobKind
from services.llm import LLMClient, UsageLedger, get_client
from services.prompts import conseval as prompts
from services.text import InputError

log = logging.getLogger(__name__)


@dataclass
class _Ctx:
    cfg: StudyConfig
    items: dict[int, ConsevalItem]
    oracle_pool: list[dict[str, Any]] = field(default_factory=list)
    test: set[tuple[int, str]] | None = None  # the 20% reported on under the 8:2 split; examples come from the rest


def _examples(ctx: _Ctx, call: Call) -> list[dict[str, str]] | None:
    """k oracle evaluations for dICL: other items of the same criterion (and definition for an endpoint oracle),
    only from the 80% under the 8:2 split, every oracle's pooled; scale-matched keeps only the target's scale.
    Seeded per call, so the prompt (and its cache entry) is stable."""
    item = ctx.items[call.item_id]
    pool = [
        p
        for p in ctx.oracle_pool
        if p["item_id"] != call.item_id
        and ctx.items[p["item_id"]].criterion == item.criterion
        and p.get("granularity") in (None, call.granularity)
        and (ctx.test is None or (p["item_id"], call.granularity) not in ctx.test)
        and (call.method != "dicl_sm" or p["scale"] == call.scale)
    ]
    if not pool:
        return None
    seed = int(
        hashlib.sha256(
            f"{ctx.cfg.seed}|{call.item_id}|{call.granularity}|{call.scale}|{call.method}".encode()
        ).hexdigest()[:8],
        16,
    )
    chosen = random.Random(seed).sample(pool, min(ctx.cfg.k, len(pool)))
    out = []
    for p in chosen:
        ex_item, sc = ctx.items[p["item_id"]], SCALES[p["scale"]]
        out.append(
            {
                "query": ex_item.query,
                "response": ex_item.response,
                "options": sc.options,
                "answer": sc.format(p["value"]),
            }
        )
    return out


def _prompt(ctx: _Ctx, call: Call) -> tuple[str | None, str]:
    item, sc = ctx.items[call.item_id], SCALES[call.scale]
    detail = ctx.cfg.definition(item.criterion, call.granularity)
    common = dict(criterion=item.criterion, detail=detail, options=sc.options, query=item.query, response=item.response)
    if call.method.startswith("dicl"):
        ex = _examples(ctx, call)
        if ex is None:
            return None, f"{NO_EXAMPLE} for this criterion" + (" on this scale" if call.method == "dicl_sm" else "")
        return prompts.render_few_shot(**common, examples=ex), prompts.FEW_SHOT_HEAD.id
    return prompts.render_rate(**common), prompts.RATE.id


def _ask(client: LLMClient, ctx: _Ctx, call: Call) -> dict[str, Any]:
    prompt, version = _prompt(ctx, call)
    row = {
        "item_id": call.item_id,
        "rater": call.rater,
        "method": call.method,
        "granularity": call.granularity,
        "scale": call.scale,
        "sample": call.sample,
    }
    if prompt is None:
        return {**row, "value": None, "raw": "", "problem": version}
    greedy = call.sample == GREEDY
    common = dict(
        prompt_version=version,
        stage="conseval",
        sample_index=max(0, call.sample),
        temperature=0.0 if greedy else SAMPLE_TEMPERATURE,
    )
    messages = [{"role": "user", "content": prompt}]
    if ctx.cfg.answer_format == "structured":
        res = client.chat_json(messages, parse=answer_of, schema=SCORE_SCHEMA, **common)
    else:  # the paper's reply after "Answer:", sent once and read as written
        res = client.chat_text(messages, **common)
    if res.fatal:
        raise InputError(res.error or "the model could not be reached")
    if not res.ok:
        return {**row, "value": None, "raw": res.raw or "", "problem": res.error}
    parsed = parse_score(res.value, SCALES[call.scale])
    return {**row, "value": parsed.value, "raw": parsed.raw, "problem": parsed.problem}


USAGE_KEYS = ("calls", "answered", "cache_hits", "prompt_tokens", "completion_tokens")  # the study's counters


def _write(engine: Engine, study_id: int, rows: list[dict[str, Any]], usage: dict[str, int], caches=()) -> bool:
    """Save answers (an answer saved meanwhile by another worker is kept), usage and new cache entries at once;
    True if the study's cancel was asked for."""
    with get_session(engine) as session:
        added = q.insert_ratings(session=session, study_id=study_id, rows=rows)
        conn = session.connection()
        for cache in caches:
            cache.flush(conn)
        return JOBS.advance(conn, study_id, n_done=added, **{k: usage.get(k, 0) for k in USAGE_KEYS})


def recover(engine: Engine) -> list[int]:
    """Studies left running by a worker that died: queued again (atomically, so one worker takes each)."""
    return JOBS.recover(engine)


def run_study(
    engine: Engine,
    study_id: int,
    *,
    backends: dict[str, BackendConfig] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ConsevalStudyPublic:
    """Ask every planned answer not yet saved (oracle first), then compute and save the results."""
    with get_session(engine) as session:
        st = q.get_study(session=session, study_id=study_id)
        if st is None:
            raise InputError(f"Study {study_id} does not exist.")
        cfg = StudyConfig.from_dict(st.config)
        items = {it.id: it for it in q.list_items(session=session, study_id=study_id)}
    # Finished, cancelled, or another worker is on it (a duplicate task): the runner does not claim it.
    jobrunner.run(engine, JOBS, study_id, lambda: _work(engine, study_id, cfg, items, backends, on_progress))
    study = get_study(engine, study_id)
    assert study is not None
    return study


def _work(engine, study_id, cfg, items, backends, on_progress) -> dict[str, Any]:
    """Ask a claimed study's answers not yet saved (oracle first); its results to save with it."""
    in_order = sorted(items.values(), key=lambda it: it.idx)
    ctx = _Ctx(cfg, items, test=test_instances(cfg, [(it.id, it.criterion) for it in in_order]))
    oracle_calls, model_calls = plan_calls(cfg, [it.id for it in in_order], ctx.test)
    clients: dict[str, LLMClient] = {}
    specs = {cfg.oracle_rater(o): o for o in cfg.oracles()} | {m.label: m for m in cfg.models}

    def client_for(rater: str) -> LLMClient:
        if rater not in clients:
            spec = specs[rater]
            be = (backends or {}).get(rater) or spec.backend(concurrency=cfg.concurrency)  # type: ignore[union-attr]
            be = be.with_changes(max_tokens=cfg.max_tokens)
            clients[rater] = get_client(be, cache=BufferedSqlCache(engine, be.model))
        return clients[rater]

    for phase in (oracle_calls, model_calls):
        if phase is model_calls:
            ctx.oracle_pool = _oracle_pool(engine, study_id, cfg)
        done = set(
            map(
                tuple,
                ratings_frame(engine, study_id)[
                    ["item_id", "rater", "method", "granularity", "scale", "sample"]
                ].itertuples(index=False),
            )
        )
        todo = [c for c in phase if c.key not in done]
        _run_calls(engine, study_id, todo, ctx, client_for, cfg.concurrency, on_progress)
    return {"results": analyse(engine, study_id)}


def _run_calls(engine, study_id, todo, ctx, client_for, concurrency, on_progress) -> None:
    """Ask the calls in chunks; each chunk's answers and usage are saved before the next (resume loses little)."""
    if not todo:
        return
    lock = threading.Lock()
    buffer: list[dict[str, Any]] = []
    usage = dict.fromkeys(USAGE_KEYS, 0)
    fatal: list[InputError] = []
    done = 0

    def clients_in_use() -> list[LLMClient]:
        return [client_for(r) for r in sorted({c.rater for c in todo})]

    def one(call: Call) -> None:
        if fatal:
            return
        client = client_for(call.rater).fork(UsageLedger())  # its own ledger: this call's usage only
        row = None
        try:
            row = _ask(client, ctx, call)
        except InputError as exc:
            fatal.append(exc)
        u = client.ledger.summary()  # a call that ended the study was sent all the same: counted
        with lock:
            if row is not None:
                buffer.append(row)
            for k in USAGE_KEYS:
                usage[k] += u[k] or 0

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for i in range(0, len(todo), CHUNK):
            list(pool.map(one, todo[i : i + CHUNK]))
            with lock:
                rows, u = list(buffer), dict(usage)
                buffer.clear()
                usage.update(dict.fromkeys(USAGE_KEYS, 0))
            cancelled = _write(engine, study_id, rows, u, [c.cache for c in clients_in_use()])
            done += len(rows)
            if fatal:
                raise fatal[0]
            if on_progress:
                on_progress(done, len(todo))
            if cancelled or JOBS.cancel_requested(engine, study_id):
                raise jobrunner.Cancelled


CHUNK = 40


def _oracle_pool(engine: Engine, study_id: int, cfg: StudyConfig) -> list[dict[str, Any]]:
    """The oracle's evaluations dICL draws from: {item_id, scale, value, granularity (None = any)}."""
    if cfg.oracle == "endpoint":
        df = ratings_frame(engine, study_id)
        df = df[df.rater.isin([cfg.oracle_rater(o) for o in cfg.oracles()]) & df.value.notna()]
        return [
            {
                "item_id": int(r.item_id),
                "scale": r.scale,
                "value": float(r.value),
                "granularity": r.granularity,
                "oracle": r.rater,
            }
            for r in df.itertuples()
        ]
    if cfg.oracle == "humans":
        h = human_ratings_frame(engine, study_id)
        return [
            {"item_id": int(r.item_id), "scale": r.scale, "value": float(r.value), "granularity": None}
            for r in h.itertuples()
            if r.scale in SCALES
        ]
    if cfg.oracle == "imported":
        items = items_frame(engine, study_id)
        items = items[items.oracle_score.notna()]
        more = ratings_frame(engine, study_id)
        more = more[(more.method == IMPORTED) & more.value.notna()]
        return [
            {"item_id": int(r.id), "scale": r.oracle_scale, "value": float(r.oracle_score), "granularity": None}
            for r in items.itertuples()
        ] + [
            {
                "item_id": int(r.item_id),
                "scale": r.scale,
                "value": float(r.value),
                "granularity": None,
                "oracle": r.rater,
            }
            for r in more.itertuples()
        ]
    return []


jobrunner.register(JobKind("conseval", process=run_study, recover=recover))
