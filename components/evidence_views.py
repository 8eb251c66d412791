"""The offline evidence checker's verdicts ahead of a weak model's: what a run by the embedded demo model leads with."""

from __future__ import annotations

import streamlit as st

from components.dcr_views import colored_text_html
from services.dcr import Evaluation, evidence
from services.dcr.evidence import SentenceEvidence

CHECKER_TITLE = "Offline evidence checker (no model)"
DEMO_TITLE = "Demo model"


def verdict_counts(ev: Evaluation) -> str:
    """'2 consistent · 1 inconsistent · 0 unknown'."""
    n = {v: sum(s.verdict == v for s in ev.sentences) for v in ("consistent", "inconsistent", "unknown")}
    return " · ".join(f"{k} {v}" for v, k in n.items())


def _column(title: str, caption: str, ev: Evaluation) -> None:
    st.markdown(f"**{title}**")
    st.caption(caption)
    z = ev.score.z_hat if ev.score is not None else None
    st.metric(f"Score Ẑ · {title}", "n/a" if z is None else f"{z:.3f}", help=verdict_counts(ev))
    st.markdown(colored_text_html(ev), unsafe_allow_html=True)


def render_checker_lead(model_ev: Evaluation, found: list[SentenceEvidence], noun: str = "reference") -> None:
    """The checker's verdicts first, the demo model's beside them, each labelled; hover a sentence for why."""
    if not found:
        return
    checker_ev = evidence.to_evaluation(found)
    with st.container(border=True):
        left, right = st.columns(2)
        with left:
            _column(
                CHECKER_TITLE,
                f"Checks each sentence against the {noun}: new numbers, names and facts, contradictions "
                f"({evidence.mode_of(found)}). The more reliable signal here.",
                checker_ev,
            )
        with right:
            _column(
                DEMO_TITLE,
                "The small embedded model judges close to chance; read its verdicts as a demonstration.",
                model_ev,
            )
