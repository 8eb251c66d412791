"""Creating and steering batches: items pending, options, cancel, resume, delete."""

from __future__ import annotations

import math
import uuid
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import batches as db_batches
from db import datasets as db_datasets
from db.models import Batch, BatchOptions
from services import dcr
from services.config import BackendConfig, get_settings
from services.errors import InputError
from services.jobs.runner import JobTable
from services.nli import paradigms as nli
from services.runs import method_config, recorded_config

JOBS = JobTable(Batch)


def create_batch(
    engine: Engine,
    *,
    dataset_id: int,
    backend: BackendConfig,
    cfg: dcr.DCRConfig,
    concurrency: int | None = None,
    item_limit: int | None = None,
    name: str = "",
    window: int = 1,
    sample: int = 0,
    repeat_group: str | None = None,
    summ_nli_mode: str = "auto",
) -> int:
    """A batch over the first `item_limit` items of a dataset, every item pending.

    `window` is Sent-NLI's and QG-QA's window w; `sample` the cache's sample index, so a repeat of the same
    configuration (Table 4's standard deviation) asks the model again instead of reading the cache.
    `summ_nli_mode`: "score" asks Summ-NLI for a score in the dataset's range (paper 003, section 3.1), "label"
    for Consistent or Inconsistent (Figure 4); "auto" scores when the dataset carries human scores.
    """
    if window < 1:
        raise InputError("The window w must be 1 or more sentences.")
    if summ_nli_mode not in SUMM_NLI_MODES:
        raise InputError(f"The Summ-NLI mode must be one of {', '.join(SUMM_NLI_MODES)}.")
    is_nli = nli.is_nli(cfg.method)
    with Session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        if ds is None:
            raise InputError(f"Dataset {dataset_id} does not exist.")
        item_ids = db_datasets.item_ids(session=session, dataset_id=dataset_id, limit=item_limit or None)
        if not item_ids:
            raise InputError(f"Dataset {ds.name!r} has no items.")
        score_range = None
        if cfg.method == "summ-nli" and summ_nli_mode != "label":
            agg = db_datasets.dataset_aggregates(session=session, dataset_id=dataset_id)
            score_range = score_range_of(ds.meta, agg)
            if score_range is None and summ_nli_mode == "score":
                raise InputError(f"Dataset {ds.name!r} has no human scores, so Summ-NLI has no range to score in.")
        if not name:
            name = f"{ds.name} · {cfg.method}"
            if is_nli:
                name += f" · w={window}" if cfg.method in nli.WINDOWED else ""
                name += " · score {:g}-{:g}".format(*score_range) if score_range else ""
            elif cfg.uses_model:
                name += f" · {cfg.amc}"
            name += f" · repeat {sample + 1}" if repeat_group else ""
        recorded = method_config(backend, cfg.method, window) if is_nli else recorded_config(backend, cfg, bulk=True)
        if score_range is not None:
            recorded = {
                **recorded,
                "params": {**recorded["params"], "score_range": list(score_range)},
                "prompt_versions": nli.prompt_versions(cfg.method, score_range),
            }
        if not is_nli:  # Eq. 3's alpha and beta as set, read back by process_batch
            recorded = {**recorded, "params": {**recorded["params"], **eq3_params(cfg)}}
        batch = Batch(
            name=name,
            dataset_id=dataset_id,
            task=cfg.task,
            criteria=cfg.criteria,
            method=cfg.method,
            amc=cfg.amc,
            max_rounds=0 if is_nli else cfg.max_rounds,  # the paradigms give a verdict, no rewrite
            concurrency=concurrency or backend.concurrency,
            item_limit=item_limit,
            **recorded,
            n_items=len(item_ids),
        )
        batch_id = db_batches.add_batch(
            session=session, data=batch, item_ids=item_ids, window=window, sample=sample, repeat_group=repeat_group
        )
        session.commit()
    refuse_oversized(engine, batch_id)
    return batch_id


def too_long(what: str, n_chars: int, max_chars: int) -> str:
    """Why an item over the input limit is not sent (the same limit as a single run's, MAX_INPUT_CHARS)."""
    return (
        f"the {what} is {n_chars:,} characters; the limit is {max_chars:,} (MAX_INPUT_CHARS, about "
        f"{max_chars // 4:,} tokens): not sent. Shorten it or split it into several documents"
    )


