"""A table's columns are bounded (services.tables.MAX_COLUMNS) wherever a file is read: the Datasets page's
column sniffing and preview, the import, and every other table reader, with a message that says what to do."""

from __future__ import annotations

import json

import pytest

from services import datasets, tables
from services.datasets import ColumnMapping
from services.errors import InputError

MAPPING = ColumnMapping(reference="c0", candidate="c1")


def wide_csv(n: int, *, sep: str = ",", quoted: bool = False) -> bytes:
    names = [f'"c{i}"' if quoted else f"c{i}" for i in range(n)]
    return (sep.join(names) + "\n" + sep.join("x" for _ in range(n)) + "\n").encode()


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_million_columns_are_refused_by_sniffing_preview_and_import(fmt):
    data = wide_csv(1_000_000, sep="," if fmt == "csv" else "\t")
    for call in (
        lambda: datasets.sniff_columns(data, fmt),
        lambda: datasets.preview_rows(data, fmt),
        lambda: datasets.read_table(data, fmt, MAPPING),
    ):
        with pytest.raises(InputError, match=r"The header names 1,000,000 columns; the limit is 1,000"):
            call()


def test_a_quoted_header_is_counted_after_parsing():
    data = wide_csv(tables.MAX_COLUMNS + 1, quoted=True)
    with pytest.raises(InputError, match=r"1,001 columns; the limit is 1,000"):
        datasets.sniff_columns(data, "csv")


def test_the_limit_itself_is_allowed():
    data = wide_csv(tables.MAX_COLUMNS)
    assert len(datasets.sniff_columns(data, "csv")) == tables.MAX_COLUMNS
    assert len(datasets.preview_rows(data, "csv")[0]) == tables.MAX_COLUMNS + 1  # with the row number


def test_json_rows_with_too_many_keys_are_refused_when_sniffed_and_flagged_in_the_preview():
    wide = {f"k{i}": 1 for i in range(tables.MAX_COLUMNS + 5)}
    data = (json.dumps({"c0": "R.", "c1": "C."}) + "\n" + json.dumps(wide) + "\n").encode()
    with pytest.raises(InputError, match="the limit is 1,000"):
        datasets.sniff_columns(data, "jsonl")
    rows = datasets.preview_rows(data, "jsonl")
    assert rows[0]["c0"] == "R." and rows[1] == {"row": "2", "problem": "1,005 fields; the limit is 1,000"}


# -- every other reader of a table: the Judges page's score column, the dataset import, whole-table readers ----------
def million_key_row(n: int = 1_000_000) -> str:
    return "{" + ",".join(f'"k{i}":0' for i in range(n)) + "}"


def test_a_score_column_of_a_million_columns_is_refused_by_the_header_with_a_short_message(engine):
    from services import judges
    from tests.support.judges import labelled_dataset

    ds = labelled_dataset(engine, 3)
    data = wide_csv(1_000_000)
    with pytest.raises(InputError, match=r"1,000,000 columns; the limit is 1,000") as exc:
        judges.import_column(engine, ds, name="wide", data=data, filename="s.csv", score_column="p")
    assert len(str(exc.value)) < 400, "the message names no column list"


def test_a_score_column_with_a_million_key_row_is_refused_with_its_line(engine):
    from services import judges
    from tests.support.judges import labelled_dataset

    ds = labelled_dataset(engine, 3)
    data = ('{"id": "x0", "p": 0.5}\n' + million_key_row() + "\n").encode()
    with pytest.raises(InputError, match=r"s.jsonl:2: 1,000,\d{3} fields; the limit is 1,000") as exc:
        judges.import_column(engine, ds, name="wide", data=data, filename="s.jsonl", score_column="p")
    assert len(str(exc.value)) < 400


def test_a_score_column_without_the_asked_columns_names_only_a_few_of_its_columns(engine):
    from services import judges
    from tests.support.judges import labelled_dataset

    ds = labelled_dataset(engine, 3)
    data = wide_csv(tables.MAX_COLUMNS)  # at the limit: read, but it has no "p"
    with pytest.raises(InputError, match=r"needs the columns 'id' and 'p'; it has 'c0', .* and 995 more\.") as exc:
        judges.import_column(engine, ds, name="wide", data=data, filename="s.csv", score_column="p")
    assert "c999" not in str(exc.value)


def test_a_score_column_over_the_upload_limit_is_refused_before_it_is_read(engine, monkeypatch):
    from services import judges
    from tests.support.judges import labelled_dataset

    ds = labelled_dataset(engine, 3)
    monkeypatch.setattr(tables, "upload_limit_mb", lambda: 1)
    data = b"id,p\n" + b"x0,0.5\n" * 200_000  # 1.3 MB
    with pytest.raises(InputError, match=r"the limit is 1 MB"):
        judges.import_column(engine, ds, name="big", data=data, filename="s.csv", score_column="p")


def test_the_dataset_import_rejects_a_million_key_row_as_sniffing_refuses_it(engine):
    data = (json.dumps({"c0": "The council met.", "c1": "It met."}) + "\n" + million_key_row() + "\n").encode()
    with pytest.raises(InputError, match=r"Row 2 has 1,000,\d{3} fields; the limit is 1,000"):
        datasets.sniff_columns(data, "jsonl")
    saved, summary = datasets.import_file(engine, name="wide.jsonl", data=data, fmt="jsonl", mapping=MAPPING)
    assert summary.n_items == 1 and summary.n_rejected == 1
    (why,) = [r.reason for r in summary.rejected]
    assert why.startswith("1,000,") and why.endswith("fields; the limit is 1,000")


def test_a_row_over_the_limit_is_rejected_and_at_the_limit_is_read():
    at_limit = {f"k{i}": 0 for i in range(tables.MAX_COLUMNS)}
    over = at_limit | {"one more": 0}
    _, found = tables.records(json.dumps(at_limit) + "\n" + json.dumps(over) + "\n", "jsonl")
    first, second = list(found)
    assert first[1] == at_limit and second == (2, None, "1,001 fields; the limit is 1,000")


def test_whole_table_readers_bound_the_columns_of_all_json_rows_together():
    rows = "".join(json.dumps({f"k{j}_{i}": 0 for j in range(10)}) + "\n" for i in range(101))
    with pytest.raises(InputError, match=r"t.jsonl: The rows name at least 1,0\d\d columns; the limit is 1,000"):
        tables.read_rows(rows.encode(), "t.jsonl")


def test_a_json_message_that_ends_in_at_reads_once():
    _, found = tables.records('{"a": "no end\n', "jsonl")
    ((_, _, why),) = list(found)
    assert why == "not valid JSON (Unterminated string starting at column 7)"
    _, found = tables.records('{"a" 1}\n', "jsonl")
    ((_, _, why),) = list(found)
    assert why == "not valid JSON (Expecting ':' delimiter at column 6)"


def test_compare_refuses_a_million_key_line_naming_it(tmp_path, monkeypatch, capsys):
    import cli

    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "a", "system": "s", "score": 0.5}) + "\n" + million_key_row() + "\n")
    assert cli.main(["compare", "--input", str(path), "--output", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "line 2: 1,000,000 fields; the limit is 1,000" in err and len(err) < 400
