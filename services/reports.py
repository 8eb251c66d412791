"""Stakeholder reports: a typed Report, one self-contained offline HTML file, and read-only share links.

A report is built by one builder per kind (components/report_builders.py: a DCR run, a batch with its
meta-evaluation, an NLI comparison, a ConsEval study, a DHP benchmark, a survey) and written here as ONE
HTML file: plotly.js inlined once (no CDN, so it opens without a network), every piece of user text
escaped, and every secret the settings know of scrubbed before the file is returned.
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs
from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.engine import get_session
from db.models import REPORT_KINDS, ReportShare, ReportShareCreate, ReportSharePublic, utcnow
from services.config import get_settings
from services.errors import InputError
from services.redact import REDACTED, is_secret_name, url_secrets
from services.text import diff_html

log = logging.getLogger(__name__)

Kind = Literal["run", "batch", "nli", "conseval", "dhp", "survey"]
KIND_LABELS: dict[str, str] = {
    "run": "Evaluation run",
    "batch": "Batch and meta-evaluation",
    "nli": "NLI comparison",
    "conseval": "ConsEval study",
    "dhp": "DHP benchmark",
    "survey": "Expert survey",
}
assert set(KIND_LABELS) == set(REPORT_KINDS)
MIN_SECRET_LEN = 6  # shorter values ("0", "true") would blank out ordinary text


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
        return _num(self.value, self.digits, self.percent)

    def interval_text(self) -> str:
        """'[0.540, 0.671]', or '' without an interval."""
        if not (_finite(self.ci_low) and _finite(self.ci_high) and _finite(self.value)):
            return ""
        return f"[{_num(self.ci_low, self.digits, self.percent)}, {_num(self.ci_high, self.digits, self.percent)}]"

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

    @property
    def file_name(self) -> str:
        return f"{self.kind}-{self.ref_id}-report.html"


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(float(x))


def _num(x: Any, digits: int = 3, percent: bool = False) -> str:
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


# -- secrets ----------------------------------------------------------------------------------------
def known_secrets() -> list[str]:
    """Every secret value this process knows of: the model API key (settings, secrets file, environment),
    secret-named environment variables, and passwords in the database or model URLs."""
    s = get_settings()
    found: list[str] = []
    if s.llm_api_key is not None:
        found.append(s.llm_api_key.get_secret_value())
    for name, value in os.environ.items():
        if is_secret_name(name):
            found.append(value)
    for url in (s.database_url, s.llm_base_url):
        found += url_secrets(url)
    out = sorted({v for v in found if v and len(v) >= MIN_SECRET_LEN}, key=len, reverse=True)
    return out


def scrub(text: str, secrets: Iterable[str] | None = None) -> str:
    """The text with every known secret replaced by [redacted] (also in its HTML- and JSON-escaped forms)."""
    for secret in known_secrets() if secrets is None else secrets:
        if not secret or len(secret) < MIN_SECRET_LEN:
            continue
        for form in {secret, html.escape(secret), json.dumps(secret)[1:-1]}:
            text = text.replace(form, REDACTED)
    return text


def scrub_report(report: Report, secrets: Iterable[str] | None = None) -> Report:
    """A copy of the report with secrets removed from every string in it."""
    values = list(known_secrets() if secrets is None else secrets)
    if not values:
        return report
    data = json.loads(scrub(report.model_dump_json(), values))
    return Report.model_validate(data)


# -- HTML ------------------------------------------------------------------------------------------
# Class-scoped rules only: the app shows worked examples with these too, without restyling its own page.
EXAMPLE_CSS = """
.ex{--ok:#2e9d5b;--bad:#d13c3c;--unk:#8a94a6;--soft:#4a5363;--line:#e3e7ee;border:1px solid var(--line);
  border-radius:8px;padding:10px 14px;margin:12px 0;line-height:1.5}
