"""The typed stakeholder report: headlines, figures, tables and worked examples, independent of how it is drawn."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from pydantic import BaseModel, Field

from db.models import REPORT_KINDS

Kind = Literal["run", "batch", "nli", "conseval", "dhp", "survey", "judges", "compare"]
KIND_LABELS: dict[str, str] = {
    "run": "Evaluation run",
    "batch": "Batch and meta-evaluation",
    "nli": "NLI comparison",
    "conseval": "ConsEval study",
    "dhp": "DHP benchmark",
    "survey": "Expert survey",
    "judges": "Judges compared",
    "compare": "Systems compared",
}
assert set(KIND_LABELS) == set(REPORT_KINDS)


# -- the typed report ------------------------------------------------------------------------------
class Headline(BaseModel):
    """A headline number with its 95% interval (when there is one)."""

    label: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    digits: int = 3
    percent: bool = False
    note: str = ""

    def value_text(self) -> str:
        """'0.612', '71.3%' or '—'."""
        return fmt_number(self.value, self.digits, self.percent)

    def interval_text(self) -> str:
        """'[0.540, 0.671]', or '' without an interval."""
        if not (_finite(self.ci_low) and _finite(self.ci_high) and _finite(self.value)):
            return ""
        low, high = (fmt_number(x, self.digits, self.percent) for x in (self.ci_low, self.ci_high))
        return f"[{low}, {high}]"

    def text(self) -> str:
        """'0.612 [0.540, 0.671]', '71.3%' or '—'."""
        return " ".join(x for x in (self.value_text(), self.interval_text()) if x)


class Table(BaseModel):
    """A table: column names and rows of plain values."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""

    @classmethod
    def from_frame(cls, title: str, df: pd.DataFrame, note: str = "", *, index: bool = False) -> Table:
        """A table from a DataFrame (NaN as empty, numpy scalars as Python values)."""
        d = df.reset_index() if index else df
        rows = [[_plain(v) for v in r] for r in d.itertuples(index=False, name=None)]
        return cls(title=title, columns=[str(c) for c in d.columns], rows=rows, note=note)


class FigureSpec(BaseModel):
    """An interactive chart: the plotly figure as JSON, with a caption."""

    title: str
    figure: dict[str, Any]
    caption: str = ""

    @classmethod
    def of(cls, title: str, fig: go.Figure, caption: str = "") -> FigureSpec:
        return cls(title=title, figure=json.loads(pio.to_json(fig, validate=False)), caption=caption)

    def to_figure(self) -> go.Figure:
        return go.Figure(self.figure)


Verdict = Literal["consistent", "inconsistent", "unknown"]


class ExampleSentence(BaseModel):
    text: str
    verdict: str = "unknown"
    reason: str = ""


class ExampleRewrite(BaseModel):
    index: int
    before: str
    after: str
    reason: str = ""
    accepted: bool = True
    left_out: str = ""  # why the rewrite is not in the delivered text ("" when it is)


class ExampleRound(BaseModel):
    """One round of a worked example: its score, sentence verdicts and the rewrites proposed after it."""

    label: str
    score: float | None = None
    sentences: list[ExampleSentence] = Field(default_factory=list)
    rewrites: list[ExampleRewrite] = Field(default_factory=list)


class Example(BaseModel):
    """A worked example: labelled texts (document, summary, judgement...) and, for DCR, its rounds."""

    title: str
    fields: list[tuple[str, str]] = Field(default_factory=list)
    rounds: list[ExampleRound] = Field(default_factory=list)


class Report(BaseModel):
    """Everything a stakeholder report shows, independent of how it is drawn (HTML file or the app)."""

    title: str
    kind: str
    ref_id: int
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    summary: str = ""
    configuration: dict[str, Any] = Field(default_factory=dict)  # model, prompts and versions, dataset and hash...
    headlines: list[Headline] = Field(default_factory=list)
    figures: list[FigureSpec] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    examples: list[Example] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # what the headlines' brackets are (docs/meta-evaluation.md, "Intervals at any size")
    interval_note: str = "Brackets: 95% interval (bootstrap; AUROC: DeLong; correlations over 5,000 pairs: jackknife)."

    @property
    def file_name(self) -> str:
        return f"{self.kind}-{self.ref_id}-report.html"


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(float(x))


def fmt_number(x: Any, digits: int = 3, percent: bool = False) -> str:
    """'0.612', '71.3%' or '—' when missing."""
    if not _finite(x):
        return "—"
    return f"{float(x):.1%}" if percent else f"{float(x):.{digits}f}"


def _plain(v: Any) -> Any:
    if hasattr(v, "item") and not isinstance(v, str | bytes):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            pass
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, int | float | str | bool):
        return v
    return str(v)
