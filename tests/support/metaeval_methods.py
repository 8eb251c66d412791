"""A dataset whose documents and summaries grow in length, half of them wrong."""

from __future__ import annotations

from sqlmodel import Session

from db.models import Dataset, DatasetItem, Document
from services.text import split_sentences

BAD = "47 million"


def seed(engine, n: int = 8) -> int:
    """Items alternate wrong (47 million, human label 0) and right; documents and summaries grow in length."""
    with Session(engine) as session:
        ds = Dataset(name="grow", format="jsonl", sha256="grow", n_items=n)
        session.add(ds)
        session.flush()
        for i in range(n):
            ref_text = "The council approved 40 million dollars. " + "Work starts in March. " * (i + 1)
            ref = Document(sha256=f"r{i}", text=ref_text, n_chars=len(ref_text))
            session.add(ref)
            session.flush()
            wrong = i % 2 == 0
            cand = f"Item {i}: the council approved {BAD if wrong else '40 million'} dollars." + " Work starts." * i
            session.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=str(i),
                    reference_id=ref.id,
                    candidate=cand,
                    sentences=split_sentences(cand),
                    human_label=0 if wrong else 1,
                    human_score=0.0 if wrong else 1.0,
                    extra={"error_type": "number" if i % 4 == 0 else "entity"} if wrong else {},
                )
            )
        session.commit()
        return ds.id