def refuse_oversized(engine: Engine, batch_id: int) -> list[str]:
    """Fail, before any call, the pending items whose reference or candidate is over max_input_chars; one
    message per item, naming its id and the limit."""
    max_chars = get_settings().max_input_chars
    with engine.connect() as conn:
        rows = db_batches.oversized_items(conn=conn, batch_id=batch_id, max_chars=max_chars)
    messages, errors = [], []
    for b_id, external_id, ref_chars, cand_chars in rows:
        what, n = ("reference", ref_chars) if ref_chars > max_chars else ("candidate", cand_chars)
        messages.append(f"item {external_id}: {too_long(what, int(n), max_chars)}")
        errors.append({"b_id": b_id, "error": too_long(what, int(n), max_chars)})
    if errors:
        with engine.begin() as conn:
            db_batches.fail_items(conn=conn, errors=errors)
    return messages


SUMM_NLI_MODES = ("auto", "score", "label")


def score_range_of(meta: dict | None, aggregates: dict) -> tuple[float, float] | None:
    """The range Summ-NLI scores a dataset in: the one its reader recorded (SummEval: 1-5), else the human scores'
    own (0-1 when they lie within it, else their whole-number bounds); None when it has no human scores."""
    given = (meta or {}).get("score_range")
    if given and len(given) == 2 and float(given[0]) < float(given[1]):
        return float(given[0]), float(given[1])
    if not aggregates.get("scored"):
        return None
    low, high = float(aggregates["score_min"]), float(aggregates["score_max"])
    if 0.0 <= low and high <= 1.0:
        return 0.0, 1.0
    low, high = float(math.floor(low)), float(math.ceil(high))
    return (low, high) if low < high else None


def summ_nli_range(params: dict | None) -> tuple[float, float] | None:
    """The score range a Summ-NLI batch recorded (None: the binary mode)."""
    given = (params or {}).get("score_range")
    return (float(given[0]), float(given[1])) if given else None


def eq3_params(cfg: dcr.DCRConfig) -> dict[str, float]:
    """The alpha and beta of Eq. 3 a batch records in its params (Appendix C.1's 0 unless set)."""
    return {"alpha": float(cfg.alpha), "beta": float(cfg.beta)}


def eq3_of(params: dict | None) -> dict[str, float]:
    """Eq. 3's alpha and beta recorded in a batch's params (0, 0 for batches made before they were)."""
    p = params or {}
    return {"alpha": float(p.get("alpha", dcr.DEFAULT_ALPHA)), "beta": float(p.get("beta", dcr.DEFAULT_BETA))}


def create_repeats(engine: Engine, *, repeats: int, **kwargs: Any) -> list[int]:
    """`repeats` batches of one configuration, each with its own sample index, grouped (Table 4)."""
    if repeats < 1:
        raise InputError("Repeats must be 1 or more.")
    if repeats == 1:
        return [create_batch(engine, **kwargs)]
    group = uuid.uuid4().hex[:12]
    return [create_batch(engine, sample=k, repeat_group=group, **kwargs) for k in range(repeats)]


def options(engine: Engine, batch_id: int) -> BatchOptions:
    """A batch's window, sample index and repeat group (defaults for batches made before they existed)."""
    with Session(engine) as session:
        row = db_batches.get_options(session=session, batch_id=batch_id)
        return BatchOptions(batch_id=batch_id) if row is None else row


def all_options(engine: Engine) -> dict[int, BatchOptions]:
    with Session(engine) as session:
        return db_batches.all_options(session=session)


def request_cancel(engine: Engine, batch_id: int) -> None:
    """Ask the workers to stop; items in flight finish, the rest stay pending (services.jobs.runner)."""
    with engine.begin() as conn:
        JOBS.request_cancel(conn, batch_id)


def mark_enqueued(engine: Engine, batch_id: int) -> None:
    """Note that the batch was handed to the queue (`recover` leaves it alone for a while)."""
    with engine.begin() as conn:
        db_batches.set_enqueued(conn=conn, batch_ids=[batch_id])


def reopen(engine: Engine, batch_id: int, *, failed_too: bool = False) -> int:
    """Make a batch runnable again; returns the items that will run.

    Resume runs every pending item. `failed_too` ("Re-run failed") runs the failed items only, each asking the
    model again past its cached answer (which the new one replaces); a cancelled batch's other items stay
    pending and the batch returns to cancelled when they are done.
    """
    with Session(engine) as session:
        n = db_batches.reopen(session=session, batch_id=batch_id, failed_too=failed_too)
        session.commit()
    return n - len(refuse_oversized(engine, batch_id))  # a limit lowered since, or a failed item over it re-run
