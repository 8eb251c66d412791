"""Batches: run DCR over a dataset in the background worker; progress, cancel, resume, re-run failed."""

from typing import Any

import pandas as pd
import streamlit as st

from components.batch_views import page_picker, render_disagreements, render_failed_answers, render_progress
from components.report import render_built_download, render_report_download
from components.ui import batch_worker, demo_notice, engine, page_setup, render_backend_line
from services import estimates
from services.datasets import list_datasets
from services.dcr import CONVERTER_LABELS, TASK_LABELS, DCRConfig
from services.errors import InputError
from services.export import frame_csv
from services.figures.nli import ALL_METHOD_LABELS
from services.jobs import batches
from services.jobs import queue as jobs
from services.nli import paradigms as nli


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def _sizes(dataset_id: int, sha256: str, created_at: Any, limit: int | None) -> list[tuple[int, int, int]]:
    """The dataset's text sizes for the estimate. Its items never change once imported (one transaction), so
    its id, hash and import time key them: 100,000 rows are not read at every render (0.8 s on SQLite)."""
    return estimates.dataset_sizes(engine(), dataset_id, limit=limit)


backend = page_setup("Batches", ":material/dynamic_feed:")
eng = engine()
batch_worker()
st.session_state.setdefault("ba_selected", None)
param = st.query_params.get("batch")
if param and param.isdigit():
    st.session_state.ba_selected = int(param)

st.title("Batches")
st.caption(
    "Run the evaluator over a whole dataset. Batches run in a background worker: close the tab, come back "
    "later; a restarted app resumes unfinished items. Finished items are never sent to the model again."
)

datasets = list_datasets(eng)
# Open while there is no batch yet, decided once per session: the page reruns itself when a batch changes
# state, and a default that flipped then would close the panel on a form being filled in.
st.session_state.setdefault("ba_start_open", not batches.list_batches(eng, 1))
with st.expander("Start a batch", expanded=st.session_state.ba_start_open, icon=":material/play_circle:"):
    if not datasets:
        st.info("Import a dataset first on the **Datasets** page.")
        st.page_link("pages/4_Datasets.py", label="Go to Datasets", icon=":material/dataset:")
    else:
        demo_notice(backend)
        if not backend.is_embedded and st.session_state.get("backend_api_key"):
            st.warning(
                "The worker does not see a key typed in Settings (keys are never stored). Batches use "
                "`LLM_API_KEY` / `OPENAI_API_KEY` from the environment or `.streamlit/secrets.toml`."
            )
        # No form: every change reruns the page, so the estimate beside "Start batch" follows the fields.
        with st.container(key="ba_new"):
            ds = st.selectbox("Dataset", datasets, format_func=lambda d: f"{d.name} · {d.n_items} items · {d.format}")
            # Task and evaluator side by side, the converter on a row of its own: their labels are long and a
            # third of the form cuts them off.
            c = st.columns(2)
            default_task = list(TASK_LABELS).index(ds.task) if ds and ds.task in TASK_LABELS else 0
            task = c[0].selectbox("Task", list(TASK_LABELS), format_func=TASK_LABELS.get, index=default_task)
            method = c[1].selectbox(
                "Evaluator", list(ALL_METHOD_LABELS), format_func=ALL_METHOD_LABELS.get, key="ba_method"
            )
            amc = st.selectbox(
                "Converter",
                list(CONVERTER_LABELS),
                format_func=CONVERTER_LABELS.get,
                help="DCE-AMC and the paragraph evaluator only",
            )
            c = st.columns(6)
            rounds = c[0].number_input("Rounds", 0, 10, 0, help="Improvement rounds (DCE methods); 0: evaluate only")
            concurrency = c[1].number_input("Concurrency", 1, 256, int(backend.concurrency))
            limit = c[2].number_input("Item limit", 0, 1_000_000, 0, help="0: every item")
            window = c[3].number_input(
                "Window w", 1, 10, 1, key="ba_window", help="Sent-NLI and QG-QA: summary sentences judged at a time"
            )
            repeats = c[4].number_input(
                "Repeats",
                1,
                10,
                1,
                key="ba_repeats",
                help="Run the same configuration n times, each asking the model again (not the cache), "
                "for the standard deviation over runs (Table 4).",
            )
            name = c[5].text_input("Name", placeholder="optional")
            c = st.columns([1, 1, 4])
            alpha = c[0].number_input(
                "α (Eq. 3)", value=0.0, step=0.5, key="ba_alpha", help="DCE methods; Appendix C.1 sets α = 0."
            )
            beta = c[1].number_input(
                "β (Eq. 3)", value=0.0, step=0.5, key="ba_beta", help="DCE methods; Appendix C.1 sets β = 0."
            )
            criteria = c[2].text_input("Criteria (custom task only)", "")
            render_backend_line(backend)
            est = estimates.batch_estimate(
                eng,
                backend,
                ds.id,
                sizes=_sizes(ds.id, ds.sha256, ds.created_at, int(limit) or None),
                method=method,
                window=int(window),
                amc=amc,
                rounds=0 if nli.is_nli(method) else int(rounds),
                concurrency=int(concurrency),
                item_limit=int(limit) or None,
                repeats=int(repeats),
            )
            st.caption(est.summary())
            start = st.button("Start batch", type="primary", icon=":material/play_arrow:", key="ba_start")
        if start:
            try:
                ids = batches.create_repeats(
                    eng,
                    repeats=int(repeats),
                    dataset_id=ds.id,
                    backend=backend,
                    cfg=DCRConfig(
                        task=task,
                        criteria=criteria,
                        method=method,
                        amc=amc,
                        max_rounds=0 if nli.is_nli(method) else int(rounds),
                        alpha=float(alpha),
                        beta=float(beta),
                    ),
                    concurrency=int(concurrency),
                    item_limit=int(limit) or None,
                    name=name,
                    window=int(window),
                )
                for bid in ids:
                    jobs.enqueue(bid)
                bid = ids[0]
                st.session_state.ba_selected = bid
                st.query_params["batch"] = str(bid)
                st.toast(f"Batch {bid} started." if len(ids) == 1 else f"Batches {ids[0]}–{ids[-1]} started.")
            except InputError as exc:
                st.error(str(exc))

