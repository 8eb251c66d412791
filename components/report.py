"""Reports in the app: "Download report" and "Create share link" next to any run or study, and the
read-only view of a shared report."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import streamlit as st

from components import demo
from components.ui import engine
from services import metaeval, reports, runs
from services.errors import InputError
from services.reports import KIND_LABELS, Report

STATIC_ROWS = 30  # a report table this short is drawn whole

log = logging.getLogger(__name__)


def stamp_of(kind: str, ref_id: int) -> str:
    """Changes when the subject's results change, so a cached report is rebuilt (batches, runs, judge
    comparisons, whose labels may arrive any time); other kinds are rebuilt when the cache entry expires."""
    try:
        if kind in ("batch", "nli"):
            return metaeval.batch_stamp(engine(), ref_id)
        if kind == "judges":
            from services import judges

            panel = judges.get_panel(engine(), ref_id)
            return "missing" if panel is None else judges.stamp(engine(), panel.dataset_id, list(panel.batch_ids))
        if kind == "run":
            d = runs.load(engine(), ref_id)
            if d is None:
                return "missing"
            # Accepting or rejecting a rewrite changes the delivered text: the report must follow.
            choices = "".join("1" if w.accepted else "0" for rd in d.rounds for w in rd.rewrites)
            return f"{d.run.status}|{len(d.rounds)}|{d.run.final_score}|{choices}"
    except Exception:  # a stamp is an optimisation: never let it break the page
        log.exception("no stamp for %s %s", kind, ref_id)
    return ""


@st.cache_data(show_spinner="Building the report…", max_entries=16, ttl=300)
def _cached_report(kind: str, ref_id: int, stamp: str) -> Report:
    return reports.build(engine(), kind, ref_id)


def cached_report(kind: str, ref_id: int) -> Report:
    """The report of one subject, rebuilt when its results change."""
    return _cached_report(kind, ref_id, stamp_of(kind, ref_id))


@st.cache_data(show_spinner="Building the report…", max_entries=8, ttl=300)
def _cached_html(kind: str, ref_id: int, stamp: str) -> str:
    return reports.to_html(_cached_report(kind, ref_id, stamp))


def report_html(kind: str, ref_id: int) -> str:
    """The self-contained HTML file of one subject's report (built once per change of its results)."""
    return _cached_html(kind, ref_id, stamp_of(kind, ref_id))


def report_file(kind: str, ref_id: int) -> bytes:
    """The report file's bytes, or a page saying why there is none (the subject was deleted meanwhile)."""
    try:
        return report_html(kind, ref_id).encode("utf-8")
    except InputError as exc:
        return reports.message_html("No report", str(exc)).encode("utf-8")


def render_built_download(
    label: str,  # what is built, as in "Build report" and "Download report"
    build: Callable[[], bytes],
    *,
    key: str,
    file_name: str,
    mime: str,
    help: str | None = None,
    row: Any = None,
) -> None:
    """A file built when asked for: a "Build" button, then a download button with the bytes built.

    A large subject's file takes seconds to build (a 50,000-item batch's report), so no render builds it. The
    bytes are kept in the session once built, so the download button that follows has its file in hand: a
    button whose file is made on click ("deferred") loses it when the page redraws around the click.
    """
    slot = f"{key}_file"
    row = row if row is not None else st.container(horizontal=True, vertical_alignment="center")
    built = st.session_state.get(slot)
    if built is None:
        if row.button(f"Build {label}", icon=":material/build:", key=f"{key}_build", help=help):
            with st.spinner(f"Building the {label}…"):
                built = build()
            st.session_state[slot] = built
    if built is not None:
        row.download_button(
            f"Download {label}",
            built,
            file_name=file_name,
            mime=mime,
            icon=":material/download:",
            key=f"{key}_dl",
            on_click="ignore",
            help=help,
        )
        if row.button("Build again", icon=":material/refresh:", key=f"{key}_rebuild", type="tertiary"):
            st.session_state.pop(slot, None)
            st.rerun()


def survey_choices() -> dict[int, str]:
    """Expert surveys by id, labelled for a picker."""
    from services.dhp import survey

    return {x.id: f"#{x.id} · {x.title} · {x.status}" for x in survey.surveys(engine())}


