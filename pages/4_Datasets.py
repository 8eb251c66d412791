"""Datasets: import reference/candidate pairs with human judgments, for batch runs and meta-evaluation."""

import time
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from components.ui import engine, page_setup
from components.uploads import release_upload
from services import datasets
from services.config import PROJECT_ROOT, get_settings
from services.dcr import TASK_LABELS
from services.errors import InputError

page_setup("Datasets", ":material/dataset:")
eng = engine()

QAGS_SAMPLE = PROJECT_ROOT.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
UPLOADS = get_settings().data_dir / "uploads"
NONE = "(none)"
KIND_LABELS = {
    "score": "a human score per item",
    "binary": "a consistent / inconsistent label per item",
    "sentence": "rater votes per sentence",
}

for key, default in {
    "ds_open": None,
    "ds_last": None,
    "ds_confirm_delete": None,
    "ds_flash": None,
    "ds_spool": None,  # the upload copied to a file of its own: datasets.SpooledUpload, with the uploader's file id
    "ds_uploads": 0,  # uploads copied so far: a new uploader after each, so the old one's bytes are let go
}.items():
    st.session_state.setdefault(key, default)

param = st.query_params.get("dataset")
if param and param.isdigit() and st.session_state.ds_open != int(param):
    st.session_state.ds_open = int(param)


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def _stats(dataset_id: int, sha256: str, created_at: Any) -> dict[str, Any]:
    """A dataset's figures. Its items are written in the import's one transaction and never changed after, so
    its id, hash and import time key them: a 100,000-item dataset's sentence labels are read once, not at
    every visit (4 s of CPU each on SQLite)."""
    return datasets.dataset_stats(engine(), dataset_id)


def _import(name: str, data: Any, fmt: str, mapping: datasets.ColumnMapping | None = None, task: str = "") -> None:
    """Read and save a file (a path, or the uploader's file object, read where it is, a chunk at a time); the
    outcome is shown by the next lines of the page (kept in session state)."""
    started = time.perf_counter()
    try:
        with st.spinner(f"Reading and importing {name}…"):
            saved, result = datasets.import_file(
                eng, name=name, data=data, fmt=fmt, mapping=mapping, task=task or "summarization"
            )
    except InputError as exc:
        st.session_state.ds_last = {"name": name, "error": str(exc)}
        return
    st.session_state.ds_last = {
        "name": name,
        "id": saved.id,
        "created": saved.created,
        "seconds": time.perf_counter() - started,
        "n_items": result.n_items if result else 0,
        "n_rejected": result.n_rejected if result else 0,
        "rejected": [{"row": r.row, "reason": r.reason} for r in result.rejected[:1000]] if result else [],
    }
    st.session_state.ds_open = saved.id
    st.query_params["dataset"] = str(saved.id)


def _new_upload() -> None:
    st.session_state.ds_last = None  # the previous import's outcome is not about this file


def _drop_spool() -> None:
    spool = st.session_state.ds_spool
    st.session_state.ds_spool = None
    if spool is not None:
        spool[1].path.unlink(missing_ok=True)


def _take_upload(upload: Any) -> None:
    """Copy a new upload to a file of its own (read once, a chunk at a time), then let the uploader's bytes go:
    Streamlit would keep them in the server's memory for as long as the session lasts. The page reads the copy
    from then on; a new, empty uploader takes the next file."""
    _drop_spool()
    try:
        with st.spinner(f"Reading {upload.name}…"):
            st.session_state.ds_spool = (upload.file_id, datasets.spool_upload(upload, upload.name, UPLOADS))
    except InputError as exc:
        st.session_state.ds_last = {"name": upload.name, "error": str(exc)}
    release_upload(upload)
    st.session_state.ds_uploads += 1


def _open_changed() -> None:
    st.session_state.ds_confirm_delete = None
    if st.session_state.ds_open is None:
        st.query_params.pop("dataset", None)
    else:
        st.query_params["dataset"] = str(st.session_state.ds_open)


def _ask_delete(dataset_id: int) -> None:
    st.session_state.ds_confirm_delete = dataset_id


