"""CSV exports: text a spreadsheet would run as a formula is quoted (OWASP); numbers stay numbers."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from services.export import FORMULA_STARTS, frame_csv, neutralise, records_csv, restore

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ['=HYPERLINK("http://evil","x")', "+1+2", "-2+3", "@SUM(A1)", "\tTab", "\rCR"]


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("value", HOSTILE)
def test_a_formula_like_text_cell_gets_a_leading_quote_and_comes_back(value):
    assert neutralise(value) == "'" + value
    assert restore(neutralise(value)) == value


@pytest.mark.parametrize("value", ["'=1+1", "''=SUM(A1)", "'+1", "'-x", "'@me", "'quoted", "a'=b"])
def test_text_that_already_starts_with_a_quote_survives_export_and_import(value):
    """Text such as '=1+1 was written as is and read back without its quote: now it gets one more."""
    text = records_csv([{"note": value}], ["note"])
    (read,) = [restore(row["note"]) for row in csv.DictReader(io.StringIO(text))]
    assert read == value
    assert restore(neutralise(value)) == value


def test_plain_text_numbers_and_missing_values_are_left_alone():
    for v in ("plain", "", "a=b", "'quoted already", 3, -1.5, None):
        assert neutralise(v) == v


def test_a_table_keeps_negative_numbers_numeric_and_quotes_text_cells():
    df = pd.DataFrame(
        {"score": [-0.5, 1.0], "delta": [-3, 4], "error": ["=cmd|' /C calc'!A0", "fine"], "=header": ["-x", None]}
    )
    out = frame_csv(df)
    rows = cells(out)
    assert rows[0] == ["score", "delta", "error", "'=header"]
    assert rows[1] == ["-0.5", "-3", "'=cmd|' /C calc'!A0", "'-x"]
    back = pd.read_csv(io.StringIO(out))
    assert back["score"].tolist() == [-0.5, 1.0] and back["delta"].tolist() == [-3, 4]


def test_records_quote_keys_and_values():
    out = records_csv([{"note": "@import", "label": 0, "n": -1}], ["note", "label", "n"])
    assert cells(out) == [["note", "label", "n"], ["'@import", "0", "-1"]]


def test_every_csv_written_by_the_app_goes_through_the_export_helper():
    """to_csv, csv.writer and csv.DictWriter appear nowhere else in the app's code."""
    pattern = re.compile(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(")
    offenders = []
    for folder in ("services", "pages", "components", "clitools"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "export.py" and pattern.search(path.read_text()):
                offenders.append(str(path.relative_to(ROOT)))
    for path in (ROOT / "cli.py", ROOT / "app.py"):
        if pattern.search(path.read_text()):
            offenders.append(path.name)
    assert offenders == [], f"CSV written without services.export: {offenders}"
    assert set(FORMULA_STARTS) == {"=", "+", "-", "@", "\t", "\r"}


# -- the exports themselves --------------------------------------------------------------------------
def test_the_labels_csv_quotes_a_formula_note_and_imports_it_back_unchanged():
    from db.engine import make_engine
    from services import annotations as an
    from services.annotations import Target
    from tests.annotation_seed import make_dataset

    engine = make_engine("sqlite://")
    ds, items = make_dataset(engine, [["=1+1 is two.", "Fine."]])
    ada = an.create_annotator(engine, "@ada").id
    an.label_sentence(
        engine,
        annotator_id=ada,
        target=Target.item(items[0]),
        sentence_idx=0,
        label=0,
        note='=HYPERLINK("http://evil","x")',
    )
    data = an.export_labels(engine, ds, "csv").decode()
    row = dict(zip(*cells(data)[:2], strict=True))
    assert row["note"] == '\'=HYPERLINK("http://evil","x")' and row["annotator"] == "'@ada"
    assert row["sentence"] == "'=1+1 is two." and row["label"] == "0"
    other = make_engine("sqlite://")
    ds2, items2 = make_dataset(other, [["=1+1 is two.", "Fine."]])
    assert an.import_labels(other, ds2, data.encode(), "csv") == (1, [])
    (label,) = an.labels_for_item(other, items2[0])
    assert label.note == '=HYPERLINK("http://evil","x")'
    assert [a.name for a in an.list_annotators(other)] == ["@ada"]
    engine.dispose()
    other.dispose()


def test_the_batch_items_csv_quotes_formula_cells_and_keeps_scores_numeric(tmp_path):
    from sqlalchemy import update

    from db.engine import make_engine
    from db.models import BatchItem, DatasetItem
    from services.jobs import batches
    from tests.support.batches import EVAL, judge_backend, make_dataset

    class Fake:
        base_url = "http://127.0.0.1:9/v1"

    engine = make_engine(f"sqlite:///{tmp_path}/csv.db")
    ds = make_dataset(engine, 2)
    bid = batches.create_batch(engine, dataset_id=ds, backend=judge_backend(Fake()), cfg=EVAL)
    with engine.begin() as conn:
        conn.execute(update(DatasetItem).where(DatasetItem.idx == 0).values(external_id="=cmd|'/C calc'!A0"))
        conn.execute(update(BatchItem).values(status="failed", error="+bad answer", score=-0.25))
    rows = cells(frame_csv(batches.items_frame(engine, bid)))
    header, first = rows[0], dict(zip(rows[0], rows[1], strict=True))
    assert "external_id" in header
    assert first["external_id"] == "'=cmd|'/C calc'!A0" and first["error"] == "'+bad answer"
    assert first["score"] == "-0.25", "a number stays a number"
    engine.dispose()
