"""CSV exports that a spreadsheet cannot run: every CSV the app, the pages and the CLI write goes through here.

A cell that begins with =, +, -, @, a tab or a carriage return is a formula to Excel, LibreOffice and
Google Sheets (CSV injection). As OWASP recommends, such text cells get a leading single quote, which the
spreadsheet shows as text; numbers, including negative ones, stay numbers.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _formula_like(value: str) -> bool:
    """Text that is a formula, or one behind single quotes: the quote `neutralise` adds must be told apart
    from quotes the text had, so text such as '=x gets one more and comes back as it was."""
    return value.lstrip("'").startswith(FORMULA_STARTS)


def neutralise(value: Any) -> Any:
    """The value, with a leading single quote if it is text a spreadsheet would read as a formula (or such
    text already behind quotes of its own)."""
    if isinstance(value, str) and _formula_like(value):
        return "'" + value
    return value


def restore(value: Any) -> Any:
    """A cell read back from one of these CSVs, without the quote `neutralise` put before it."""
    if isinstance(value, str) and value.startswith("'") and _formula_like(value):
        return value[1:]
    return value


def safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of the table with every text cell (and column name) neutralised; numeric columns untouched."""
    out = df.rename(columns=neutralise)
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col].dtype):
            out[col] = out[col].map(neutralise)
    return out


def frame_csv(df: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """The table as CSV (without the index), neutralised; written to `path` if given, else returned."""
    return safe_frame(df).to_csv(path, index=False)


def records_csv(records: Iterable[Mapping[str, Any]], fieldnames: list[str]) -> str:
    """Rows of dicts as CSV with a header, neutralised."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=[neutralise(f) for f in fieldnames])
    w.writeheader()
    w.writerows({neutralise(k): neutralise(v) for k, v in r.items()} for r in records)
    return buf.getvalue()