def _delete(dataset_id: int) -> None:
    st.session_state.ds_confirm_delete = None
    try:
        deleted = datasets.delete_dataset(eng, dataset_id)
    except InputError as exc:
        st.session_state.ds_flash = ("error", str(exc))
        return
    st.session_state.ds_flash = ("success", f"Deleted dataset #{dataset_id}." if deleted else "Already deleted.")
    st.session_state.ds_open = None
    st.query_params.pop("dataset", None)
    if (st.session_state.ds_last or {}).get("id") == dataset_id:
        st.session_state.ds_last = None


st.title("Datasets")
st.caption(
    "Import reference/candidate pairs with human judgments (QAGS, SummEval, PAWS/QQP, or your own JSONL/CSV) to "
    "run the evaluator over many items and measure how well it agrees with people. Candidates are split into "
    "sentences once, at import."
)

with st.container(border=True):
    st.markdown("#### Import a file")
    if QAGS_SAMPLE.is_file():
        row = st.container(horizontal=True, vertical_alignment="center")
        if row.button("Import the QAGS-CNN/DM sample", icon=":material/download:"):
            _import("QAGS-CNN/DM (MTurk)", QAGS_SAMPLE, "qags")
            st.rerun()
        row.caption("CNN/DailyMail summaries, each sentence judged yes/no by three MTurk workers (Wang et al., 2020).")
    n_uploads = st.session_state.ds_uploads
    upload = st.file_uploader(
        "Dataset file",
        type=list(datasets.UPLOAD_TYPES),
        key="ds_file" if not n_uploads else f"ds_file_{n_uploads}",
        on_change=_new_upload,
        help="QAGS or SummEval JSONL, PAWS/QQP TSV, or any JSONL/CSV/TSV with a reference and a candidate column.",
    )
    if upload is not None:
        _take_upload(upload)
        st.rerun()
    spooled = st.session_state.ds_spool[1] if st.session_state.ds_spool else None
    if spooled is not None:
        # Read from the copy: the preview its first rows, the import the whole, a chunk at a time.
        fid = st.session_state.ds_spool[0]
        row = st.container(horizontal=True, vertical_alignment="center")
        row.markdown(f"**{spooled.name}** · {spooled.size / 2**20:,.1f} MB")
        row.button("Remove", icon=":material/close:", on_click=_drop_spool, key="ds_spool_drop")
        formats = list(datasets.FORMAT_LABELS)
        with spooled.path.open("rb") as f:
            guessed = datasets.guess_format(spooled.name, f)
        top = st.columns([3, 2])
        fmt = top[0].selectbox(
            "Format",
            formats,
            index=formats.index(guessed),
            format_func=datasets.FORMAT_LABELS.get,
            key=f"ds_fmt_{fid}",
            help="Guessed from the file name and its first row.",
        )
        name = top[1].text_input("Name", value=Path(spooled.name).stem, max_chars=200, key=f"ds_name_{fid}")
        mapping: datasets.ColumnMapping | None = None
        task = {"qags": "summarization", "summeval": "summarization", "paws": "semantic"}.get(fmt, "summarization")
        ready = True
        if fmt in datasets.GENERIC_FORMATS:
            try:
                with spooled.path.open("rb") as f:
                    columns = datasets.sniff_columns(f, fmt)  # type: ignore[arg-type]
            except InputError as exc:
                st.error(str(exc), icon=":material/warning:")
                columns, ready = [], False
            if columns:
                guess = datasets.default_mapping(columns)
                st.markdown("**Columns**")
                c = st.columns(3)
                picked: dict[str, str | None] = {}
                for i, (role, label) in enumerate(
                    [("reference", "Reference"), ("candidate", "Candidate"), ("id", "Item id")]
                    + [("human_score", "Human score"), ("human_label", "Human label (0/1)")]
                    + [
                        ("sentence_labels", "Sentence labels (JSON list)"),
                        ("system", "System (prompt, model, version)"),
                    ]
                ):
                    required = role in ("reference", "candidate")
                    options = columns if required else [NONE, *columns]
                    default = guess.get(role)
                    value = c[i % 3].selectbox(
                        label,
                        options,
                        index=options.index(default) if default in options else 0,
                        key=f"ds_col_{role}_{fid}",
                    )
                    picked[role] = None if value == NONE else value
                mapping = datasets.ColumnMapping(**picked)  # type: ignore[arg-type]
                task = st.radio(
                    "Task", list(TASK_LABELS), format_func=TASK_LABELS.get, horizontal=True, key=f"ds_task_{fid}"
                )
                st.caption(
                    "Labels read 0/1, true/false, yes/no or consistent/inconsistent. Sentence labels: one entry "
                    "per candidate sentence (0/1, a list of votes, or an object of rater → 0/1); give the candidate "
                    "as a JSON list of sentences if the automatic split does not match. System: which system, "
                    "prompt, model or version wrote each candidate, to compare them on the **Judges** page."
                )
        else:
            st.caption(f"Task: {TASK_LABELS.get(task, task)}")
        with st.expander("Preview of the first rows", expanded=True, icon=":material/table_view:"):
            try:
                with spooled.path.open("rb") as f:
                    rows = datasets.preview_rows(f, fmt)
                st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
            except InputError as exc:
                st.error(str(exc), icon=":material/warning:")
                ready = False
        existing = datasets.find_imported(eng, spooled.sha256, fmt)
        just_imported = existing is not None and (st.session_state.ds_last or {}).get("id") == existing.id
        if existing is not None and not just_imported:
            st.info(
                f"This file was already imported as **{fmt}** into dataset #{existing.id} “{existing.name}”. "
                "Delete that dataset below to import the file again with other settings.",
                icon=":material/content_copy:",
            )
        if st.button(
            "Import",
            type="primary",
            icon=":material/upload:",
            disabled=existing is not None or not ready,
            key="ds_import",
        ):
            with spooled.path.open("rb") as f:
                _import(name or Path(spooled.name).stem, f, fmt, mapping, task)
            if "error" not in st.session_state.ds_last:  # imported: its copy goes too
                _drop_spool()
            st.rerun()

    last = st.session_state.ds_last
    if last and "error" in last:
        st.error(f"{last['name']}: {last['error']}", icon=":material/error:")
    elif last and last["created"]:
        msg = (
            f"Imported **{last['n_items']:,}** item(s) from {last['name']} as dataset #{last['id']} "
            f"in {last['seconds']:.2g} s"
        )
        if last["n_rejected"]:
            st.warning(f"{msg}; **{last['n_rejected']:,}** row(s) were rejected:", icon=":material/rule:")
            st.dataframe(
                pd.DataFrame(last["rejected"]),
                hide_index=True,
                width="stretch",
                height=min(300, 38 + 35 * len(last["rejected"])),
                column_config={"row": st.column_config.NumberColumn("row / line", width="small")},
            )
            if last["n_rejected"] > len(last["rejected"]):
                st.caption(f"Showing the first {len(last['rejected']):,} rejected rows.")
        else:
            st.success(f"{msg}; no row rejected.", icon=":material/check_circle:")
    elif last:
        st.info(
            f"{last['name']} was imported before (same content and format): dataset #{last['id']}. "
            "Nothing was imported again.",
            icon=":material/content_copy:",
        )

