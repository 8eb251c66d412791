"""The distillation set's queries, on SQLite and PostgreSQL."""

from __future__ import annotations

from db import batches as db_batches
from db import datasets as db_datasets
from db import distill as db
from db.engine import get_session
from tests.metaeval_seed import Item, seed

C, X = "consistent", "inconsistent"
ITEMS = [
    Item([[C]], human_label=1),
    Item([[X]], human_label=None),
    Item([[C, X]], human_label=0),
]


def test_batch_item_rows_follow_the_dataset_order(engine):
    ds, bid = seed(engine, ITEMS)
    with get_session(engine) as session:
        rows = db.batch_item_rows(session=session, batch_id=bid)
        assert db_batches.get_batch(session=session, batch_id=bid).dataset_id == ds
        assert db_batches.get_batch(session=session, batch_id=bid + 99) is None
        assert db_datasets.get_dataset(session=session, dataset_id=ds).name == "hand"
        assert [(di.external_id, name) for _bi, di, _doc, name in rows] == [
            ("x0", "hand"),
            ("x1", "hand"),
            ("x2", "hand"),
        ]
        assert all(bi.item_id == di.id and doc.id == di.reference_id for bi, di, doc, _ in rows)


def test_labelled_item_rows_keep_the_asked_labels_of_the_asked_datasets(engine):
    ds, _ = seed(engine, ITEMS)
    other, _ = seed(engine, ITEMS, name="other")
    with get_session(engine) as session:
        rows = db.labelled_item_rows(session=session, dataset_ids=[ds], labels=[1, 0])
        ones = db.labelled_item_rows(session=session, dataset_ids=[ds, other], labels=[1])
        assert sorted(di.external_id for di, _doc, _name in rows) == ["x0", "x2"]
        assert sorted(name for _di, _doc, name in ones) == ["hand", "other"]
