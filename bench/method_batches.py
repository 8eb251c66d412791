"""Finished batches of every method over a seeded dataset, each item's result in the shape its method stores.

bench/pages_render.py seeds a DCE batch (round 0 and an RAI round). The pages read other methods' results in
other ways (the Judges page takes the evidence checker's prediction and verdict out of each result), and the
results differ in size: an evidence checker's result carries each sentence's evidence (the closest reference
sentences, their overlap, the novel spans), 5-8 KB an item; an NLI paradigm's its windows, QA pairs or
whole-summary judgement with the reference sentences it retrieved. Here:

  * evidence: real results of the offline checker (services.dcr.evidence, lexical alignment) on TEMPLATES of the
    dataset's items, given to every item in turn with the item's own sentences, calibrated probability and
    verdicts (drawn from its true labels, 80% right), so each item's numbers are its own;
  * summ-nli, sent-nli, qg-qa: results of the shape services.nli.result_record gives, with a reasoning per unit
    and two retrieved reference sentences as the context.

Used by bench/scale_pages.py (the pages at 1k-100k items for a batch of each method).
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert

from db.models import Batch, BatchItem
from services import result_columns

METHODS = ("dce-amc", "evidence", "summ-nli", "sent-nli", "qg-qa")
TEMPLATES = 40  # evidence results computed for real; the other items reuse their shape with their own values
REASON = "The article states that the council approved the budget on Tuesday; the sentence says the same amount."


def _batch_row(ds_id: int, method: str, n: int, now: datetime) -> dict[str, Any]:
    evidence = method == "evidence"
    return {
        "name": f"bench {method}",
        "dataset_id": ds_id,
        "task": "summarization",
        "criteria": "",
        "method": method,
        "amc": "rule",
        "max_rounds": 0,
        "concurrency": 8,
        "backend_kind": "none" if evidence else "openai",
        "model": "evidence-checker" if evidence else "gpt-bench",
        "base_url": "" if evidence else "http://127.0.0.1:9/v1",
        "params": {} if evidence else {"temperature": 0.0},
        "prompt_versions": {"evaluator": f"{method}@1"},
        "status": "done",
        "n_items": n,
        "created_at": now,
        "started_at": now,
        "finished_at": now,
    }


def evidence_templates(items: list[dict], k: int = TEMPLATES) -> list[dict]:
    """The offline checker's results on the first k items (their reference documents as seeded)."""
    from services import dcr
    from services.jobs.batches.items import ItemInput, process_item

    article = " ".join(f"Sentence {j} of the article says the council met and approved a budget." for j in range(25))
    out = []
    for i, item in enumerate(items[:k]):
        got = process_item(
            None,  # type: ignore[arg-type]  # the checker calls no model
            ItemInput(i, f"Article {i}. {article}", item["candidate"], item["sentences"]),
            dcr.DCRConfig(method="evidence", max_rounds=0),
        )
        out.append(got["result"])
    return out


def _evidence_result(template: dict, item: dict, said: list[bool], rng: random.Random) -> tuple[dict, float]:
    first = dict(template["rounds"][0])
    sentences = []
    for j, (s, ok) in enumerate(zip(first["sentences"], said, strict=False)):
        support = round(rng.uniform(0.6, 1.0) if ok else rng.uniform(0.0, 0.5), 4)
        verdict = "consistent" if ok else "inconsistent"
        sentences.append(
            s
            | {"index": j, "text": item["sentences"][j], "verdict": verdict, "mark": 1 if ok else -1}
            | {"evidence": s.get("evidence", {}) | {"support": support, "checker_verdict": verdict}}
        )
    p = round(min(1.0, max(0.0, sum(said) / len(said) * rng.uniform(0.7, 1.0))), 6)
    undecided = 0.4 < p < 0.6
    first |= {
        "candidate": item["candidate"],
        "sentences": sentences,
        "checker_score": p,
        "model_is_consistent": None if undecided else p >= 0.5,
        "score": (sum(1 if x else -1 for x in said[: len(sentences)]) / max(len(sentences), 1) + 1) / 2,
    }
    return {"rounds": [first], "final_candidate": item["candidate"]}, p


