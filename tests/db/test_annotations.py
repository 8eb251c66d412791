"""The annotation queries (db/annotations.py): labels, assignments and the rows the services read."""

from __future__ import annotations

from db import annotations as queries
from db import batches as db_batches
from db import datasets as db_datasets
from db.engine import get_session
from db.models import SentenceLabelPublic, utcnow
from tests.annotation_seed import add_batch, make_dataset


def _row(item_id: int, annotator_id: int, sentence_idx: int, label: int, note: str) -> dict:
    now = utcnow()
    return {
        "run_id": None,
        "round_idx": None,
        "dataset_item_id": item_id,
        "annotator_id": annotator_id,
        "sentence_idx": sentence_idx,
        "label": label,
        "note": note,
        "created_at": now,
        "updated_at": now,
    }


def test_writing_a_label_upserts_it_and_marks_the_assignment_done(engine):
    dataset_id, (item, _) = make_dataset(engine, [["One.", "Two."], ["Three."]])
    with get_session(engine) as s:
        queries.insert_annotator(session=s, name="Ada")
        ada = queries.annotator_by_name(session=s, name="Ada")
        assert ada is not None
        queries.insert_assignments(
            session=s,
            rows=[
                {
                    "dataset_id": dataset_id,
                    "dataset_item_id": item,
                    "annotator_id": ada.id,
                    "status": "pending",
                    "assigned_at": utcnow(),
                    "done_at": None,
                }
            ],
        )
    with get_session(engine) as s:
        first = queries.write_label(session=s, row=_row(item, ada.id, 0, 1, "sure"), keep_note=False)
        again = queries.write_label(session=s, row=_row(item, ada.id, 0, 0, ""), keep_note=True)
        assert isinstance(again, SentenceLabelPublic)
        assert (again.id, again.label, again.note) == (first.id, 0, "sure")
        assert queries.progress_counts(session=s, dataset_id=dataset_id) == (1, 0, 1)
        queries.write_label(session=s, row=_row(item, ada.id, 1, 1, ""), keep_note=False)
        assert queries.progress_counts(session=s, dataset_id=dataset_id, annotator_id=ada.id) == (1, 1, 2)
        assert [x.sentence_idx for x in queries.labels(session=s, dataset_item_id=item)] == [0, 1]
        rows = queries.label_rows(session=s, dataset_id=dataset_id)
        assert [(r.annotator, r.sentence, r.label) for r in rows] == [("Ada", "One.", 0), ("Ada", "Two.", 1)]
        assert queries.queue(session=s, dataset_id=dataset_id, annotator_id=ada.id)[0].status == "done"


def test_missing_rows_read_as_none(engine):
    dataset_id, items = make_dataset(engine, [["One."]])
    batch_id = add_batch(engine, dataset_id, [["consistent"]])
    with get_session(engine) as s:
        assert queries.item_sentence_count(session=s, item_id=items[0]) == 1
        assert queries.item_sentence_count(session=s, item_id=items[0] + 999) is None
        assert db_datasets.get_dataset(session=s, dataset_id=dataset_id + 999) is None
        assert queries.get_item(session=s, item_id=items[0] + 999) is None
        assert queries.done_item_result(session=s, batch_id=batch_id, item_id=items[0] + 999) is None
        assert queries.done_item_result(session=s, batch_id=batch_id, item_id=items[0])[1] == ["One."]
        assert db_batches.batch_names(session=s, batch_ids=[]) == {}
        assert queries.annotator_by_token(session=s, token="no such token") is None