.ex h3{font-size:1.02rem;margin:14px 0 6px}
.ex .field{margin:6px 0} .ex .field .k{font-size:.78rem;font-weight:600;text-transform:uppercase;color:var(--soft)}
.ex .field .t{white-space:pre-wrap;background:#fafbfc;border-radius:4px;padding:6px 8px;max-height:260px;overflow:auto}
.ex .s{display:block;border-left:5px solid var(--unk);padding:4px 10px;margin:4px 0;background:#f6f7f9;
  border-radius:4px}
.ex .s.consistent{border-left-color:var(--ok);background:#f3fbf6}
.ex .s.inconsistent{border-left-color:var(--bad);background:#fdf4f4}
.ex .chip{display:inline-block;font-size:.72rem;font-weight:600;padding:0 7px;border-radius:9px;color:#fff;
  background:var(--unk);margin-right:6px} .ex .chip.consistent{background:var(--ok)}
.ex .chip.inconsistent{background:var(--bad)}
.ex .why{color:var(--soft);font-size:.86rem}
.ex .rw{margin:6px 0;padding:6px 10px;border:1px dashed #c9d1dc;border-radius:6px}
.ex del.cs-del{background:#fbdada;color:#8b1e1e} .ex ins.cs-ins{background:#d9f2e3;color:#12532f;
  text-decoration:none;font-weight:500}
"""
CSS = (
    """
:root{--ink:#1f2430;--soft:#4a5363;--line:#e3e7ee}
*{box-sizing:border-box}
body{font-family:-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);margin:0;
  background:#f6f7f9;line-height:1.5}
main{max-width:1100px;margin:0 auto;padding:28px 28px 60px;background:#fff;min-height:100vh}
h1{font-size:1.7rem;margin:0 0 4px} h2{font-size:1.25rem;margin:34px 0 10px;border-bottom:1px solid var(--line);
  padding-bottom:4px} h3{font-size:1.05rem;margin:20px 0 6px}
.sub{color:var(--soft);margin:0 0 14px}
.kpis{display:flex;flex-wrap:wrap;gap:12px;margin:10px 0}
.kpi{border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:190px;flex:1 1 190px}
.kpi .l{font-size:.82rem;color:var(--soft)} .kpi .v{font-size:1.35rem;font-weight:600}
.kpi .n{font-size:.78rem;color:var(--soft)}
table{border-collapse:collapse;width:100%;font-size:.88rem;margin:6px 0 4px}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f6;font-weight:600} td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:var(--soft);font-size:.85rem;margin:4px 0}
.fig{border:1px solid var(--line);border-radius:8px;padding:6px;margin:10px 0}
.cfg td:first-child{width:220px;color:var(--soft)}
footer{margin-top:40px;color:var(--soft);font-size:.8rem}
"""
    + EXAMPLE_CSS
)


def esc(text: Any) -> str:
    """User text, escaped for HTML."""
    return html.escape("" if text is None else str(text), quote=True)


def _cell(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return f"<td>{'' if v is None else esc(v)}</td>"
    if isinstance(v, int):
        return f'<td class="num">{v:,}</td>'
    if isinstance(v, float):
        return f'<td class="num">{_num(v, 3)}</td>'
    return f"<td>{esc(v)}</td>"


def table_html(t: Table) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{esc(t.note)}</p>' if t.note else ""
    empty = "" if t.rows else '<p class="note">No rows.</p>'
    return f"<h3>{esc(t.title)}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{empty}{note}"


def headlines_html(items: Sequence[Headline]) -> str:
    cards = []
    for h in items:
        n = f'<div class="n">n = {h.n:,}</div>' if h.n is not None else ""
        note = f'<div class="n">{esc(h.note)}</div>' if h.note else ""
        cards.append(
            f'<div class="kpi"><div class="l">{esc(h.label)}</div><div class="v">{esc(h.text())}</div>{n}{note}</div>'
        )
    return '<div class="kpis">' + "".join(cards) + "</div>"


def _config_rows(cfg: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and all(not isinstance(x, dict | list) for x in v.values()):
            rows.append((key, ", ".join(f"{a}: {b}" for a, b in v.items())))
        elif isinstance(v, dict):
            rows.extend(_config_rows(v, prefix=f"{key} · "))
        elif isinstance(v, list):
            parts = [", ".join(f"{a}: {b}" for a, b in x.items()) if isinstance(x, dict) else str(x) for x in v]
            rows.append((key, "\n".join(parts) if parts else "—"))
        else:
            rows.append((key, "—" if v is None or v == "" else str(v)))
    return rows


def config_html(cfg: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr><td>{esc(k)}</td><td style="white-space:pre-wrap">{esc(v)}</td></tr>' for k, v in _config_rows(cfg)
    )
    return f'<table class="cfg"><tbody>{rows}</tbody></table>'


def example_html(ex: Example) -> str:
    """A worked example: its texts, then each round's sentence verdicts and the rewrites, changes highlighted."""
    parts = [f'<div class="ex"><h3>{esc(ex.title)}</h3>']
    for k, v in ex.fields:
        parts.append(f'<div class="field"><div class="k">{esc(k)}</div><div class="t">{esc(v)}</div></div>')
    for r in ex.rounds:
        score = f" · Ẑ = {_num(r.score)}" if r.score is not None else ""
        parts.append(f"<h3>{esc(r.label)}{esc(score)}</h3>")
        for i, s in enumerate(r.sentences, 1):
            v = s.verdict if s.verdict in ("consistent", "inconsistent") else "unknown"
            why = f'<div class="why">{esc(s.reason)}</div>' if s.reason else ""
            chip = f'<span class="chip {v}">{esc(v)}</span>'
            parts.append(f'<div class="s {v}">{chip}<b>#{i}</b> {esc(s.text)}{why}</div>')
        for w in r.rewrites:
            why = f'<div class="why">Why: {esc(w.reason)}</div>' if w.reason else ""
            change = diff_html(w.before, w.after) if w.before != w.after else f"<i>No change.</i> {esc(w.before)}"
            parts.append(f'<div class="rw"><b>Rewrite of sentence #{w.index + 1}</b><div>{change}</div>{why}</div>')
    parts.append("</div>")
    return "".join(parts)


def figure_html(spec: FigureSpec, i: int) -> str:
    fig = spec.to_figure()
    height = fig.layout.height or 420
    div = pio.to_html(
        fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{i}", default_height=f"{int(height)}px",
        config={"displaylogo": False, "responsive": True},
    )  # fmt: skip
    cap = f'<p class="note">{esc(spec.caption)}</p>' if spec.caption else ""
    return f'<div class="fig" data-title="{esc(spec.title)}">{div}{cap}</div>'


def to_html(report: Report, *, secrets: Iterable[str] | None = None) -> str:
    """The report as one self-contained HTML page (plotly.js inlined once; no request leaves the file)."""
    values = list(known_secrets() if secrets is None else secrets)
    rep = scrub_report(report, values)
    body = [f"<h1>{esc(rep.title)}</h1>"]
    made = rep.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body.append(f'<p class="sub">{esc(KIND_LABELS.get(rep.kind, rep.kind))} #{rep.ref_id} · made {made} '
                "by Consistency Studio</p>")  # fmt: skip
    if rep.summary:
        body.append(f"<p>{esc(rep.summary)}</p>")
    if rep.headlines:
        body.append("<h2>Headline numbers</h2>" + headlines_html(rep.headlines))
        if any(h.interval_text() for h in rep.headlines):
            body.append('<p class="note">Brackets: 95% bootstrap interval.</p>')
    for note in rep.notes:
        body.append(f'<p class="note">{esc(note)}</p>')
    if rep.figures:
        body.append("<h2>Charts</h2>")
        body.extend(figure_html(f, i) for i, f in enumerate(rep.figures))
    if rep.tables:
        body.append("<h2>Tables</h2>")
        body.extend(table_html(t) for t in rep.tables)
    if rep.examples:
        body.append("<h2>Worked examples</h2>")
        body.extend(example_html(e) for e in rep.examples)
    body.append("<h2>Configuration</h2>" + config_html(rep.configuration))
    body.append("<footer>Self-contained report: opens offline; charts are interactive (hover, zoom, PNG via the "
                "camera icon). No API key or other secret is included.</footer>")  # fmt: skip
    plotly_js = f'<script type="text/javascript">{get_plotlyjs()}</script>' if rep.figures else ""
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(rep.title)}</title><style>{CSS}</style>{plotly_js}</head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
    return scrub(page, values)


# -- share links ----------------------------------------------------------------------------------
def create_share(*, session: Session, data: ReportShareCreate) -> ReportSharePublic:
    """A new read-only token for one report."""
    if data.kind not in REPORT_KINDS:
        raise InputError(f"Unknown report kind {data.kind!r}; one of {', '.join(REPORT_KINDS)}.")
    row = ReportShare.model_validate(data)
    session.add(row)
    session.flush()
    return ReportSharePublic.model_validate(row)


def share_by_token(*, session: Session, token: str) -> ReportSharePublic | None:
    """The share with this token (revoked or not); None when there is none."""
    if not token or len(token) > 64:
        return None
    row = session.exec(select(ReportShare).where(ReportShare.token == token)).first()
    return ReportSharePublic.model_validate(row) if row else None


def list_shares(*, session: Session, include_revoked: bool = True) -> list[ReportSharePublic]:
    q = select(ReportShare).order_by(col(ReportShare.created_at).desc())
    if not include_revoked:
        q = q.where(col(ReportShare.revoked_at).is_(None))
    return [ReportSharePublic.model_validate(r) for r in session.exec(q).all()]


def revoke_share(*, session: Session, share_id: int) -> bool:
    """Revoke a share (idempotent); False when it does not exist."""
    row = session.get(ReportShare, share_id)
    if row is None:
        return False
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        session.add(row)
    return True


# Engine-level wrappers for pages and the CLI (which never hold a session).
def new_share(engine: Engine, kind: str, ref_id: int, title: str = "") -> ReportSharePublic:
    with get_session(engine) as session:
        return create_share(session=session, data=ReportShareCreate(kind=kind, ref_id=ref_id, title=title[:200]))


def find_share(engine: Engine, token: str) -> ReportSharePublic | None:
    with get_session(engine) as session:
        return share_by_token(session=session, token=token)


def shares(engine: Engine, *, include_revoked: bool = True) -> list[ReportSharePublic]:
    with get_session(engine) as session:
        return list_shares(session=session, include_revoked=include_revoked)


def revoke(engine: Engine, share_id: int) -> bool:
    with get_session(engine) as session:
        return revoke_share(session=session, share_id=share_id)


def share_problem(share: ReportSharePublic | None) -> str | None:
    """Why a share link cannot be shown (None: it can)."""
    if share is None:
        return "This share link is not valid: no report has this token. Ask whoever sent it for a new link."
    if share.revoked_at is not None:
        when = share.revoked_at.strftime("%Y-%m-%d %H:%M UTC")
        return f"This share link was revoked on {when}. Ask whoever sent it for a new link."
    return None
