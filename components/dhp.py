"""DHP views: text diffs, personal links and result tables for pages/10_DHP.py and
pages/11_Survey.py. Figures live in components/dhp_figures.py (pure)."""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from services.text import diff_html

LEVEL_NAMES = {"character": "Character", "word": "Word", "sentence": "Sentence", "original": "Original"}


def render_diff(original: str, perturbed: str | None, *, detail: str = "", error: str | None = None) -> None:
    """The perturbed text as a word diff of its original: removed words struck through, added highlighted."""
    if error or perturbed is None:
        st.warning(f"No perturbed text: {error or 'not made yet'}", icon=":material/info:")
        return
    st.html(f'<div class="cs-text">{diff_html(original, perturbed)}</div>')
    if detail:
        st.caption(detail if len(detail) < 240 else detail[:240] + "…")


def render_text(text: str) -> None:
    st.html(f'<div class="cs-text">{html.escape(text)}</div>')


def personal_link(token: str, page: str = "Survey") -> str:
    """The absolute link of a personal page (falls back to a relative one without a browser)."""
    try:
        url = st.context.url or ""
    except Exception:  # no browser context (a headless test run)
        url = ""
    root = url.split("?", 1)[0].rsplit("/", 1)[0] if url else ""
    return f"{root}/{page}?token={token}"


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None or pd.isna(x):
        return "—"
    return f"{x:.{digits}f}"


def fmt_p(p: float | None) -> str:
    if p is None or pd.isna(p):
        return "—"
    return f"{p:.2e}" if p < 0.001 else f"{p:.3f}"


def result_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The per-perturbation table, rounded for reading."""
    out = frame.copy()
    for c in ("mean original", "mean perturbed", "D", "D_paper", "D_EW", "weight"):
        if c in out:
            out[c] = out[c].map(lambda v: None if v is None or pd.isna(v) else round(float(v), 2))
    for c in ("p", "p (HMP)", "p (HMP, EW)", "p (paper)"):
        if c in out:
            out[c] = out[c].map(fmt_p)
    return out


# The embedded demo model scored one text in 2-13 s (median about 7 s) on a shared 2-core machine.
DEMO_SECONDS_PER_SCORE = 5.0


def duration(seconds: float) -> str:
    """A rough duration for an estimate: "about 40 s", "about 12 min", "about 2.5 h"."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"