def dhp_run_choices() -> dict[int, str]:
    """DHP benchmark runs by id, labelled for a picker."""
    from services import dhp

    return {r.id: f"#{r.id} · {r.model} · set {r.set_id} · {r.status}" for r in dhp.runs(engine())}


def share_url(token: str) -> str:
    """The share link: absolute on this app's address when the browser's URL is known, else a path."""
    base = ""
    try:
        url = st.context.url
    except Exception:  # outside a browser session (tests, bare mode)
        url = None
    if url:
        parts = urlsplit(url)
        base = f"{parts.scheme}://{parts.netloc}{parts.path.rsplit('/', 1)[0]}"
    # A link made in the demo workspace opens it (the report lives in the workspace's database).
    return f"{base}/Reports?share={token}" + ("&demo=1" if demo.is_open() else "")


def render_report_download(kind: str, ref_id: int, *, key: str | None = None) -> None:
    """ "Build report", then "Download report" (one self-contained HTML file), and "Create share link" (a read-only
    token)."""
    key = key or f"rep_{kind}_{ref_id}"
    row = st.container(horizontal=True, vertical_alignment="center")
    render_built_download(
        "report",
        lambda: report_file(kind, ref_id),
        key=key,
        file_name=f"{kind}-{ref_id}-report.html",
        mime="text/html",
        help="One HTML file with the configuration, headline numbers with intervals, interactive charts, "
        "tables and worked examples. Opens offline in any browser; holds no API key.",
        row=row,
    )
    title = f"{KIND_LABELS.get(kind, kind)} #{ref_id}"
    if row.button(
        "Create share link",
        icon=":material/link:",
        key=f"{key}_share",
        type="tertiary",
        help="A read-only link to this report for people with access to the app: the one already made for it, "
        "if it is not revoked.",
    ):
        st.session_state[f"{key}_token"] = reports.share_link(engine(), kind, ref_id, title=title).token
    token = st.session_state.get(f"{key}_token")
    if token and row.button(
        "New link",
        icon=":material/add_link:",
        key=f"{key}_share_new",
        type="tertiary",
        help="Another read-only link to the same report, to revoke apart from the first.",
    ):
        token = st.session_state[f"{key}_token"] = reports.new_share(engine(), kind, ref_id, title=title).token
    if token:
        st.caption("Read-only share link (revoke it on the **Reports** page):")
        st.code(share_url(token), language=None)


def render_report(report: Report, *, heading: bool = True) -> None:
    """A report in the app, read-only: the same content as the HTML file (`heading`: as the page's title)."""
    (st.title if heading else st.subheader)(report.title)
    st.caption(f"{KIND_LABELS.get(report.kind, report.kind)} #{report.ref_id} · read-only")
    if report.summary:
        st.markdown(report.summary)
    if report.headlines:
        per_row = min(3, len(report.headlines))
        for start in range(0, len(report.headlines), per_row):
            cols = st.columns(per_row)
            for col, h in zip(cols, report.headlines[start : start + per_row], strict=False):
                col.metric(h.label, h.value_text(), help=h.note or None)
                parts = [f"95% CI {h.interval_text()}" if h.interval_text() else "", f"n = {h.n:,}" if h.n else ""]
                if any(parts):
                    col.caption(" · ".join(p for p in parts if p))
    for note in report.notes:
        st.caption(f":material/info: {note}")
    for i, f in enumerate(report.figures):
        st.plotly_chart(f.to_figure(), key=f"rep_fig_{i}", config={"displaylogo": False})
        if f.caption:
            st.caption(f.caption)
    for i, t in enumerate(report.tables):
        st.markdown(f"**{t.title}**")
        frame = pd.DataFrame(t.rows, columns=t.columns)
        if len(frame) <= STATIC_ROWS:  # every row in view: a data grid stops at ten behind a scroll bar
            st.table(frame, hide_index=True)
        else:
            st.dataframe(frame, hide_index=True, width="stretch", key=f"rep_tab_{i}")
        if t.note:
            st.caption(t.note)
    if report.examples:
        st.subheader("Worked examples")
        for ex in report.examples:
            with st.expander(ex.title):
                st.html(f"<style>{reports.example_css()}</style>" + reports.example_html(ex))
    with st.expander("Configuration"):
        st.json(report.configuration, expanded=False)
