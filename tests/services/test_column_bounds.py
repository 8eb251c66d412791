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
