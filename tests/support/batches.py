"""A small batch dataset and judge settings shared by the batch, worker and export tests."""

from __future__ import annotations

from sqlmodel import Session

from db.models import Dataset, DatasetItem, Document
from services import dcr
from services.config import BackendConfig
from services.text import split_sentences
from tests.support.waiting import HEALTHY_TIMEOUT

BAD, FIX = "47 million", "40 million"


EVAL = dcr.DCRConfig(max_rounds=0)  # evaluation only


REF = "The council approved a budget of 40 million dollars on Tuesday. Work starts in March."


def make_dataset(engine, n: int, *, bad_every: int = 2) -> int:
    with Session(engine) as session:
        ref = Document(sha256="ref", text=REF, n_chars=len(REF))
        ds = Dataset(name="tiny", format="jsonl", sha256="tiny", n_items=n)
        session.add(ref)
        session.add(ds)
        session.flush()
        for i in range(n):
            amount = BAD if i % bad_every == 0 else "40 million"
            cand = f"Item {i}: the council approved {amount} dollars. Work starts in March."
            session.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=f"x{i}",
                    reference_id=ref.id,
                    candidate=cand,
                    sentences=split_sentences(cand),
                )
            )
        session.commit()
        return ds.id


def judge_backend(fake, **kw) -> BackendConfig:
    return BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=HEALTHY_TIMEOUT, **kw
    )


def worker_of(engine, batch_id: int, body: dict) -> str | None:
    """The worker holding the item a request to the fake server is about (its candidate says "Item N:")."""
    import re

    from sqlalchemy import select

    from db.models import BatchItem
    from tests.fakes import last_user

    external_id = "x" + re.search(r"Item (\d+):", last_user(body)).group(1)
    with engine.connect() as conn:
        return conn.execute(
            select(BatchItem.worker)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id, DatasetItem.external_id == external_id)
        ).scalar_one()
