"""The one table reader: every format it reads, and what each caller shows for a file it cannot use."""

from __future__ import annotations

import json

import pytest

import cli
from clitools import alpha
from services import datasets as ds
from services import tables
from services.errors import InputError, SurveyError

ROWS = [{"id": "1", "text": "Paris is in France."}, {"id": "2", "text": "A line\nwith a break, and a comma."}]


def as_csv(delimiter: str = ",") -> str:
    return f"id{delimiter}text\n" + "".join(f'{r["id"]}{delimiter}"{r["text"]}"\n' for r in ROWS)


FILES = {
    "t.csv": as_csv(","),
    "t.tsv": as_csv("\t"),
    "t.json": json.dumps(ROWS),
    "items.json": json.dumps({"items": ROWS}),
    "t.jsonl": "\n".join(json.dumps(r) for r in ROWS) + "\n",
}


@pytest.mark.parametrize("name", FILES)
def test_every_format_gives_the_same_rows(name):
    text = FILES[name]
    assert tables.read_rows(text, name) == ROWS
    assert tables.read_rows(("\ufeff" + text).encode(), name) == ROWS  # a byte-order mark is not data
    frame = tables.read_frame(text.encode(), name)
    assert frame.to_dict("records") == ROWS


def test_the_frame_is_indexed_by_the_line_each_row_starts_on():
    frame = tables.read_frame(FILES["t.csv"].encode(), "t.csv")
    assert list(frame.index) == [2, 3]  # the second row's text spans lines 3 and 4
    text = 'id,text\n1,"two\nlines"\n\n2,after a blank line\n'
    assert list(tables.read_frame(text.encode(), "t.csv").index) == [2, 5]


def test_the_frame_strips_values_and_lower_cases_column_names():
    frame = tables.read_frame(b"Unit , Rater,VALUE\n 1 , a ,  3\n", "r.csv")
    assert list(frame.columns) == ["unit", "rater", "value"]
    assert frame.iloc[0].tolist() == ["1", "a", "3"]


def test_an_empty_file_gives_no_rows():
    assert tables.read_rows(b"", "t.csv") == []
    assert tables.read_rows(b"  \n", "t.jsonl") == []
    assert tables.read_frame(b"", "t.csv").empty


# what the reader says -> (file name, content)
BAD = {
    "t.csv:3: has 3 fields but the header has 2": ("t.csv", "a,b\n1,2\n3,4,5\n"),
    "t.tsv:2: has 1 fields but the header has 2": ("t.tsv", "a\tb\n1\n"),
    "t.csv: The header names a column twice: a": ("t.csv", "a,a\n1,2\n"),
    "t.jsonl:3: not valid JSON": ("t.jsonl", '{"a": 1}\n\n{"a": \n'),
    "t.jsonl:2: each line must be a JSON object": ("t.jsonl", '{"a": 1}\n[1]\n'),
    "t.json: expected a list of objects": ("t.json", '[{"a": 1}, 2]'),
}


@pytest.mark.parametrize("message", BAD)
def test_the_first_bad_row_is_named_with_its_line_and_reason(message):
    name, text = BAD[message]
    with pytest.raises(InputError) as exc:
        tables.read_rows(text.encode(), name)
    assert message in str(exc.value)
    with pytest.raises(InputError) as exc:
        tables.read_frame(text.encode(), name)
    assert message in str(exc.value)


def test_a_file_that_is_not_utf8_is_named():
    with pytest.raises(InputError, match="t.csv: not UTF-8 text"):
        tables.read_rows("a\ncafé\n".encode("latin-1"), "t.csv")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 5, on line 2"):
        tables.decode("a\ncaf\u00e9\n".encode("latin-1"), advice="Split it.")


def test_the_size_limit_holds_where_the_caller_asks_for_it(monkeypatch):
    monkeypatch.setenv("MAX_UPLOAD_MB", "3")
    big = b"a\n" + b"x" * (3 * 1024 * 1024)
    with pytest.raises(
        InputError,
        match=r"the limit is 3 MB \(raise the MAX_UPLOAD_MB setting, in MB, to allow larger files\)\. Split it",
    ):
        tables.decode(big, advice="Split it.")
    assert tables.decode(big).startswith("a\n")


