"""Datasets page: the empty state, a dataset imported through the service, details, deletion, the QAGS sample."""

from __future__ import annotations

import json
import sys

import pytest

import services.database
from db.engine import get_session
from db.models import Batch
from services import datasets
from services.config import PROJECT_ROOT
from tests.app.helpers import click, texts

DATASETS = "pages/4_Datasets.py"
QAGS_FILE = PROJECT_ROOT.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
ARTICLE = "The Eiffel Tower stands in Paris. It was completed in 1889. The tower is made of wrought iron."


def seed_dataset(name: str = "tiny") -> int:
    """A small generic JSONL dataset (one malformed row) in the app's database, imported as the page would."""
    rows = [
        {"id": "a", "article": ARTICLE, "summary": "The tower is in Paris. It is iron.", "label": "yes", "score": 1},
        {"id": "b", "article": ARTICLE, "summary": "The tower is in Rome.", "label": "no", "score": 0.25},
        {"id": "c", "article": ARTICLE, "summary": ""},
    ]
    rows.append({"id": name, "article": "Other.", "summary": "Other text."})  # makes each name's file differ
    data = "\n".join(json.dumps(r) for r in rows).encode()
    mapping = datasets.ColumnMapping(**datasets.default_mapping(datasets.sniff_columns(data, "jsonl")))
    saved, result = datasets.import_file(
        services.database.get_engine(), name=name, data=data, fmt="jsonl", mapping=mapping
    )
    assert saved.created and result is not None and result.n_items == 3
    return saved.id


def test_no_datasets_shows_the_hint(open_page):
    at = open_page(DATASETS)
    assert not at.exception
    assert any("No dataset yet" in i for i in texts(at.info)), texts(at.info)
    assert not at.dataframe
    assert at.title[0].value == "Datasets"


def test_a_saved_dataset_is_listed_with_its_details(open_page):
    ds_id = seed_dataset()
    at = open_page(DATASETS)
    assert not at.exception
    listing = at.dataframe[0].value
    row = listing.set_index("id").loc[ds_id]
    assert (row["name"], row["format"], row["items"], row["rejected"]) == ("tiny", "jsonl", 3, 1)
    assert row["label kinds"] == "score, binary" and len(row["sha256"]) == 12
    assert at.selectbox(key="ds_open").value == ds_id
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == "3" and metrics["Sentences"] == "4" and metrics["References"] == "2"
    assert metrics["Mean human score"] == "0.625" and metrics["Labelled consistent"] == "50%"
    items = at.dataframe[-1].value
    assert items["external_id"].tolist() == ["a", "b", "tiny"]
    assert items["n_sentences"].tolist() == [2, 1, 1]
    assert any("1 rejected row(s)" in e.label for e in at.expander), [e.label for e in at.expander]
    rejected = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert rejected["reason"].tolist() == ["empty candidate ('summary')"]


def test_choosing_another_dataset_and_deep_link(open_page):
    first = seed_dataset("first")
    second = seed_dataset("second")
    at = open_page(DATASETS)
    assert at.selectbox(key="ds_open").value == second  # the newest opens first
    at = at.selectbox(key="ds_open").select(first).run()
    assert not at.exception
    assert any(f"#{first} · first" in m for m in texts(at.markdown))
    assert at.query_params["dataset"] == str(first)

    at = open_page(DATASETS, query={"dataset": str(first)})
    assert not at.exception
    assert at.selectbox(key="ds_open").value == first
    at = open_page(DATASETS, query={"dataset": "999"})  # a deleted dataset: the newest opens instead
    assert not at.exception
    assert at.selectbox(key="ds_open").value == second


