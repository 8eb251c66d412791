"""A streamed import (a chunk of rows at a time) stores what the whole-file reader gives, refuses what it
refused before storing anything, and reads its file lazily."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import select

from db import datasets as db_datasets
from db.engine import get_session
from db.models import Dataset, DatasetItem, Document
from services import datasets as ds
from services import tables
from services.datasets import ColumnMapping
from services.datasets import store as ds_store
from services.errors import InputError

CHUNK = 4  # rows a chunk in these tests: every file below spans several chunks
ARTICLE = "The Eiffel Tower stands in Paris. It was completed in 1889. The tower is made of wrought iron."
MAPPING = ColumnMapping(
    reference="doc", candidate="out", id="id", human_score="score", human_label="label", sentence_labels="votes"
)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(ds_store, "CHUNK_ROWS", CHUNK)


def rows() -> list[object]:
    """Good rows of every kind, with bad ones among them, in the first, a middle and the last chunk."""
    out: list[object] = []
    for i in range(23):
        out.append(
            {
                "id": f"r{i}",
                "doc": ARTICLE if i % 3 else f"Article {i}. It is short.",
                "out": f"The tower is in Paris {i}. Dr. Lee built it in {1880 + i}." if i % 2 else f"Summary {i}.",
                "score": i / 23,
                "label": i % 2,
                "votes": [[1, 0, 1], [1, 1, 1]] if i % 2 else [1],
            }
        )
    out.insert(1, ["not an object"])
    out.insert(6, {"id": "r2", "doc": "Again.", "out": "A repeated id."})  # its id repeats an earlier row's
    out.insert(11, {"id": "e", "doc": "", "out": "An empty reference."})
    out.insert(15, {"id": "s", "doc": ARTICLE, "out": ["Given as sentences.", "Two of them."], "votes": [1, 0]})
    out.append({"id": "last", "doc": ARTICLE, "out": "One sentence.", "votes": [1, 0]})  # labels do not line up
    return out


def jsonl_file(items: list[object]) -> bytes:
    lines = [json.dumps(r) for r in items]
    lines.insert(4, "")  # a blank line still counts in the line numbers
    lines.insert(9, "{broken")
    return ("\n".join(lines) + "\n").encode()


def csv_file(items: list[object]) -> bytes:
    out = io.StringIO(newline="")
    import csv

    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(["id", "doc", "out", "score", "label", "votes"])
    for r in items:
        if isinstance(r, dict) and isinstance(r.get("out"), str):
            w.writerow([r.get("id", ""), r["doc"], r["out"].replace(". ", ".\n", 1), r.get("score", ""),
                        r.get("label", ""), json.dumps(r.get("votes", ""))])  # fmt: skip
    out.write("only,three,fields\r\n")
    return out.getvalue().encode()


def stored(engine, dataset_id: int) -> tuple[dict, list[tuple], list[str]]:
    """A dataset as the database holds it: its row, its items (with their reference's text), its documents."""
    with get_session(engine) as session:
        d = session.get(Dataset, dataset_id)
        head = {
            k: getattr(d, k) for k in ("format", "task", "label_kinds", "meta", "n_items", "n_rejected", "rejected")
        }
        items = session.exec(
            select(DatasetItem, Document.text)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(DatasetItem.dataset_id == dataset_id)
            .order_by(DatasetItem.idx)
        ).all()
        got = [
            (
                i.idx,
                i.external_id,
                text,
                i.candidate,
                i.sentences,
                i.human_score,
                i.human_label,
                i.sentence_labels,
                i.extra,
                i.system,
            )  # fmt: skip
            for i, text in items
        ]
        docs = sorted(session.exec(select(Document.text)).all())
    return head, got, docs


def old_path(engine, data: bytes, fmt: str, mapping: ColumnMapping | None):
    """The whole file read at once, then stored: what an import did before it streamed."""
    result = ds.read_dataset(data, fmt, mapping)
    return ds.save_dataset(engine, name="whole", data=data, result=result), result


def forget(engine, dataset_id: int) -> None:
    with get_session(engine) as session:
        db_datasets.delete_dataset(session=session, dataset_id=dataset_id)
        for doc in session.exec(select(Document)).all():
            session.delete(doc)


@pytest.mark.parametrize(
    ("fmt", "make", "mapping"),
    [("jsonl", jsonl_file, MAPPING), ("csv", csv_file, MAPPING)],
)
def test_a_streamed_import_stores_what_the_whole_file_reader_gives(engine, fmt, make, mapping, tmp_path):
    data = make(rows())
    saved_old, result = old_path(engine, data, fmt, mapping)
    expected = stored(engine, saved_old.id)
    assert len(result.items) > 3 * CHUNK and result.rejected  # several chunks, and rejected rows
    forget(engine, saved_old.id)

    for source in (data, io.BytesIO(data), tmp_path / f"f.{fmt}"):
        if isinstance(source, Path):
            source.write_bytes(data)
        saved, summary = ds.import_file(engine, name="streamed", data=source, fmt=fmt, mapping=mapping)
        assert saved.created
        assert stored(engine, saved.id) == expected
        assert (summary.n_items, summary.n_rejected) == (len(result.items), len(result.rejected))
        assert summary.rejected == result.rejected and summary.label_kinds == result.label_kinds
        forget(engine, saved.id)


def test_the_rejected_rows_keep_their_line_numbers_across_chunks(engine):
    data = jsonl_file(rows())
    _, summary = ds.import_file(engine, name="x", data=data, fmt="jsonl", mapping=MAPPING)
    reasons = {r.row: r.reason for r in summary.rejected}
    assert reasons[2] == "not a JSON object"
    assert reasons[8] == "id 'r2' repeats row 4; give each row its own id"  # line 5 is blank
    assert reasons[10].startswith("not valid JSON")
    assert reasons[max(reasons)].startswith("2 sentence label(s) but the candidate has 1 sentence(s)")


@pytest.mark.skipif(not Path("/work/shared/data/qags_cnndm_mturk.jsonl").is_file(), reason="no QAGS file")
def test_the_qags_file_streamed_is_stored_as_read_whole(engine):
    data = Path("/work/shared/data/qags_cnndm_mturk.jsonl").read_bytes()
    saved_old, _ = old_path(engine, data, "qags", None)
    expected = stored(engine, saved_old.id)
    forget(engine, saved_old.id)
    saved, summary = ds.import_file(engine, name="q", data=io.BytesIO(data), fmt="qags")
    assert stored(engine, saved.id) == expected and summary.n_items == 235


# -- refusals: before anything is stored ----------------------------------------------------------------
def nothing_stored(engine) -> bool:
    with get_session(engine) as session:
        return not session.exec(select(Dataset)).all() and not session.exec(select(Document)).all()


def test_a_byte_that_is_not_utf8_in_the_last_chunk_refuses_the_file_and_stores_nothing(engine):
    data = jsonl_file(rows()) + '{"id": "z", "doc": "Café", "out": "Bad."}\n'.encode("latin-1")
    line = data.count(b"\n")
    with pytest.raises(InputError, match=rf"not UTF-8 text \(byte [\d,]+, on line {line},"):
        ds.read_dataset(data, "jsonl", MAPPING)
    with pytest.raises(InputError, match=rf"not UTF-8 text \(byte [\d,]+, on line {line},"):
        ds.import_file(engine, name="x", data=data, fmt="jsonl", mapping=MAPPING)
    assert nothing_stored(engine)


def test_a_file_whose_every_row_is_bad_is_refused_as_before(engine):
    data = b"\n".join([b"{bad"] * (3 * CHUNK) + [b'{"id": 1}'])
    with pytest.raises(InputError) as whole:
        ds.read_dataset(data, "jsonl", MAPPING)
    with pytest.raises(InputError) as streamed:
        ds.import_file(engine, name="x", data=data, fmt="jsonl", mapping=MAPPING)
    assert str(streamed.value) == str(whole.value) and "13 rejected" in str(whole.value)
    assert nothing_stored(engine)


@pytest.mark.parametrize(
    ("fmt", "mapping"),
    [("qags", None), ("summeval", None), ("paws", None), ("jsonl", MAPPING), ("csv", MAPPING), ("tsv", MAPPING)],
)
@pytest.mark.parametrize(
    "data",
    [b"", b"  \n\n ", "ref\tcand\nCaf\u00e9\tgood\n".encode("latin-1"), b"a,b\n" + b",".join([b"x"] * 1500) + b"\n"],
)
def test_every_refusal_of_the_whole_file_reader_is_the_streamed_imports(engine, fmt, mapping, data):
    with pytest.raises(InputError) as whole:
        ds.read_dataset(data, fmt, mapping)
    with pytest.raises(InputError) as streamed:
        ds.import_file(engine, name="x", data=io.BytesIO(data), fmt=fmt, mapping=mapping)
    assert str(streamed.value) == str(whole.value)
    assert nothing_stored(engine)


def test_a_failure_while_storing_the_last_chunk_leaves_no_half_dataset(engine, monkeypatch):
    data = jsonl_file(rows())
    real, calls = db_datasets.add_dataset_items, []

    def add(*, session, rows):
        calls.append(len(rows))
        if len(calls) == 5:
            raise RuntimeError("disk full")
        real(session=session, rows=rows)

    monkeypatch.setattr(db_datasets, "add_dataset_items", add)
    with pytest.raises(RuntimeError, match="disk full"):
        ds.import_file(engine, name="x", data=data, fmt="jsonl", mapping=MAPPING)
    assert calls == [CHUNK] * 5  # the items went in a chunk at a time, each a bulk insert
    assert nothing_stored(engine)


# -- a chunk at a time --------------------------------------------------------------------------------
class Reads(io.BytesIO):
    """A file that says how far it has been read."""


def test_the_rows_are_read_a_chunk_ahead_of_what_is_written_and_no_further(engine, monkeypatch):
    data = jsonl_file(rows())
    stream = Reads(data)
    line_ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    written: list[tuple[int, int]] = []  # (bytes read when a chunk was spooled, rows in it)
    real = ds_store._write_chunk

    def write(spool, chunk):
        written.append((stream.tell(), len(chunk)))
        real(spool, chunk)

    monkeypatch.setattr(ds_store, "_write_chunk", write)
    saved, summary = ds.import_file(engine, name="x", data=stream, fmt="jsonl", mapping=MAPPING)
    full, rest = divmod(summary.n_items, CHUNK)
    assert [n for _, n in written] == [CHUNK] * full + ([rest] if rest else [])
    first_read, _ = written[0]
    # the first chunk's rows (with the rejected rows between them) came from the first lines, and no more
    assert first_read in line_ends[: CHUNK + 4] and first_read < len(data) // 3
    assert [r for r, _ in written] == sorted({r for r, _ in written})  # the reading moved on, chunk by chunk


def test_stream_records_read_as_the_text_readers_do():
    text = (
        '\ufeffid,doc,out\r\n1,"a ""quoted""\r\nfield",b\r\n\r\n2,c\rd,e\n3,"x\ny",z\r4,last,row' + "\n5,\u2028sep,ok\n"
    )
    data = text.encode()
    header, whole = tables.records(tables.decode(data), "csv")
    s_header, streamed = tables.stream_records(io.BytesIO(data), "csv")
    assert s_header == header and list(streamed) == list(whole)
    lines = '\ufeff{"a": 1}\r\n\n{"b": "x\u2028y"}\nnot json\n  {"c": 3}  \n'.encode()
    assert list(tables.stream_json_records(io.BytesIO(lines))) == list(tables.json_records(tables.decode(lines)))
    array = b' \n[{"a": 1}, {"a": 2}]'
    assert list(tables.stream_json_records(io.BytesIO(array))) == [(1, {"a": 1}, None), (2, {"a": 2}, None)]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(max_size=6).map(str.encode), st.binary(max_size=3), st.just(b"\n"), st.just(b"\xef\xbb\xbf")),
        max_size=12,
    ),
    st.integers(1, 6),
)
def test_the_chunked_check_of_a_file_refuses_it_as_the_whole_file_check_does(parts, chunk):
    # read a few bytes at a time, characters and bad bytes fall across the chunks' edges
    data = b"".join(parts)
    old = tables._CHUNK
    tables._CHUNK = chunk
    try:
        try:
            tables.decode(data, advice="")
            whole = None
        except InputError as exc:
            whole = str(exc)
        try:
            tables.stream_digest(io.BytesIO(data))
            streamed = None
        except InputError as exc:
            streamed = str(exc)
    finally:
        tables._CHUNK = old
    assert streamed == whole


