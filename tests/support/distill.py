"""Datasets for the distillation tests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlmodel import Session

from db.models import Batch, BatchItem, Dataset, DatasetItem, Document


@dataclass
class Row:
    doc: int  # which document (summaries of one document share it)
    gold: int | None  # 1 consistent / 0 inconsistent / None unlabelled
    summary: str = ""


def make_dataset(engine, rows: list[Row], *, name: str = "ds") -> tuple[int, list[int]]:
    """A dataset whose items are summaries of shared documents; returns (dataset id, item ids in order)."""
    with Session(engine) as s:
        ds = Dataset(name=name, format="jsonl", sha256=hashlib.sha256(name.encode()).hexdigest(), n_items=len(rows))
        s.add(ds)
        s.flush()
        docs: dict[int, int] = {}
        ids = []
        for i, r in enumerate(rows):
            if r.doc not in docs:
                text = f"{name} document {r.doc}. The council met on Tuesday and approved the budget."
                d = Document(sha256=hashlib.sha256(text.encode()).hexdigest(), text=text, n_chars=len(text))
                s.add(d)
                s.flush()
                docs[r.doc] = d.id
            summary = r.summary or f"{name} summary {i} of document {r.doc}."
            di = DatasetItem(
                dataset_id=ds.id,
                idx=i,
                external_id=f"{name}-{i}",
                reference_id=docs[r.doc],
                candidate=summary,
                sentences=[summary],
                human_label=r.gold,
            )
            s.add(di)
            s.flush()
            ids.append(di.id)
        s.commit()
        return ds.id, ids


def many(engine, n_docs: int = 20, per_doc: int = 3, name: str = "ds") -> tuple[int, int, list[int]]:
    rows = [Row(d, (d + k) % 2) for d in range(n_docs) for k in range(per_doc)]
    ds_id, ids = make_dataset(engine, rows, name=name)
    results = [summ_nli(C if r.gold == 1 else X, f"Reasoning about item {i}.") for i, r in enumerate(rows)]
    return ds_id, add_batch(engine, ds_id, ids, results, method="summ-nli"), ids


C, X = "consistent", "inconsistent"


def add_batch(engine, dataset_id: int, item_ids: list[int], results: list[dict | None], *, method: str) -> int:
    """A finished batch with these stored results (None: the item failed)."""
    with Session(engine) as s:
        b = Batch(
            dataset_id=dataset_id,
            method=method,
            status="done",
            model="teacher",
            n_items=len(item_ids),
            prompt_versions={"evaluator": f"{method}@1"},
        )
        s.add(b)
        s.flush()
        for item_id, res in zip(item_ids, results, strict=True):
            score = None
            if res is not None and "rounds" in res:
                score = res["rounds"][0]["score"]
            s.add(
                BatchItem(batch_id=b.id, item_id=item_id, status="done" if res else "failed", score=score, result=res)
            )
        s.commit()
        return b.id


def summ_nli(label: str, reasoning: str) -> dict:
    return {"method": "summ-nli", "label": label, "summary": {"label": label, "reasoning": reasoning, "error": None}}