st.subheader("Saved datasets")
if st.session_state.ds_flash:
    kind, text = st.session_state.ds_flash
    (st.error if kind == "error" else st.success)(text)
    st.session_state.ds_flash = None

saved = datasets.list_datasets(eng)
if not saved:
    st.info(
        "No dataset yet. Upload a file above"
        + (", or import the QAGS-CNN sample" if QAGS_SAMPLE.is_file() else "")
        + ".",
        icon=":material/dataset:",
    )
    st.stop()

st.dataframe(
    pd.DataFrame(
        [
            {
                "id": d.id,
                "name": d.name,
                "format": d.format,
                "task": d.task,
                "items": d.n_items,
                "rejected": d.n_rejected,
                "label kinds": ", ".join(d.label_kinds) or "none",
                "sha256": d.sha256[:12],
                "created (UTC)": d.created_at.strftime("%Y-%m-%d %H:%M"),
            }
            for d in saved
        ]
    ),
    hide_index=True,
    width="stretch",
    column_config={
        "id": st.column_config.NumberColumn("#", width="small"),
        "name": st.column_config.TextColumn(width="medium"),
    },
)

by_id = {d.id: d for d in saved}
if st.session_state.ds_open not in by_id:
    st.session_state.ds_open = saved[0].id
    st.query_params.pop("dataset", None)
st.selectbox(
    "Open a dataset",
    list(by_id),
    format_func=lambda i: f"#{i} · {by_id[i].name} ({by_id[i].n_items:,} items)",
    key="ds_open",
    on_change=_open_changed,
)
d = by_id[st.session_state.ds_open]
try:
    stats = _stats(d.id, d.sha256, d.created_at)
