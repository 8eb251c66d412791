"""Hand-made batches for the meta-evaluation tests: results written directly, scores by Eq. 3."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from db.models import Batch, BatchItem, Dataset, DatasetItem, Document, utcnow

MARK = {"consistent": 1, "inconsistent": -1}


@dataclass
class Item:
    """One item: the verdict of each sentence in each round, and the human judgments."""

    rounds: list[list[str]]  # per round, per sentence: consistent | inconsistent | unknown
    human_score: float | None = None
    human_label: int | None = None
    sentence_labels: list[dict[str, int]] | None = None
    flag: bool | None = None  # the model's is_consistent at round 0
    status: str = "done"
    extra: dict[str, Any] = field(default_factory=dict)


def eq3(verdicts: list[str]) -> float | None:
    marks = [MARK[v] for v in verdicts if v in MARK]
    return (sum(marks) / len(marks) + 1) / 2 if marks else None


def make_dataset(engine, items: list[Item], *, name: str = "hand", fmt: str = "jsonl") -> int:
    """A dataset whose item i has one sentence per verdict of items[i]'s round 0."""
    with Session(engine) as s:
        ds = Dataset(
            name=name,
            format=fmt,
            sha256=hashlib.sha256(name.encode()).hexdigest(),
            n_items=len(items),
            label_kinds=["score", "binary"],
        )
        s.add(ds)
        s.flush()
        for i, it in enumerate(items):
            ref = Document(sha256=f"{name}-ref-{i}", text=f"Reference {i}. The council met on Tuesday.", n_chars=40)
            s.add(ref)
            s.flush()
            sentences = [f"Item {i} sentence {j}." for j in range(len(it.rounds[0]))]
            s.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=f"x{i}",
                    reference_id=ref.id,
                    candidate=" ".join(sentences),
                    sentences=sentences,
                    human_score=it.human_score,
                    human_label=it.human_label,
                    sentence_labels=it.sentence_labels,
                )
            )
        s.commit()
        return ds.id


def add_batch(
    engine,
    dataset_id: int,
    items: list[Item],
    *,
    method: str = "dce-amc",
    amc: str = "rule",
    status: str = "done",
    max_rounds: int | None = None,
    params: dict[str, Any] | None = None,
) -> int:
    """A batch over the dataset's items (in order) with these results."""
    with Session(engine) as s:
        ids = [
            r.id for r in sorted(s.query(DatasetItem).filter(DatasetItem.dataset_id == dataset_id), key=lambda r: r.idx)
        ]
        now = utcnow()
        paragraph = method == "paragraph"
        versions = {
            "evaluator": "paragraph-evaluator@1" if paragraph else "dce-summarization@1",
            "improver": "paragraph-improver@1" if paragraph else "rai@1",
            "converter": "rule@1" if amc == "rule" else "amc@1",
        }
        b = Batch(
            name="hand batch",
            dataset_id=dataset_id,
            method=method,
            amc=amc,
            status=status,
            backend_kind="openai",
            model="fake-model",
            base_url="http://127.0.0.1:9/v1",
            params=params or {"temperature": 0.0},
            prompt_versions=versions,
            max_rounds=max_rounds if max_rounds is not None else max(len(it.rounds) for it in items) - 1,
            n_items=len(items),
            created_at=now,
            started_at=now,
            finished_at=now if status == "done" else None,
        )
        s.add(b)
        s.flush()
        for item_id, it in zip(ids, items, strict=True):
            rounds = [
                {
                    "round": r,
                    "candidate": "",
                    "score": eq3(verdicts),
                    "k": len(verdicts),
                    "alpha": 0.0,
                    "beta": 0.0,
                    "n_unknown": verdicts.count("unknown"),
                    "error": None,
                    "model_is_consistent": it.flag if r == 0 else None,
                    "sentences": [
                        {
                            "index": j,
                            "text": f"s{j}",
                            "verdict": v,
                            "reason": v,
                            "mark": MARK.get(v),
                            "rule_mark": MARK.get(v),
                            "error": None,
                        }
                        for j, v in enumerate(verdicts)
                    ],
                    "extras": [],
                    "rewrites": [],
                    "improve_error": None,
                }
                for r, verdicts in enumerate(it.rounds)
            ]
            done = it.status == "done"
            s.add(
                BatchItem(
                    batch_id=b.id,
                    item_id=item_id,
                    status=it.status,
                    score=eq3(it.rounds[0]) if done else None,
                    final_score=eq3(it.rounds[-1]) if done else None,
                    n_sentences=len(it.rounds[0]),
                    n_unknown=it.rounds[0].count("unknown"),
                    n_rounds=len(it.rounds) if done else 0,
                    result={"rounds": rounds, "final_candidate": ""} if done else None,
                )
            )
        s.commit()
        return b.id


def seed(engine, items: list[Item], **kw) -> tuple[int, int]:
    """A dataset and a batch over it: (dataset_id, batch_id)."""
    ds = make_dataset(engine, items, name=kw.pop("name", "hand"))
    return ds, add_batch(engine, ds, items, **kw)
