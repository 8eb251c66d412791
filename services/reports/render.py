"""A report as ONE self-contained HTML file, rendered by Jinja2 templates with autoescape on.

plotly.js is inlined once (no CDN, so the file opens without a network), every piece of user text is escaped by
the templates, and every secret the settings know of is scrubbed before the file is returned.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable
from datetime import UTC
from functools import cache
from pathlib import Path
from typing import Any

import plotly.io as pio
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from plotly.offline import get_plotlyjs

from db.redact import REDACTED, is_secret_name, url_secrets
from services.config import get_settings
from services.reports.model import KIND_LABELS, Example, FigureSpec, Report, fmt_number
from services.text import diff_html

TEMPLATES = Path(__file__).with_name("templates")
MIN_SECRET_LEN = 6  # shorter values ("0", "true") would blank out ordinary text


@cache
def environment() -> Environment:
    """The Jinja2 environment of the report templates: autoescape everywhere, undefined names fail loudly."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True
    )
    env.filters["num"] = fmt_number
    env.globals["diff"] = lambda before, after: Markup(diff_html(before, after))  # diff_html escapes the words
    return env


def example_css() -> str:
    """The class-scoped styles of worked examples (the app shows examples with them too)."""
    return (TEMPLATES / "example.css").read_text(encoding="utf-8")


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
    return sorted({v for v in found if v and len(v) >= MIN_SECRET_LEN}, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] | None = None) -> str:
    """The text with every known secret replaced by [redacted] (also in its HTML- and JSON-escaped forms)."""
    for secret in known_secrets() if secrets is None else secrets:
        if not secret or len(secret) < MIN_SECRET_LEN:
            continue
        for form in {secret, html.escape(secret), str(escape(secret)), json.dumps(secret)[1:-1]}:
            text = text.replace(form, REDACTED)
    return text


def scrub_report(report: Report, secrets: Iterable[str] | None = None) -> Report:
    """A copy of the report with secrets removed from every string in it."""
    values = list(known_secrets() if secrets is None else secrets)
    if not values:
        return report
    return Report.model_validate(json.loads(scrub(report.model_dump_json(), values)))


# -- HTML ------------------------------------------------------------------------------------------
def config_rows(cfg: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """The configuration as (key, value) rows: flat dicts on one line, nested ones with a 'a · b' key."""
    rows: list[tuple[str, str]] = []
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and all(not isinstance(x, dict | list) for x in v.values()):
            rows.append((key, ", ".join(f"{a}: {b}" for a, b in v.items())))
        elif isinstance(v, dict):
            rows.extend(config_rows(v, prefix=f"{key} · "))
        elif isinstance(v, list):
            parts = [", ".join(f"{a}: {b}" for a, b in x.items()) if isinstance(x, dict) else str(x) for x in v]
            rows.append((key, "\n".join(parts) if parts else "—"))
        else:
            rows.append((key, "—" if v is None or v == "" else str(v)))
    return rows


def example_html(ex: Example) -> str:
    """A worked example as HTML (its texts, sentence verdicts and highlighted rewrites), user text escaped."""
    return environment().get_template("example.html.j2").render(ex=ex)


def _figure_div(spec: FigureSpec, i: int) -> dict[str, Any]:
    fig = spec.to_figure()
    height = fig.layout.height or 420
    div = pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        div_id=f"fig-{i}",
        default_height=f"{int(height)}px",
        config={"displaylogo": False, "responsive": True},
    )
    return {"title": spec.title, "caption": spec.caption, "div": Markup(div)}  # plotly's own markup and JSON


def to_html(report: Report, *, secrets: Iterable[str] | None = None) -> str:
    """The report as one self-contained HTML page (plotly.js inlined once; no request leaves the file)."""
    values = list(known_secrets() if secrets is None else secrets)
    rep = scrub_report(report, values)
    page = (
        environment()
        .get_template("report.html.j2")
        .render(
            r=rep,
            kind_label=KIND_LABELS.get(rep.kind, rep.kind),
            made=rep.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            has_intervals=any(h.interval_text() for h in rep.headlines),
            figures=[_figure_div(f, i) for i, f in enumerate(rep.figures)],
            config_rows=config_rows(rep.configuration),
            plotly_js=Markup(get_plotlyjs()) if rep.figures else "",
        )
    )
    return scrub(page, values)


def message_html(title: str, message: str) -> str:
    """A minimal page with one message (a report that cannot be built), escaped."""
    return environment().get_template("message.html.j2").render(title=title, message=message)