except InputError as exc:  # deleted by another session between the list and now
    st.warning(str(exc))
    st.stop()

with st.container(border=True):
    head = st.columns([6, 1], vertical_alignment="center")
    head[0].markdown(f"#### #{d.id} · {d.name}")
    head[0].caption(
        f"{datasets.FORMAT_LABELS.get(d.format, d.format)} · task: {d.task} · sha256 {d.sha256[:12]}… · "
        f"imported {d.created_at:%Y-%m-%d %H:%M} UTC"
    )
    head[1].button("Delete", icon=":material/delete:", key="ds_ask_delete", on_click=_ask_delete, args=(d.id,))
    if st.session_state.ds_confirm_delete == d.id:
        with st.container(border=True):
            st.warning(
                f"Delete dataset #{d.id} “{d.name}” and its {d.n_items:,} items? This cannot be undone. "
                "(Reference documents stay: runs may share them.)"
            )
            c = st.container(horizontal=True)
            c.button("Delete dataset", type="primary", key="ds_do_delete", on_click=_delete, args=(d.id,))
            c.button("Cancel", key="ds_cancel_delete", on_click=_ask_delete, args=(None,))

    m = st.columns(5)
    m[0].metric("Items", f"{stats['items']:,}")
    m[1].metric("Sentences", f"{stats['sentences']:,}")
    m[2].metric("References", f"{stats['references']:,}", help="Distinct reference documents.")
    m[3].metric(
        "Mean human score",
        "–" if stats["score_mean"] is None else f"{stats['score_mean']:.3f}",
        help=f"Over {stats['scored']:,} scored item(s)"
        + (
            f"; range {stats['score_min']:g} – {stats['score_max']:g}."
            if stats["score_min"] is not None
            else "; the dataset has no human scores."
        ),
    )
    m[4].metric(
        "Labelled consistent",
        "–" if stats["share_consistent"] is None else f"{stats['share_consistent']:.0%}",
        help=f"Share of the {stats['labelled']:,} labelled item(s) whose human label is consistent (1).",
    )
    counts = d.meta.get("label_counts", {})
    kinds = [f"{KIND_LABELS.get(k, k)} ({counts.get(k, stats['items']):,} items)" for k in d.label_kinds]
    st.markdown(
        "**Human judgments:** " + ("; ".join(kinds) if kinds else "none (batch runs only, no meta-evaluation).")
    )
    systems = datasets.system_counts(eng, d.id)
    if systems:
        shown = ", ".join(f"{name} ({n:,})" for name, n in list(systems.items())[:12])
        more = f" and {len(systems) - 12} more" if len(systems) > 12 else ""
        st.markdown(f"**Systems:** {shown}{more}: compare them under **Compare systems** on the **Judges** page.")
    if stats["sentence_share_consistent"] is not None:
        st.caption(
            f"{stats['sentence_share_consistent']:.0%} of {stats['sentences_labelled']:,} labelled sentences are "
            "consistent by majority vote; an item's score is the share of its sentences judged consistent."
        )
    if d.n_rejected:
        with st.expander(f"{d.n_rejected:,} rejected row(s) at import", icon=":material/rule:"):
            rejected = datasets.rejected_rows(eng, d.id)
            st.dataframe(pd.DataFrame([r.__dict__ for r in rejected]), hide_index=True, width="stretch")
            if d.n_rejected > len(rejected):
                st.caption(f"The first {len(rejected):,} are kept.")
    st.markdown("**First 50 items**")
    frame = datasets.dataset_items_frame(eng, d.id, limit=50)
    unit = stats["score_min"] is not None and 0 <= stats["score_min"] and stats["score_max"] <= 1
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_config={
            "id": st.column_config.NumberColumn(width="small"),
            "external_id": st.column_config.TextColumn("external id", width="small"),
            "candidate": st.column_config.TextColumn(width="large"),
            "n_sentences": st.column_config.NumberColumn("sentences", width="small"),
            "human_score": st.column_config.ProgressColumn("human score", min_value=0, max_value=1, format="%.2f")
            if unit
            else st.column_config.NumberColumn("human score", format="%.3f"),
            "human_label": st.column_config.NumberColumn("human label", width="small"),
        },
    )