def test_lenient_records_keep_reading_after_a_bad_row():
    header, found = tables.records("a,b\n1,2\n3\n\n5,6\n", "csv")
    assert header == ["a", "b"]
    assert list(found) == [
        (2, {"a": "1", "b": "2"}, None),
        (3, None, "has 1 fields but the header has 2"),
        (5, {"a": "5", "b": "6"}, None),
    ]
    _, found = tables.records('{"a": 1}\nnot json\n{"a": 2}\n', "jsonl")
    rows = list(found)
    assert [r[0] for r in rows] == [1, 2, 3] and rows[1][2].startswith("not valid JSON")
    with pytest.raises(InputError, match="Unknown table format"):
        tables.records("", "xlsx")  # type: ignore[arg-type]


# -- each caller's error path ----------------------------------------------------------------------
def test_dataset_import_lists_each_bad_row_with_its_line():
    data = b'reference,candidate\n"An article\nover two lines.",A summary.\nonly one field\nArt.,Sum.\n'
    result = ds.read_table(data, "csv", ds.ColumnMapping(reference="reference", candidate="candidate"))
    assert [it.reference for it in result.items] == ["An article\nover two lines.", "Art."]
    assert result.rejected == [ds.RejectedRow(4, "has 1 fields but the header has 2")]


def test_conseval_items_name_the_bad_line():
    from services import conseval

    with pytest.raises(InputError, match=r"items.jsonl:2: not valid JSON"):
        conseval.read_items(b'{"query": "q", "response": "r"}\n{oops\n', "items.jsonl", criteria=["coherence"])
    with pytest.raises(InputError, match=r"items.csv:3: has 3 fields"):
        conseval.read_items(b"query,response\nq,r\nq,r,x\n", "items.csv", criteria=["coherence"])


def test_dhp_items_name_the_bad_line():
    from services import dhp

    with pytest.raises(InputError, match=r"d.jsonl:1: each line must be a JSON object"):
        dhp.parse_items_upload("d.jsonl", b'"text"\n')


def test_cli_evaluate_names_the_bad_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    path = tmp_path / "pairs.csv"
    path.write_text("id,reference,candidate\n1,a,b\n2,a\n", encoding="utf-8")
    code = cli.main(["evaluate", "--input", str(path), "--output", str(tmp_path / "o.jsonl"), "--method", "evidence"])
    assert code == 0, capsys.readouterr().err  # the readable row is evaluated; the bad one is reported
    lines = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert lines[-1]["id"] == "3" and lines[-1]["error"] == "row 3: has 2 fields but the header has 3"
    assert "1 row(s) cannot be read" in capsys.readouterr().err


def test_ratings_cli_names_the_line_of_a_bad_value_after_a_multi_line_cell(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text('unit,rater,value\n"unit\none",a,2\n"unit\none",b,high\n', encoding="utf-8")
    assert alpha.main(["alpha", "--input", str(path), "--level", "interval"]) == 2
    assert ":4: value 'high' is not a number" in capsys.readouterr().err
    path.write_text("unit,rater,value\n1,a,2,9\n", encoding="utf-8")
    assert alpha.main(["alpha", "--input", str(path), "--level", "nominal"]) == 2
    assert "r.csv:2: has 4 fields but the header has 3" in capsys.readouterr().err
    path.write_bytes("unit,rater,value\n1,a,caf\u00e9\n".encode("latin-1"))
    assert alpha.main(["alpha", "--input", str(path), "--level", "nominal"]) == 2
    assert "r.csv: not UTF-8 text" in capsys.readouterr().err


def test_dhp_scores_cli_names_the_line_of_a_bad_score(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text(
        'item_id,perturbation,level,metric,original,perturbed\n"a\nb",typo,minor,F,5,4\nc,typo,minor,F,5,x\n',
        encoding="utf-8",
    )
    assert cli.main(["dhp", "stats", "--scores", str(path), "--output", str(tmp_path / "o.json")]) == 2
    assert "s.csv:4: perturbed score 'x' is not a number" in capsys.readouterr().err


def test_a_survey_refusal_is_an_input_error():
    assert issubclass(SurveyError, InputError) and issubclass(InputError, ValueError)