all_batches = batches.list_batches(eng)
if not all_batches:
    st.stop()
opts = batches.all_options(eng)
failed_by_batch = batches.failed_counts(eng)

st.subheader("All batches")
table = pd.DataFrame(
    [
        {
            "batch": b.id,
            "name": b.name,
            "status": batches.status_text(b.status, failed_by_batch.get(b.id, 0)),
            "items": b.n_items,
            "method": b.method,
            "window": opts[b.id].window if b.id in opts and b.method in nli.WINDOWED else None,
            "repeat": opts[b.id].sample + 1 if b.id in opts and opts[b.id].repeat_group else None,
            "converter": "—" if nli.is_nli(b.method) else b.amc,
            "rounds": b.max_rounds,
            "model": b.model,
            "created (UTC)": b.created_at.strftime("%Y-%m-%d %H:%M"),
        }
        for b in all_batches
    ]
)
table = table.astype({"window": "Int64", "repeat": "Int64"})  # whole numbers, blanks where none
ev = st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    placeholder="—",  # an empty cell (no window, not a repeat) reads as a dash, not "None"
    on_select="rerun",
    selection_mode="single-row",
    column_config={"status": st.column_config.TextColumn("status", width="medium")},  # "finished with 36 failures"
    key="ba_table",
)
if ev and ev.selection and ev.selection.rows:
    st.session_state.ba_selected = int(table.iloc[ev.selection.rows[0]]["batch"])
    st.query_params["batch"] = str(st.session_state.ba_selected)

bid = st.session_state.ba_selected
if bid is None:
    st.caption("Select a batch to follow its progress.")
    st.stop()


def _fmt_s(s: float | None) -> str:
    if s is None:
        return "—"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def live(batch_id: int) -> None:
    p = batches.progress(eng, batch_id)
    if p is None:
        st.warning(f"Batch {batch_id} no longer exists.")
        return
    b = p.batch
    if b.status != shown_status.get(batch_id, b.status):
        st.rerun()  # the batch changed state: redraw the whole page (the table above, the items below)
    st.markdown(f"### Batch #{b.id} · {b.name}")
    how = (
        f"window {opts[b.id].window if b.id in opts else 1}"
        if b.method in nli.WINDOWED
        else ""
        if nli.is_nli(b.method) or b.method == "evidence"  # the evidence checker has no converter and no rounds
        else f"converter {b.amc} · rounds {b.max_rounds}"
    )
    st.caption(
        f"{b.model} · {ALL_METHOD_LABELS.get(b.method, b.method)} · {how + ' · ' if how else ''}"
        f"concurrency {b.concurrency} · status **{p.status_text}**"
        + (" · cancelling…" if b.cancel_requested and b.status == "running" else "")
    )
    render_progress(p.done, p.failed, p.pending + p.running, p.total)
    m = st.columns(7)
    m[0].metric("Done", p.done)
    m[1].metric("Failed", p.failed)
    m[2].metric("Pending", p.pending + p.running)
    m[3].metric(
        "ETA",
        _fmt_s(p.eta_s) if b.status == "running" else "—",
        help=(
            f"At {p.items_per_s:.2f} items/s, measured over the last {p.rate_window_s:.0f} s."
            if p.items_per_s
            else "Measured once a few items have finished in the last two minutes."
        ),
    )
    answered, retries = estimates.calls_text(p.calls, p.answered)
    m[4].metric("Answered", answered, help=f"Model calls answered, of {p.calls:,} requests sent")
    m[5].metric(
        "Retries",
        retries,
        help="Requests sent again or failed: refused connections, timeouts, error statuses (cache hits: "
        f"{p.cache_hits:,}, no request)",
    )
    m[6].metric("Tokens", f"{p.tokens:,}")
    if b.status in ("done", "cancelled"):
        st.caption(p.spent(backend).summary())
    if b.status == "deleting":
        st.info(
            "Deleting: its workers are stopping (nothing more is sent, and the answers in flight write no result). "
            "The batch goes as soon as they have let go of its items."
        )
    if b.status in ("queued", "running") and not batches.live_workers(eng):
        st.info("Waiting for a worker. The app starts one; it resumes unfinished items within a minute.")
    a = st.container(horizontal=True)
    if b.status in ("queued", "running") and not b.cancel_requested:
        if a.button("Cancel", icon=":material/stop_circle:", key=f"ba_cancel_{b.id}"):
            batches.request_cancel(eng, b.id)
            st.rerun()
    if b.status == "cancelled" and p.pending:
        if a.button("Resume", icon=":material/play_arrow:", key=f"ba_resume_{b.id}"):
            batches.reopen(eng, b.id)
            jobs.enqueue(b.id)
            st.rerun()
    if p.failed and b.status in ("done", "cancelled"):
        if a.button(f"Re-run {p.failed} failed", icon=":material/replay:", key=f"ba_retry_{b.id}"):
            batches.reopen(eng, b.id, failed_too=True)
            jobs.enqueue(b.id)
            st.rerun()
    if b.status == "done":
        a.page_link(
            "pages/6_Meta-evaluation.py",
            label="Meta-evaluation",
            icon=":material/query_stats:",
            query_params={"batch": str(b.id)},
        )