def test_delete_asks_for_confirmation(open_page):
    ds_id = seed_dataset()
    at = open_page(DATASETS)
    at = click(at, "Delete")
    assert not at.exception
    assert any("cannot be undone" in w for w in texts(at.warning)), texts(at.warning)
    at = click(at, "Cancel")
    assert not any("cannot be undone" in w for w in texts(at.warning))
    at = click(at, "Delete")
    at = click(at, "Delete dataset")
    assert not at.exception
    assert any(f"Deleted dataset #{ds_id}" in s for s in texts(at.success))
    assert any("No dataset yet" in i for i in texts(at.info))
    assert datasets.list_datasets(services.database.get_engine()) == []


def test_delete_is_refused_while_a_batch_uses_the_dataset(open_page):
    ds_id = seed_dataset()
    with get_session(services.database.get_engine()) as session:
        session.add(Batch(name="b", dataset_id=ds_id))
    at = click(click(open_page(DATASETS), "Delete"), "Delete dataset")
    assert not at.exception
    assert any("used by 1 batch" in e for e in texts(at.error)), texts(at.error)
    assert datasets.get_dataset(services.database.get_engine(), ds_id) is not None


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="the QAGS file in ../shared/data is absent")
def test_import_the_qags_sample(open_page):
    label = "Import the QAGS-CNN/DM sample"
    at = click(open_page(DATASETS), label)
    assert not at.exception
    assert any("Imported **235** item(s)" in s for s in texts(at.success)), texts(at.success)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == "235" and metrics["Sentences"] == "714"
    assert at.dataframe[0].value["label kinds"].tolist() == ["score, binary, sentence"]
    assert len(at.dataframe[-1].value) == 50
    at = click(at, label)  # the same file again: nothing new
    assert not at.exception
    assert any("imported before" in i for i in texts(at.info)), texts(at.info)
    assert len(datasets.list_datasets(services.database.get_engine())) == 1


def test_the_qags_button_is_hidden_without_the_file(open_page, monkeypatch, tmp_path):
    import services.config

    monkeypatch.setattr(services.config, "PROJECT_ROOT", tmp_path / "project")
    at = open_page(DATASETS)
    assert not at.exception
    assert not [b for b in at.button if b.label.startswith("Import the QAGS")]


def test_an_open_dataset_reads_only_the_rows_it_shows(open_page, monkeypatch):
    """The page lists the first 50 items and figures computed by the database (or streamed): it never loads the
    whole dataset. The sentence share is the majority vote per labelled sentence (a tie is not consistent)."""
    from db import datasets as db_datasets
    from tests.metaeval_seed import Item, make_dataset

    C = "consistent"
    votes = [{"a": 1, "b": 1, "c": 0}, {"a": 0, "b": 1}, {"a": 0, "b": 0, "c": 1}]  # majorities 1, 0 (tie), 0
    items = [Item([[C, C, C]], human_score=1.0, human_label=1, sentence_labels=votes) for _ in range(60)]
    items += [Item([[C, C]], human_score=0.5, human_label=0) for _ in range(60)]  # two sentences, no labels
    ds = make_dataset(services.database.get_engine(), items)
    loaded: list[int] = []
    real = db_datasets.dataset_item_rows

    def counting(**kw):
        rows = real(**kw)
        loaded.append(len(rows))
        return rows

    monkeypatch.setattr(db_datasets, "dataset_item_rows", counting)
    at = open_page(DATASETS, query={"dataset": str(ds)})
    assert not at.exception, at.exception
    assert loaded and max(loaded) <= 50, loaded
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == "120" and metrics["Sentences"] == f"{60 * 3 + 60 * 2:,}"
    assert any("33% of 180 labelled sentences" in c for c in texts(at.caption)), texts(at.caption)


