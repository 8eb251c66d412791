"""A file's ids key items, scores and labels: a repeated id is refused with its rows, never merged in silence."""

from __future__ import annotations

import json

import pytest

from services import annotations as an
from services import datasets, judges
from services.datasets import ColumnMapping
from services.errors import InputError
from tests.annotation_seed import make_dataset
from tests.support.judges import labelled_dataset

MAPPING = ColumnMapping(reference="reference", candidate="candidate", id="id", human_label="label")


def test_a_dataset_import_rejects_the_row_that_repeats_an_id_and_names_the_first():
    rows = [{"id": "a", "reference": "R.", "candidate": f"C{i}.", "label": i % 2} for i in range(6)]
    rows.append({"id": "b", "reference": "R.", "candidate": "D.", "label": 1})
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    got = datasets.read_table(data, "jsonl", MAPPING)
    assert [(it.external_id, it.human_label) for it in got.items] == [("a", 0), ("b", 1)]
    assert [r.row for r in got.rejected] == [2, 3, 4, 5, 6]
    assert all("id 'a' repeats row 1" in r.reason for r in got.rejected)


def test_a_row_without_an_id_is_keyed_by_its_line_and_a_clash_with_it_is_refused():
    data = b'{"reference": "R.", "candidate": "C."}\n{"id": "1", "reference": "R.", "candidate": "D."}\n'
    got = datasets.read_table(data, "jsonl", MAPPING)
    assert [it.external_id for it in got.items] == ["1"]
    assert got.rejected[0].row == 2 and "repeats row 1" in got.rejected[0].reason


def test_a_score_column_with_a_repeated_id_is_refused_naming_the_rows(engine):
    ds = labelled_dataset(engine, 3)
    data = b"id,p\nx0,0.1\nx1,0.5\nx0,0.9\n"
    with pytest.raises(InputError, match=r"ids repeat in 'id': 'x0' on rows 1, 3"):
        judges.import_column(engine, ds, name="c", data=data, filename="s.csv", score_column="p")
    assert judges.list_columns(engine, ds) == []  # nothing stored


def test_a_label_file_that_labels_one_sentence_twice_keeps_the_first_and_rejects_the_repeat(engine):
    ds, items = make_dataset(engine, [["A one.", "A two."], ["B one."]], external_ids=["x0", "x1"])
    rows = [
        {"external_id": "x0", "sentence_idx": 0, "annotator": "ada", "label": 1},
        {"external_id": "x0", "sentence_idx": 1, "annotator": "ada", "label": 1},
        {"external_id": "x0", "sentence_idx": 0, "annotator": "ada", "label": 0},
        {"external_id": "x0", "sentence_idx": 0, "annotator": "bob", "label": 0},
    ]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    n, rejected = an.import_labels(engine, ds, data, "jsonl")
    assert n == 3
    assert [r.row for r in rejected] == [3] and "first on row 1" in rejected[0].reason
    ada = an.annotator_by_name(engine, "ada")
    got = {(x.annotator_id, x.sentence_idx): x.label for x in an.labels_for_item(engine, items[0])}
    assert got[(ada.id, 0)] == 1


def test_an_id_longer_than_200_characters_is_stored_whole_and_found_by_it(engine):
    """The import kept 200 characters: two ids equal up to there became one, and a score column or label file
    keyed by the whole id found nothing. Kept whole on SQLite and PostgreSQL (whose column had a length)."""
    ids = ["x" * 200 + f"-{i:09d}" for i in range(3)]
    rows = "".join(json.dumps({"id": i, "r": "The council met.", "c": "It met."}) + "\n" for i in ids)
    saved, summary = datasets.import_file(
        engine,
        name="long.jsonl",
        data=rows.encode(),
        fmt="jsonl",
        mapping=ColumnMapping(reference="r", candidate="c", id="id"),
    )
    assert summary.n_items == 3 and summary.n_rejected == 0
    column = "".join(json.dumps({"id": i, "p": 0.25 * k}) + "\n" for k, i in enumerate(ids))
    got = judges.import_column(
        engine, saved.id, name="long", data=column.encode(), filename="s.jsonl", score_column="p"
    )
    assert (got.n_matched, got.n_unmatched) == (3, 0)
