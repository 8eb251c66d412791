"""What an estimate reads from the database, on both backends: each item's sizes, counted where they are stored."""

from __future__ import annotations

from sqlmodel import Session

from db import estimates as db_estimates
from db.models import Dataset, DatasetItem, Document

SENTENCES = [
    [],
    ["One."],
    ["Zürich's café opened — twice.", "It closed."],
    ["A.", "B.", "C.", "D.", "E."],
    ['Quoted "text" [with] brackets, commas.', "{Braces} too."],
]


def test_dataset_sizes_are_each_items_characters_and_sentences_in_order(engine):
    with Session(engine) as session:
        refs = [Document(sha256=f"r{i}", text="Référence " * (i + 1), n_chars=10 * (i + 1)) for i in range(2)]
        ds = Dataset(name="sizes", format="jsonl", sha256="sizes", n_items=len(SENTENCES))
        session.add_all([*refs, ds])
        session.flush()
        # stored out of order: the sizes follow the items' order in the dataset, not the rows'
        for idx in reversed(range(len(SENTENCES))):
            session.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=idx,
                    external_id=f"x{idx}",
                    reference_id=refs[idx % 2].id,
                    candidate=" ".join(SENTENCES[idx]),
                    sentences=SENTENCES[idx],
                )
            )
        session.commit()
        want = [(len(refs[i % 2].text), len(" ".join(s)), len(s)) for i, s in enumerate(SENTENCES)]
        assert db_estimates.dataset_sizes(session=session, dataset_id=ds.id) == want
        assert db_estimates.dataset_sizes(session=session, dataset_id=ds.id, limit=3) == want[:3]
        assert db_estimates.dataset_sizes(session=session, dataset_id=ds.id + 1) == []