def test_an_uploaded_file_is_imported_from_the_uploaders_file_object(open_page):
    rows = [
        {"id": f"u{i}", "article": ARTICLE, "summary": f"The tower is in Paris. Row {i} says it."} for i in range(5)
    ]
    rows.insert(2, {"id": "u0", "article": ARTICLE, "summary": "A repeated id."})
    data = "\n".join(json.dumps(r) for r in rows).encode()
    at = open_page(DATASETS)
    at.file_uploader(key="ds_file").upload("pairs.jsonl", data, "application/jsonl").run()
    assert not at.exception
    at = at.button(key="ds_import").click().run()
    assert not at.exception
    assert any("Imported **5** item(s) from pairs" in w.value for w in at.warning), texts(at.warning)
    assert any("**1** row(s) were rejected" in w.value for w in at.warning)
    (saved,) = datasets.list_datasets(services.database.get_engine())
    assert (saved.n_items, saved.n_rejected, saved.sha256) == (5, 1, datasets.file_sha256(data))
    assert datasets.rejected_rows(services.database.get_engine(), saved.id) == [
        datasets.RejectedRow(3, "id 'u0' repeats row 1; give each row its own id")
    ]


def test_a_datasets_figures_are_computed_once_not_at_every_visit(open_page, monkeypatch):
    """A dataset never changes once imported: its figures (every item's sentence labels read) are computed at
    the first visit and kept; another dataset gets its own."""
    first, second = seed_dataset("one"), seed_dataset("two")
    calls: list[int] = []
    real = datasets.dataset_stats

    def counting(engine, dataset_id):
        calls.append(dataset_id)
        return real(engine, dataset_id)

    monkeypatch.setattr(datasets, "dataset_stats", counting)
    for _ in range(2):
        at = open_page(DATASETS, query={"dataset": str(first)})
        assert not at.exception, at.exception
        assert {m.label: m.value for m in at.metric}["Items"] == "3"
    assert calls == [first]
    at = open_page(DATASETS, query={"dataset": str(second)})
    assert {m.label: m.value for m in at.metric}["Mean human score"] == "0.625"
    assert calls == [first, second]


def test_an_upload_is_copied_to_a_file_once_and_let_go_after_its_import(open_page, monkeypatch):
    """The page reads the upload's bytes once, into a file of its own (not at every rerun, and never as one
    bytes object), lets Streamlit's copy go at once, and deletes its own once the file is imported."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFile

    from services.config import get_settings

    whole: list[str] = []
    real_getvalue = UploadedFile.getvalue

    def getvalue(self):
        caller = sys._getframe(1).f_code.co_filename
        if not caller.startswith(str(PROJECT_ROOT / ".venv")) and "streamlit" not in caller:
            whole.append(caller)  # the app, not Streamlit's own test harness, took the bytes whole
        return real_getvalue(self)

    monkeypatch.setattr(UploadedFile, "getvalue", getvalue)
    spooled: list[str] = []
    real_spool = datasets.spool_upload
    monkeypatch.setattr(datasets, "spool_upload", lambda *a, **kw: spooled.append(a[1]) or real_spool(*a, **kw))
    removed: list[str] = []
    real_remove = MemoryUploadedFileManager.remove_file
    monkeypatch.setattr(
        MemoryUploadedFileManager,
        "remove_file",
        lambda self, session_id, file_id: removed.append(file_id) or real_remove(self, session_id, file_id),
    )
    rows = [{"id": f"u{i}", "article": ARTICLE, "summary": f"The tower is in Paris. Row {i}."} for i in range(4)]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    at = open_page(DATASETS)
    at.file_uploader(key="ds_file").upload("pairs.jsonl", data, "application/jsonl").run()
    assert not at.exception, at.exception
    at.run()  # a rerun (a widget changed) reads the copy, not the upload
    assert spooled == ["pairs.jsonl"] and not whole, whole
    uploads = get_settings().data_dir / "uploads"
    (copy,) = uploads.iterdir()
    assert copy.read_bytes() == data
    assert len(removed) == 1  # Streamlit's copy is let go as soon as the page has its own
    at = at.button(key="ds_import").click().run()
    assert not at.exception, at.exception
    assert any("Imported **4** item(s) from pairs" in w.value for w in at.success), texts(at.success)
    (saved,) = datasets.list_datasets(services.database.get_engine())
    assert saved.sha256 == datasets.file_sha256(data)
    assert not list(uploads.iterdir()) and len(removed) == 1