def test_an_upload_spooled_to_a_file_keeps_its_bytes_and_hash_and_reads_as_its_bytes(tmp_path, monkeypatch):
    """spool_upload copies a stream a chunk at a time (smaller chunks than the file here) and hashes it on the
    way; the preview, the columns and the guessed format read from the copy are those of the bytes."""
    monkeypatch.setattr(tables, "MB", 1000)  # chunks of 1,000 bytes: the file below takes several
    rows = [{"id": f"r{i}", "doc": "The tower is in Paris. " * 20, "claim": f"Row {i}."} for i in range(30)]
    data = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
    assert len(data) > 5000
    monkeypatch.setattr(tables, "upload_limit_mb", lambda: 1000)
    spooled = ds.spool_upload(io.BytesIO(data), "claims.jsonl", tmp_path / "uploads")
    assert spooled.path.read_bytes() == data and spooled.size == len(data)
    assert spooled.sha256 == ds.file_sha256(data) and spooled.name == "claims.jsonl"
    with spooled.path.open("rb") as f:
        assert ds.guess_format("claims.jsonl", f) == ds.guess_format("claims.jsonl", data) == "jsonl"
        assert ds.sniff_columns(f, "jsonl") == ds.sniff_columns(data, "jsonl")
        assert ds.preview_rows(f, "jsonl") == ds.preview_rows(data, "jsonl")


def test_an_upload_over_the_limit_is_refused_while_spooled_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "upload_limit_mb", lambda: 1)
    big = io.BytesIO(b"x" * (tables.MB + 1))
    with pytest.raises(InputError, match="limit"):
        ds.spool_upload(big, "big.jsonl", tmp_path / "uploads")
    assert not list((tmp_path / "uploads").glob("*"))


def test_a_blank_spooled_upload_is_an_empty_file_to_the_preview(tmp_path):
    spooled = ds.spool_upload(io.BytesIO(b" \n" * 40000), "blank.jsonl", tmp_path)
    with spooled.path.open("rb") as f, pytest.raises(InputError, match="empty"):
        ds.preview_rows(f, "jsonl")