shown_status = {b.id: b.status for b in all_batches}
# Polled while the batch can still change by itself; a finished one is drawn once (an open tab costs nothing).
polling = shown_status.get(bid) in ("queued", "running", "deleting")
st.fragment(run_every=1.5 if polling else None)(live)(bid)

# The item tables read one page from the database at a time: a 50,000-item batch is never loaded whole.
counts = batches.progress(eng, bid)
if counts is not None and counts.total:
    if counts.failed:
        with st.expander(f"Failed items ({counts.failed:,})", icon=":material/error:"):
            offset, size = page_picker(counts.failed, key=f"ba_failed_page_{bid}")
            failed = batches.items_frame(eng, bid, status="failed", limit=size, offset=offset)
            st.dataframe(failed[["item", "external_id", "error"]], hide_index=True, width="stretch", placeholder="—")
            render_failed_answers(batches.failed_items(eng, bid), key=f"ba_raw_{bid}")
    method = next((x.method for x in all_batches if x.id == bid), "")
    flagged_ids = render_disagreements(bid, method, counts.done, key=f"ba_flagged_{bid}")
    filtered = flagged_ids is not None
    n_shown = len(flagged_ids) if filtered else counts.total
    with st.expander(
        f"Items ({n_shown:,} flagged)" if filtered else "Items", icon=":material/list:", expanded=filtered
    ):
        offset, size = page_picker(n_shown, key=f"ba_items_page_{bid}_{int(filtered)}")
        if filtered:
            shown_items = batches.items_frame(eng, bid, item_ids=flagged_ids[offset : offset + size])
        else:
            shown_items = batches.items_frame(eng, bid, limit=size, offset=offset)
        st.dataframe(
            shown_items.drop(columns=["error"]),
            hide_index=True,
            width="stretch",
            placeholder="—",
            column_config={
                "score": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f"),
                "final score": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f"),
            },
        )
    c = st.container(horizontal=True)
    render_built_download(
        "items (CSV)",
        lambda: frame_csv(batches.items_frame(eng, bid)),
        key=f"ba_items_csv_{bid}",
        file_name=f"batch-{bid}-items.csv",
        mime="text/csv",
        help="Every item of the batch, one row each, with its state, scores, human judgments, usage and error.",
        row=c,
    )
    render_report_download("batch", bid, key=f"ba_rep_{bid}")
    going = shown_status.get(bid) == "deleting"
    if not going and st.button("Delete this batch", icon=":material/delete:", key="ba_delete"):
        st.session_state.ba_confirm = bid
    if st.session_state.get("ba_confirm") == bid:
        busy = shown_status.get(bid) in ("queued", "running")
        st.warning(
            f"Delete batch {bid} and its results? The dataset stays."
            + (
                " Its workers stop first: nothing more is sent, and the answers in flight write no result."
                if busy
                else ""
            )
        )
        d = st.container(horizontal=True)
        if d.button("Delete", type="primary", key="ba_do_delete"):
            with st.spinner("Stopping its workers, then deleting…" if busy else "Deleting…"):
                gone = batches.delete_batch(eng, bid)
            if gone is None:  # a worker still holds items: the batch shows "deleting" until it lets go
                st.session_state.ba_confirm = None
                st.rerun()
            st.session_state.ba_selected = None
            st.session_state.ba_confirm = None
            st.query_params.pop("batch", None)
            st.rerun()
        if d.button("Keep it", key="ba_keep"):
            st.session_state.ba_confirm = None
            st.rerun()
