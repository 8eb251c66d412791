"""Streamlit rendering of the factual-inconsistency methods: one method's details, and a comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from services.figures import nli as nf
from services.text import split_sentences

_TEXT_COL = {"width": "large"}


def _verdict_color(value: object) -> str:
    text = str(value)
    if text.startswith("✗"):
        return "color: #d13c3c; font-weight: 600"
    if text.startswith("✓"):
        return "color: #2e9d5b"
    if text.startswith("?"):
        return "color: #8a94a6; font-style: italic"
    return ""


def render_method_detail(record: dict[str, Any], *, key: str) -> None:
    """What one method saw and said: Summ-NLI's reasoning, Sent-NLI's windows, QG-QA's pairs, and context."""
    method = record["method"]
    if method == "summ-nli":
        s = record.get("summary") or {}
        if s.get("error"):
            st.error(f"Parse failure: {s['error']}", icon=":material/report:")
        else:
            st.markdown(f"**Judgement:** {nf.VERDICT_MARK.get(s.get('label'))}")
            st.markdown(f"**Reasoning:** {s.get('reasoning') or '—'}")
    elif method == "sent-nli":
        df = nf.windows_frame(record)
        st.dataframe(
            df.style.map(_verdict_color, subset=["judgement"]),
            hide_index=True,
            width="stretch",
            key=f"{key}_win",
            column_config={
                "reasoning": st.column_config.TextColumn(width="large"),
                "sentences": st.column_config.TextColumn(width="medium"),
                "window": st.column_config.TextColumn(width="small"),
            },
        )
    elif method == "qg-qa":
        df = nf.qa_frame(record)
        if df.empty:
            st.info("No question was generated.")
        else:
            st.dataframe(
                df.style.map(_verdict_color, subset=["judgement"]),
                hide_index=True,
                width="stretch",
                key=f"{key}_qa",
                column_config={
                    "question": st.column_config.TextColumn(width="medium"),
                    "reasoning": st.column_config.TextColumn(width="medium"),
                    "window": st.column_config.NumberColumn(width="small"),
                },
            )
    else:
        rows = record.get("sentences") or []
        for r in rows:
            st.markdown(
                f"**#{int(r['index']) + 1}** {nf.VERDICT_MARK.get(r.get('verdict'), '? no verdict')} — "
                f"{r.get('reason') or r.get('error') or ''}"
            )
    if record.get("n_failed"):
        st.warning(
            f"{record['n_failed']} of {record.get('n_units', 0)} unit(s) could not be read (no Judgement line, no "
            "questions, or a question answered twice). They count as no verdict, never as a guess.",
            icon=":material/report:",
        )
    used = nf.used_context(record)
    if used:
        with st.expander(f"Document sentences used ({len(used)} unit(s) over the budget)", icon=":material/article:"):
            st.caption(
                "The document exceeded the token budget, so each unit saw only the sentences with the highest "
                "ROUGE-1 + ROUGE-2 recall towards it (Appendix B)."
            )
            for unit, indices, sents in used:
                st.markdown(f"**{unit}** · sentences {', '.join(str(i + 1) for i in indices)}")
                for i, s in zip(indices, sents, strict=True):
                    st.caption(f"{i + 1}. {s}")


def render_comparison(
    summary: str,
    records: Sequence[dict[str, Any]],
    usages: Sequence[dict[str, Any]],
    run_ids: Sequence[int],
    *,
    key: str = "cmp",
) -> None:
    """The methods' verdicts side by side, sentence by sentence, then each method's details and cost."""
    over = nf.overview_frame(records, usages)
    over.insert(0, "run", list(run_ids))
    st.markdown("##### Verdicts on the whole summary")
    st.dataframe(
        over.style.map(_verdict_color, subset=["verdict"]),
        hide_index=True,
        width="stretch",
        key=f"{key}_over",
        column_config={
            "score": st.column_config.ProgressColumn(
                min_value=0, max_value=1, format="%.2f", help="Share of sentences / windows / pairs judged consistent"
            )
        },
    )
    st.markdown("##### Sentence by sentence")
    sents = split_sentences(summary)
    table = nf.sentences_frame(sents, records)
    methods = [c for c in table.columns if c not in ("#", "sentence")]
    st.dataframe(
        table.style.map(_verdict_color, subset=methods),
        hide_index=True,
        width="stretch",
        key=f"{key}_sent",
        column_config={"sentence": st.column_config.TextColumn(width="large")},
    )
    if len(records) == 1:  # one run: its details, no tabs and no cost chart of one bar
        st.markdown(f"##### What {nf.method_name(records[0]['method'], records[0].get('window'))} said")
        render_method_detail(records[0], key=f"{key}_{run_ids[0]}")
        return
    st.markdown("##### What each method said")
    tabs = st.tabs([nf.method_name(r["method"], r.get("window")) for r in records])
    for tab, rec, rid in zip(tabs, records, run_ids, strict=True):
        with tab:
            render_method_detail(rec, key=f"{key}_{rid}")
    chart, note = st.columns([3, 2], vertical_alignment="center")
    chart.plotly_chart(
        nf.make_method_cost_figure(over), width="stretch", config={"displayModeBar": False}, key=f"{key}_cost"
    )
    note.caption(
        "Calls count requests sent to the model (cache hits cost none); tokens are prompt + completion. "
        "Sent-NLI asks once per window and QG-QA once per window plus once per question: finer verdicts cost more."
    )
