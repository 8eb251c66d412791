"""Batch views: a failed item's raw model answers, and the sentences where the judge and the evidence disagree."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.ui import engine
from services import metaeval
from services.jobs import batches
from services.jobs.batches import FailedItem

BAR_COLOURS = {"done": "#2e9d5b", "failed": "#d13c3c", "pending": "#dde1e7"}


def progress_line(done: int, failed: int, pending: int, total: int) -> str:
    """The counts under the bar, each apart: a full bar of failures must not read as finished."""
    return f"{done:,} done · {failed:,} failed · {pending:,} pending, of {total:,} items"


def render_progress(done: int, failed: int, pending: int, total: int) -> None:
    """A stacked bar (done green, failed red, pending grey) and the counts under it."""
    parts = [(k, n) for k, n in (("done", done), ("failed", failed), ("pending", pending)) if n > 0]
    segs = "".join(
        f'<div title="{n:,} {k}" style="width:{100 * n / total:.3f}%;background:{BAR_COLOURS[k]}"></div>'
        for k, n in parts
        if total
    )
    st.html(
        '<div class="cs-bar" role="img" aria-label="'
        + progress_line(done, failed, pending, total)
        + '" style="display:flex;height:10px;border-radius:5px;overflow:hidden;background:#dde1e7">'
        + segs
        + "</div>"
    )
    st.caption(progress_line(done, failed, pending, total))


PAGE_ROWS = 100  # rows of a paged item table: read from the database one page at a time


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


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Checking each sentence against its evidence…")
def _disagreements(batch_id: int, stamp: str) -> pd.DataFrame:
    return pd.DataFrame(
        batches.disagreements(engine(), batch_id),
        columns=["item", "external_id", "sentence", "text", "judge", "evidence", "why"],
    )


def render_disagreements(batch_id: int, method: str, n_done: int, *, key: str) -> list[int] | None:
    """The judge-versus-evidence check of a batch's finished items: a toggle that filters the items to those with
    a sentence the judge and the evidence disagree on, and the flagged sentences. Returns the flagged items' ids
    in order when the filter is on, else None (every item)."""
    if method == "evidence" or not n_done:
        return None
    on = st.toggle(
        "Only items where the judge and the evidence disagree",
        key=key,
        help="Each finished item's sentences (round 0) are checked against the reference by the offline evidence "
        "checker; an item is kept when the judge calls a sentence consistent that the evidence contradicts or "
        "does not support, or inconsistent one that the evidence supports.",
    )
    if not on:
        return None
    flagged = _disagreements(batch_id, metaeval.batch_stamp(engine(), batch_id))
    n_items = flagged["item"].nunique() if not flagged.empty else 0
    st.caption(f"{len(flagged)} sentence(s) in {n_items} of {n_done} finished item(s) flagged.")
    if flagged.empty:
        st.success("The judge and the evidence agree on every judged sentence.", icon=":material/check_circle:")
    else:
        st.dataframe(
            flagged,
            hide_index=True,
            width="stretch",
            column_config={
                "text": st.column_config.TextColumn(width="large"),
                "why": st.column_config.TextColumn(width="large"),
            },
        )
    return sorted({int(i) for i in flagged["item"]})


def page_picker(total: int, *, key: str, size: int = PAGE_ROWS) -> tuple[int, int]:
    """A page number for a table of `total` rows read from the database a page at a time; returns (offset, limit).
    Shown only when there is more than one page."""
    pages = max(1, -(-total // size))
    page = 1
    if pages > 1:
        page = int(
            st.number_input(f"Page (of {pages:,})", 1, pages, 1, key=key, help=f"{size} rows a page, in dataset order")
        )
    offset = (page - 1) * size
    st.caption(f"Rows {offset + 1:,}–{min(offset + size, total):,} of {total:,}" if total else "No rows.")
    return offset, size
