"""Stakeholder reports: one builder module per kind, a typed Report, one self-contained HTML file, share links.

Each kind is a module here with `build(engine, ref_id, **options) -> Report`: run (a DCR run), batch (a batch
with its meta-evaluation), nli (methods compared over one dataset), conseval (a ConsEval study), dhp (a DHP
benchmark run) and survey (a DHP expert survey). `to_html` renders a Report through the Jinja2 templates in
templates/ (autoescape on), with plotly.js inlined and every known secret scrubbed.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from sqlalchemy.engine import Engine

from services.errors import InputError
from services.reports.model import (
    KIND_LABELS,
    Example,
    ExampleRewrite,
    ExampleRound,
    ExampleSentence,
    FigureSpec,
    Headline,
    Report,
    Table,
)
from services.reports.render import example_css, example_html, known_secrets, message_html, scrub, to_html
from services.reports.shares import (
    create_share,
    find_share,
    list_shares,
    new_share,
    revoke,
    revoke_share,
    share_by_token,
    share_link,
    share_problem,
    shares,
)

# Report kind -> its builder module (imported on first use: a page that only lists shares loads none of them).
BUILDERS: dict[str, str] = {kind: f"services.reports.{kind}" for kind in KIND_LABELS}


def build(engine: Engine, kind: str, ref_id: int, **options: Any) -> Report:
    """The report of `kind` for `ref_id`; InputError when the kind is unknown or the subject does not exist."""
    module = BUILDERS.get(kind)
    if module is None:
        raise InputError(f"No report for {kind!r} in this version; available: {', '.join(sorted(BUILDERS))}.")
    return import_module(module).build(engine, ref_id, **options)


__all__ = [
    "BUILDERS",
    "KIND_LABELS",
    "Example",
    "ExampleRewrite",
    "ExampleRound",
    "ExampleSentence",
    "FigureSpec",
    "Headline",
    "Report",
    "Table",
    "build",
    "create_share",
    "example_css",
    "example_html",
    "find_share",
    "known_secrets",
    "list_shares",
    "message_html",
    "new_share",
    "revoke",
    "revoke_share",
    "scrub",
    "share_by_token",
    "share_link",
    "share_problem",
    "shares",
    "to_html",
]
