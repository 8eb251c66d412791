"""One item of a batch: DCR (Algorithm 1) or an NLI paradigm on a reference and candidate."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from db import batches as db_batches
from services import dcr
from services.llm import CallRecord, LLMClient, UsageLedger, summarize_records
from services.nli import paradigms as nli
from services.text import split_sentences


@dataclass
class ItemInput:
    batch_item_id: int
    reference: str
    candidate: str
    sentences: list[str]
    refresh: bool = False  # a failed item re-run: ask the model again, not the cache


def load_inputs(engine: Engine, batch_item_ids: list[int]) -> list[ItemInput]:
    with engine.connect() as conn:
        rows = db_batches.item_inputs(conn=conn, batch_item_ids=batch_item_ids)
    return [ItemInput(r[0], r[1], r[2], list(r[3] or []), bool(r[4])) for r in rows]


def round_record(rnd: dcr.Round) -> dict[str, Any]:
    """A round as plain data (the CLI's output shape).

    A sentence judged by the evidence checker also carries its "evidence" (top reference sentences, novel
    spans, support); other methods leave it out here, so a batch spends no time on it.
    """
    return {
        "round": rnd.index,
        "candidate": rnd.text,
        **rnd.evaluation.score_fields(),
        "error": rnd.evaluation.error,
        "model_is_consistent": rnd.evaluation.model_is_consistent,
        "sentences": [
            {
                "index": v.index,
                "text": v.text,
                "verdict": v.verdict,
                "reason": v.reason,
                "mark": v.mark,
                "rule_mark": v.rule_mark,
                "error": v.error,
            }
            | ({"evidence": v.evidence} if v.evidence is not None else {})
            | ({"probability": v.probability, "abstain_reason": v.abstain_reason} if v.probability is not None else {})
            for v in rnd.evaluation.sentences
        ],
        "extras": [{"text": x.text, "mark": x.mark} for x in rnd.evaluation.extras],
        "rewrites": [
            {"index": w.index, "before": w.before, "after": w.after, "reason": w.reason} for w in rnd.rewrites
        ],
        "improve_error": rnd.improve_error,
    }


def call_records(records: list[CallRecord]) -> list[dict[str, Any]]:
    """An item's calls as `batch_usage` rows (db.batches.CALL_FIELDS), with their totals on the item."""
    return [
        {
            "stage": r.stage[:40],
            "prompt_version": r.prompt_version[:100],
            "cached": r.cached,
            "requests": r.requests,
            "answered": r.answered,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "latency_ms": r.latency_ms,
            "error": r.error,
        }
        for r in records
    ]


def usage_of(records: list[CallRecord]) -> dict[str, Any]:
    """The usage columns of an item (db.batches.USAGE_COLUMNS) and its calls, from its call records."""
    usage = summarize_records(records)
    keys = ("calls", "answered", "cache_hits", "prompt_tokens", "completion_tokens")
    return {k: usage[k] for k in keys} | {"call_records": call_records(records)}


RAW_LIMIT = 4000  # characters of each raw answer kept with a failed item


def raw_answers(records: list[CallRecord]) -> list[dict[str, Any]]:
    """The model's answers as written, per call, for a failed item (what the batch page shows to read it)."""
    return [
        {
            "stage": r.stage,
            "cached": r.cached,
            "error": r.error,
            "raw": r.raw if len(r.raw) <= RAW_LIMIT else r.raw[:RAW_LIMIT] + " …[cut]",
        }
        for r in records
    ]


def process_nli_item(
    client: LLMClient,
    item: ItemInput,
    method: str,
    window: int,
    score_range: tuple[float, float] | None = None,
    ledger: UsageLedger | None = None,
) -> dict[str, Any]:
    """Summ-NLI, Sent-NLI or QG-QA on one item; the result keeps a round 0 of per-sentence verdicts, so the
    sentence-level meta-evaluation reads it like DCE's. `score_range`: Summ-NLI's score mode; `ledger`: where
    the item's calls are recorded (a new one if None)."""
    ledger = UsageLedger() if ledger is None else ledger
    c = client.fork(ledger)
    summary = " ".join(item.sentences) if item.sentences else item.candidate
    started = time.perf_counter()
    result = nli.run_method(c, item.reference, summary, method, window=window, score_range=score_range)
    record = nli.result_record(result, method, summary, window=window)
    usage = summarize_records(ledger.records)
    units = [record.get("summary") or {}, *record.get("windows", []), *record.get("pairs", [])]
    errors = [u["error"] for u in units if u.get("error")]
    label = record["label"]
    n_unknown = sum(s["verdict"] == "unknown" for s in record["sentences"])
    round0 = {
        "round": 0,
        "candidate": summary,
        "score": record["score"],
        "k": len(record["sentences"]),
        "alpha": 0.0,
        "beta": 0.0,
        "n_unknown": n_unknown,
        "error": errors[0] if errors else None,
        "model_is_consistent": None if label is None else label == "consistent",
        "sentences": record["sentences"],
        "extras": [],
        "rewrites": [],
        "improve_error": None,
    }
    extra = {"raw_answers": raw_answers(ledger.records)} if label is None else {}
    return {
        "status": "failed" if label is None else "done",
        "error": (f"{len(errors)} of {record['n_units']} unit(s) unreadable: {errors[0]}" if errors else None),
        "score": record["score"],
        "final_score": record["score"],
        "n_sentences": len(split_sentences(summary)),
        "n_unknown": record["n_failed"],
        "n_rounds": 1,
        "calls": usage["calls"],
        "answered": usage["answered"],
        "cache_hits": usage["cache_hits"],
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "latency_ms": (time.perf_counter() - started) * 1000,
        "result": record | {"rounds": [round0], "final_candidate": summary} | extra,
    }


def process_item(
    client: LLMClient,
    item: ItemInput,
    cfg: dcr.DCRConfig,
    *,
    window: int = 1,
    score_range: tuple[float, float] | None = None,
    embeddings: bool | None = None,
    ledger: UsageLedger | None = None,
) -> dict[str, Any]:
    """Algorithm 1 (or an NLI paradigm) on one item; returns the batch_item columns to write.

    `embeddings`: whether the evidence checker aligns with MiniLM too (None: the EVIDENCE_EMBEDDINGS_IN_BULK
    setting, read for the item; a batch reads it once for all its items). `ledger`: where the item's calls are
    recorded, so the caller still has them when the item stops half way (a new one if None)."""
    ledger = UsageLedger() if ledger is None else ledger
    if nli.is_nli(cfg.method):
        return process_nli_item(client, item, cfg.method, window, score_range, ledger)
    if cfg.method == "evidence":
        from services.dcr import evidence

        with evidence.bulk(embeddings):  # lexical alignment unless EVIDENCE_EMBEDDINGS_IN_BULK
            return _process_dcr_item(client, item, cfg, ledger)
    return _process_dcr_item(client, item, cfg, ledger)


def _process_dcr_item(client: LLMClient, item: ItemInput, cfg: dcr.DCRConfig, ledger: UsageLedger) -> dict[str, Any]:
    # fork() builds the HTTP client, which starts the embedded model: the evidence checker needs neither.
    c = client.fork(ledger) if cfg.uses_model else client
    sentences = item.sentences or split_sentences(item.candidate)
    units = dcr.candidate_units(item.candidate, cfg, sentences)
    started = time.perf_counter()
    if not units:
        return {"status": "failed", "error": "The candidate has no sentence to check."}
    rounds = [dcr.first_round(c, item.reference, units, cfg)]
    if cfg.max_rounds > 0:
        dcr.continue_rounds(c, item.reference, rounds, cfg)
    first, last = rounds[0].evaluation, rounds[-1].evaluation
    usage = summarize_records(ledger.records)
    # A document with an unjudged sentence has no score (services.dcr.Evaluation.failure): it counts as failed.
    # The evidence checker's score is its calibrated probability, which it gives also where it abstains.
    checker = first.checker_score
    return {
        "status": "failed" if first.failure and checker is None else "done",
        "error": first.failure if checker is None else None,
        "score": checker if checker is not None else first.score.z_hat if first.score else None,
        "final_score": checker if checker is not None else last.score.z_hat if last.score else None,
        "n_sentences": len(first.sentences),
        "n_unknown": first.n_unknown,
        "n_rounds": len(rounds),
        "calls": usage["calls"],
        "answered": usage["answered"],
        "cache_hits": usage["cache_hits"],
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "latency_ms": (time.perf_counter() - started) * 1000,
        "result": {"rounds": [round_record(r) for r in rounds], "final_candidate": " ".join(dcr.compose_final(rounds))}
        | ({"raw_answers": raw_answers(ledger.records)} if first.failure and cfg.uses_model else {}),
    }
