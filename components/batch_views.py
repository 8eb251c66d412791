"""Batch views: a failed item's raw model answers, and the sentences where the judge and the evidence disagree."""

from __future__ import annotations

import streamlit as st

from services.jobs.batches import FailedItem


def render_failed_answers(failed: list[FailedItem], *, key: str) -> None:
    """Pick a failed item and read why it failed and what the model answered, as written."""
    if not failed:
        return
    labels = {f.item: f"item {f.item}" + (f" · {f.external_id}" if f.external_id else "") for f in failed}
    chosen = st.selectbox("Read the model's answer for", list(labels), format_func=labels.get, key=key)
    item = next(f for f in failed if f.item == chosen)
    if item.error:
        st.caption(f"Why it failed: {item.error}")
    if not item.answers:
        st.caption(
            "No answer was recorded for this item (it failed before the model answered, or before answers "
            "were kept with failed items)."
        )
    for i, a in enumerate(item.answers, 1):
        head = f"Call {i} · {a.get('stage', '?')}" + (" · from the cache" if a.get("cached") else "")
        st.markdown(f"**{head}**" + (f" — :red[{a['error']}]" if a.get("error") else ""))
        st.code(a.get("raw") or "(empty answer)", language=None, wrap_lines=True)
