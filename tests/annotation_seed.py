"""Hand-made datasets and batches for the annotation tests: sentences and model verdicts written directly."""

from __future__ import annotations

import hashlib

from sqlmodel import Session, select

from db.models import Batch, BatchItem, Dataset, DatasetItem, Document, utcnow

MARK = {"consistent": 1, "inconsistent": -1}


def make_dataset(engine, items: list[list[str]], *, name: str = "annotate me", external_ids: list[str] | None = None):
    """A dataset whose item i has the sentences items[i]; returns (dataset id, item ids in order)."""
    with Session(engine) as s:
        ds = Dataset(name=name, format="jsonl", sha256=hashlib.sha256(name.encode()).hexdigest(), n_items=len(items))
        s.add(ds)
        s.flush()
        for i, sentences in enumerate(items):
            text = f"Reference {i} of {name}. The council met on Tuesday and approved 40 million dollars."
            ref = Document(sha256=hashlib.sha256(text.encode()).hexdigest(), text=text, n_chars=len(text))
            s.add(ref)
            s.flush()
            s.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=external_ids[i] if external_ids else f"x{i}",
                    reference_id=ref.id,
                    candidate=" ".join(sentences),
                    sentences=list(sentences),
                )
            )
        s.commit()
        ids = list(s.exec(select(DatasetItem.id).where(DatasetItem.dataset_id == ds.id).order_by(DatasetItem.idx)))
        return ds.id, ids


def add_batch(
    engine,
    dataset_id: int,
    verdicts: list[list[str]],
    *,
    reasons: list[list[str]] | None = None,
    name: str = "hand batch",
    method: str = "dce-amc",
) -> int:
    """A finished batch whose round 0 gives item i's sentence j the verdict verdicts[i][j] (and its reason)."""
    with Session(engine) as s:
        items = list(s.exec(select(DatasetItem).where(DatasetItem.dataset_id == dataset_id).order_by(DatasetItem.idx)))
        now = utcnow()
        b = Batch(
            name=name,
            dataset_id=dataset_id,
            method=method,
            status="done",
            n_items=len(items),
            created_at=now,
            started_at=now,
            finished_at=now,
        )
        s.add(b)
        s.flush()
        for i, (item, vs) in enumerate(zip(items, verdicts, strict=True)):
            sentences = [
                {
                    "index": j,
                    "text": item.sentences[j] if j < len(item.sentences) else "",
                    "verdict": v,
                    "reason": reasons[i][j] if reasons else f"model reason {i}.{j}: {v}",
                    "mark": MARK.get(v),
                    "rule_mark": MARK.get(v),
                    "error": None,
                }
                for j, v in enumerate(vs)
            ]
            s.add(
                BatchItem(
                    batch_id=b.id,
                    item_id=item.id,
                    status="done",
                    n_sentences=len(vs),
                    result={"rounds": [{"round": 0, "sentences": sentences}], "final_candidate": ""},
                )
            )
        s.commit()
        return b.id