def _nli_result(method: str, item: dict, said: list[bool], rng: random.Random) -> tuple[dict, float | None]:
    sents = item["sentences"]
    context = {"indices": [0, 3], "sentences": ["Sentence 0 of the article says the council met.", REASON]}

    def label(ok: bool) -> str:
        return "consistent" if ok else "inconsistent"

    rec: dict[str, Any] = {"method": method, "window": None if method == "summ-nli" else 1}
    if method == "summ-nli":
        ok = all(said)
        rec["summary"] = {"label": label(ok), "reasoning": REASON, "error": None, "context": context}
        rec["sentences"] = []
        units = [ok]
    elif method == "sent-nli":
        rec["windows"] = [
            {"start": j, "end": j + 1, "text": s, "label": label(ok), "reasoning": REASON, "error": None}
            | {"context": context}
            for j, (s, ok) in enumerate(zip(sents, said, strict=True))
        ]
        units = said
    else:
        rec["pairs"] = [
            {"window": j, "question": f"What did the council approve in sentence {j}?", "expected_answer": "a budget"}
            | {"answer": "a budget", "reasoning": REASON, "judgement": label(ok), "error": None, "context": context}
            for j, ok in enumerate(said)
        ]
        units = said
    if method != "summ-nli":
        rec["sentences"] = [
            {"index": j, "text": s, "verdict": label(ok), "reason": REASON, "error": None}
            for j, (s, ok) in enumerate(zip(sents, said, strict=True))
        ]
    score = sum(units) / len(units)
    rec |= {"label": label(all(units)), "score": score, "partial_score": score, "n_units": len(units), "n_failed": 0}
    round0 = {
        "round": 0,
        "candidate": item["candidate"],
        "score": score,
        "k": len(rec["sentences"]),
        "alpha": 0.0,
        "beta": 0.0,
        "n_unknown": 0,
        "error": None,
        "model_is_consistent": all(units),
        "sentences": rec["sentences"],
        "extras": [],
        "rewrites": [],
        "improve_error": None,
    }
    return rec | {"rounds": [round0], "final_candidate": item["candidate"]}, score


def seed_method_batch(
    conn: Connection,
    method: str,
    ds_id: int,
    items: list[dict],
    truth: list[list[bool]],
    item_ids: list[int],
    now: datetime,
    rng: random.Random,
    templates: list[dict] | None = None,
) -> int:
    """A finished batch of `method` (evidence or an NLI paradigm) over the dataset's items; returns its id."""
    n = len(items)
    batch_id = conn.execute(insert(Batch).values(**_batch_row(ds_id, method, n, now))).inserted_primary_key[0]
    evidence = method == "evidence"
    if evidence and not templates:
        templates = evidence_templates(items)
    rows = []
    for i in range(n):
        said = [t if rng.random() < 0.8 else not t for t in truth[i]]
        if evidence:
            result, score = _evidence_result(templates[i % len(templates)], items[i], said, rng)  # type: ignore[index]
        else:
            result, score = _nli_result(method, items[i], said, rng)
        rows.append(
            {
                "batch_id": batch_id,
                "item_id": item_ids[i],
                "status": "done",
                "worker": "bench",
                "attempts": 1,
                "score": score,
                "final_score": score,
                "n_sentences": len(items[i]["sentences"]),
                "n_unknown": 0,
                "n_rounds": 1,
                "calls": 0 if evidence else len(said),
                "cache_hits": 0,
                "prompt_tokens": 0 if evidence else 700 * len(said),
                "completion_tokens": 0 if evidence else 120 * len(said),
                "latency_ms": 3.0 if evidence else 900.0,
                "result": result,
                **result_columns.columns(result),  # as the batch worker writes them
                "updated_at": now,
            }
        )
        if len(rows) == 2000:
            conn.execute(insert(BatchItem), rows)
            rows = []
    if rows:
        conn.execute(insert(BatchItem), rows)
    return batch_id
