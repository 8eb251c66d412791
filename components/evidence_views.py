"""The offline evidence checker's verdicts ahead of a weak model's: what a run by the embedded demo model leads with."""

from __future__ import annotations

import pandas as pd
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


def render_checker_calibration(found: list[SentenceEvidence]) -> None:
    """The checker's calibrated probability that the summary is consistent, and the reliability diagram of its
    probabilities in cross-validation (from the shipped calibration)."""
    from services.dcr.evidence import calibration
    from services.figures.calibration import make_reliability_figure

    if not found:
        return
    cal = calibration.shipped()
    p = cal.summary_probability([se.support for se in found])
    undecided = sum(se.abstain_reason is not None for se in found)
    st.metric(
        "Probability the summary is consistent",
        "n/a" if p is None else f"{p:.2f}",
        help="The checker's calibrated probability that every sentence is supported (cross-validated on "
        "QAGS-CNN/DM; see the reliability diagram below).",
    )
    if undecided:
        reworded = any("reworded too freely" in (se.abstain_reason or "") for se in found)
        lean = (
            " It was fitted on summaries that keep the reference's wording: for this freely reworded one the "
            "probability is a lean, not a verdict."
            if reworded
            else ""
        )
        st.caption(f"The checker leaves {undecided} of {len(found)} sentence(s) undecided; each card says why.{lean}")
    cv = cal.info.get("cross_validated", {})
    with st.expander("How sure is the checker? (reliability)", icon=":material/insights:"):
        for key, title in (("sentence", "per sentence"), ("summary_qags", "per summary")):
            d = cv.get(key)
            if not d:
                continue
            fig = make_reliability_figure(pd.DataFrame(d["bins"]), ece=d["ece"], n=d["n"])
            fig.update_layout(title_text=f"Reliability {title}")
            st.plotly_chart(fig, key=f"ev_reliability_{key}", config={"displayModeBar": False})
        fitted = cal.info.get("fitted", {})
        st.caption(
            f"Cross-validated, 5 folds by article, on {fitted.get('data', 'QAGS-CNN/DM')}; fitted "
            f"{fitted.get('date', '')} on {fitted.get('machine', '')} by {fitted.get('script', '')}. Points on the "
            "diagonal are calibrated; bars are 95% Wilson intervals."
        )
