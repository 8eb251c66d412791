"""Annotate: label candidate sentences yourself, item by item; agreement with others and the models; export."""

import html
from pathlib import Path

import streamlit as st

from components.access import is_owner
from components.annotate import KEY_NEXT, KEY_PREVIOUS, KEYS_HELP, release_focus, render_sentence_labeller
from components.ui import engine, page_setup
from services import annotations
from services.annotations import Target
from services.datasets import list_datasets
from services.errors import InputError

page_setup("Annotate", ":material/edit_note:", link="annotator")
eng = engine()
owner = is_owner()  # else an annotator's link: their own queue only, and the lead's settings
for key, default in {
    "an_annotator": None,
    "an_item": None,
    "an_ctx": None,
    "an_flash": None,
    "an_import": None,
}.items():
    st.session_state.setdefault(key, default)

VIEWS = ["Annotate", "Agreement", "Export / import"]


def _flash(kind: str, text: str) -> None:
    st.session_state.an_flash = (kind, text)


def _create_annotator() -> None:
    try:
        a = annotations.create_annotator(eng, st.session_state.get("an_new_name", ""))
    except InputError as exc:
        _flash("error", str(exc))
        return
    st.session_state.an_annotator = a.id
    st.session_state.an_pick = a.id
    st.session_state.an_new_name = ""
    _flash(
        "success",
        f"Added the annotator {a.name}. Their personal link is below: send it to them; it opens this page as "
        f"{a.name}, with nothing else of the app.",
    )


def _pick_annotator() -> None:
    st.session_state.an_annotator = st.session_state.an_pick
    st.session_state.an_release_focus = True  # the name picker keeps the keys; the shortcuts need them


def _go(item_id: int | None) -> None:
    if item_id is not None:
        st.session_state.an_item = item_id


def _dataset_changed() -> None:
    st.query_params["dataset"] = str(st.session_state.an_dataset)
    for key in ("an_batch", "an_blind"):
        st.session_state.pop(key, None)


def _save_settings() -> None:
    try:
        annotations.set_queue_settings(
            eng, st.session_state.an_dataset, batch_id=st.session_state.an_batch, blind=st.session_state.an_blind
        )
    except InputError as exc:
        _flash("error", str(exc))


def _personal_link(token: str, dataset_id: int | None) -> str:
    try:
        base = (st.context.url or "").split("?", 1)[0]
    except Exception:  # no browser context (a headless test run)
        base = ""
    base = base or "/Annotate"
    return f"{base}?token={token}" + (f"&dataset={dataset_id}" if dataset_id else "")


st.title("Annotate")
st.caption(
    "Mark each sentence of a candidate **consistent** or **inconsistent** with its reference, agreeing with the "
    "model or correcting it. Labels are stored under your name, beside the model's verdicts and never over them."
)

# -- who is annotating ----------------------------------------------------------------------------
# A link holder is who their token says, nothing else; the owner may also pick any annotator (to label as
# them, or to hand out their link).
token = st.query_params.get("token")
me = None
if token:
    me = annotations.annotator_by_token(eng, token)
    if me is None and not owner:
        st.error(
            "This personal link is not valid: it may have been replaced by a newer one, or the annotator removed. "
            "Ask the lead of the annotation for your current link.",
            icon=":material/link_off:",
        )
        st.stop()
    if me is None:
        st.error("This personal link is not valid (replaced, or the annotator removed). Pick an annotator below.")
    else:
        st.session_state.an_annotator = me.id
elif st.session_state.an_annotator is not None:
    me = annotations.get_annotator(eng, st.session_state.an_annotator)

flash = st.session_state.an_flash
if flash:
    getattr(st, flash[0])(flash[1])
    st.session_state.an_flash = None

if me is not None and token:
    st.markdown(f"You are **{html.escape(me.name)}** (from your personal link).")
elif owner:
    people = annotations.list_annotators(eng)
    names = {p.id: p.name for p in people}
    if st.session_state.get("an_pick") not in names:
        st.session_state.an_pick = me.id if me is not None and me.id in names else None
    with st.container(border=True):
        c = st.columns([3, 3, 1], vertical_alignment="bottom")
        c[0].selectbox(
            "Who are you?",
            list(names),
            format_func=names.get,
            key="an_pick",
            on_change=_pick_annotator,
            placeholder="Pick your name" if names else "No annotator yet: create one",
        )
        c[1].text_input("New annotator", key="an_new_name", placeholder="Your name", max_chars=annotations.MAX_NAME)
        c[2].button("Create", icon=":material/person_add:", on_click=_create_annotator, width="stretch")

if st.session_state.pop("an_release_focus", False):
    release_focus()

datasets = list_datasets(eng)
if not owner:  # a link opens only the datasets with items assigned to its annotator
    mine = set(annotations.datasets_of(eng, me.id))
    datasets = [d for d in datasets if d.id in mine]
    if not datasets:
        st.info(
            "No item is assigned to you yet. The lead of the annotation assigns items; come back to this link later."
        )
        st.stop()
if not datasets:
    st.info("No dataset yet. Import one on the **Datasets** page; its items are what you label here.")
    st.page_link("pages/4_Datasets.py", label="Go to Datasets", icon=":material/dataset:")
    st.stop()

ds_names = {d.id: f"{d.name} · {d.n_items} items" for d in datasets}
param = st.query_params.get("dataset")
if param and param.isdigit() and int(param) in ds_names and "an_dataset" not in st.session_state:
    st.session_state.an_dataset = int(param)
if st.session_state.get("an_dataset") not in ds_names:
    st.session_state.an_dataset = datasets[0].id
c = st.columns([3, 3, 2], vertical_alignment="bottom")
dataset_id = c[0].selectbox(
    "Dataset", list(ds_names), format_func=ds_names.get, key="an_dataset", on_change=_dataset_changed
)
batches = annotations.batches_for_dataset(eng, dataset_id)
batch_names = {None: "(none: no model verdicts)"} | {b.id: f"#{b.id} {b.name} · {b.status}" for b in batches}
settings = annotations.queue_settings(eng, dataset_id)  # the lead's choice, for every annotator of the dataset
if owner:
    if st.session_state.get("an_batch", settings.batch_id) not in batch_names:
        st.session_state.pop("an_batch", None)
    st.session_state.setdefault("an_batch", settings.batch_id)
    st.session_state.setdefault("an_blind", settings.blind)
    batch_id = c[1].selectbox(
        "Model verdicts from",
        list(batch_names),
        format_func=batch_names.get,
        key="an_batch",
        on_change=_save_settings,
        help="The batch whose round-0 verdicts every annotator of this dataset sees beside each sentence.",
    )
    blind = c[2].toggle(
        "Blind mode",
        key="an_blind",
        on_change=_save_settings,
        help="For every annotator of this dataset: hide the model's verdict on a sentence until it is labelled, "
        "so it cannot sway them.",
    )
else:
    batch_id, blind = settings.batch_id, settings.blind
    if batch_id is not None:
        c[1].caption(
            "Model verdicts are shown "
            + ("once you have labelled a sentence." if blind else "beside each sentence.")
            + " The lead chose this."
        )

if me is not None:
    title = "Your personal link" if not owner else f"Personal link of {me.name}"
    with st.expander(title, icon=":material/link:"):
        st.code(_personal_link(annotations.annotator_token(eng, me.id) or "", dataset_id), language=None)
        st.caption(
            "It opens this page as you, with no name to pick. Anyone with it labels as you: keep it to yourself."
            if not owner
            else f"Send it to {me.name}: it opens only their queue on this page, with the settings "
            "above, and labels as them. Replacing it closes the old link at once."
        )
        if st.button(
            "Replace this link",
            icon=":material/link_off:",
            key="an_rotate",
            help="The current link stops working at once; your labels are kept.",
        ):
            new = annotations.replace_token(eng, me.id)
            if token:
                st.query_params["token"] = new
            _flash("success", "A new personal link is below; the old one no longer opens this page.")
            st.rerun()

view = VIEWS[0]
if owner:  # agreement and the export hold everyone's labels: the lead's views
    view = st.segmented_control(
        "View", VIEWS, default=VIEWS[0], key="an_view", required=True, label_visibility="collapsed"
    )


# -- the queue ----------------------------------------------------------------------------------
def assign_panel(open_it: bool) -> None:
    with st.expander("Assign items", icon=":material/group_add:", expanded=open_it):
        people = annotations.list_annotators(eng)
        if not people:
            st.caption("Create annotators first (above).")
            return
        names = {p.id: p.name for p in people}
        with st.form("an_assign_form", border=False):
            chosen = st.multiselect("Annotators", list(names), default=list(names), format_func=names.get)
            f = st.columns(2)
            per_item = f[0].number_input("Annotators per item", 1, max(1, len(names)), min(2, len(names)))
            seed = f[1].number_input("Seed", 0, 2**31 - 1, 0, help="The same seed gives the same assignment.")
            submitted = st.form_submit_button("Assign", type="primary", icon=":material/assignment_ind:")
        st.caption(
            "Each item goes to that many annotators: to the ones holding the fewest items, ties drawn with the "
            "seed (a shuffled round robin). Assigning again only tops items up; nothing is taken away."
        )
        if submitted:
            try:
                res = annotations.assign(eng, dataset_id, annotators=chosen, per_item=int(per_item), seed=int(seed))
            except InputError as exc:
                st.error(str(exc))
            else:
                loads = ", ".join(f"{k} {v}" for k, v in res.loads.items())
                st.success(
                    f"{res.created} new assignment(s); {res.covered} of {res.items} items covered. Items each: {loads}."
                )
        table = annotations.progress_frame(eng, dataset_id)
        if not table.empty:
            st.dataframe(table, hide_index=True, width="content")


def queue_view() -> None:
    if owner:
        assign_panel(open_it=annotations.progress(eng, dataset_id).assigned == 0)
    if me is None:
        st.info("Pick your name (or create it) above to start labelling.")
        return
    entries = annotations.queue(eng, dataset_id, me.id)
    if not entries:
        st.info(
            "No item of this dataset is assigned to you yet. "
            + (
                "Assign items under **Assign items** (working alone: choose just yourself, one annotator per item)."
                if owner
                else "The lead of the annotation assigns items."
            )
        )
        return
    ids = [e.item_id for e in entries]
    if st.session_state.an_ctx != (me.id, dataset_id) or st.session_state.an_item not in ids:
        st.session_state.an_item = annotations.next_item(eng, dataset_id, me.id)
        st.session_state.an_ctx = (me.id, dataset_id)
    item_id = st.session_state.an_item
    pos = ids.index(item_id)
    entry = entries[pos]
    p = annotations.progress(eng, dataset_id, me.id)
    st.progress(p.fraction, text=f"{p.done} of {p.assigned} items done · {p.labels} sentence label(s)")

    nav = st.container(horizontal=True, vertical_alignment="center")
    nav.button(
        "Previous",
        icon=":material/arrow_back:",
        key="an_prev",
        disabled=pos == 0,
        shortcut=KEY_PREVIOUS,
        on_click=_go,
        args=(ids[pos - 1] if pos else None,),
    )
    nav.button(
        "Next",
        icon=":material/arrow_forward:",
        key="an_next",
        disabled=pos == len(ids) - 1,
        shortcut=KEY_NEXT,
        on_click=_go,
        args=(ids[pos + 1] if pos < len(ids) - 1 else None,),
    )
    pending_after = annotations.next_item(eng, dataset_id, me.id, after=item_id, pending_only=True)
    nav.button(
        "Next unfinished",
        icon=":material/skip_next:",
        key="an_next_todo",
        disabled=pending_after is None,
        on_click=_go,
        args=(pending_after,),
    )
    status = ":green[done]" if entry.status == "done" else ":orange[to do]"
    nav.markdown(f"**Item {pos + 1} of {len(ids)}** · `{html.escape(entry.external_id)}` · {status}")

    item = annotations.get_item(eng, item_id)
    if item is None:
        st.warning("This item no longer exists.")
        return
    with st.expander("Reference", expanded=True, icon=":material/article:"):
        # A long article scrolls inside its own box, so the sentences stay close to the top.
        with st.container(height=260 if len(item.reference) > 900 else "content", border=False):
            st.text(item.reference)
    verdicts = annotations.model_verdicts(eng, batch_id, item.id) if batch_id is not None else None
    if batch_id is not None and verdicts is None:
        st.caption(
            "This batch has no per-sentence verdict for this item (not finished, or it judged the candidate as "
            "one paragraph)."
        )
    st.markdown("**Candidate, sentence by sentence**")
    st.caption(KEYS_HELP)
    render_sentence_labeller(
        eng,
        annotator_id=me.id,
        target=Target.item(item.id),
        sentences=item.sentences,
        verdicts=verdicts,
        show_verdicts=batch_id is not None,
        blind=blind,
        key_prefix="an",
        shortcuts=True,
        token=None if owner else token,  # a link holder's every label checks the link again
    )


# -- agreement ------------------------------------------------------------------------------------
def agreement_view() -> None:
    done = [b.id for b in batches if b.status == "done"]
    chosen = st.multiselect(
        "Compare with batches",
        [b for b in batch_names if b is not None],
        format_func=batch_names.get,
        default=[batch_id] if batch_id is not None else done[:3],
        key=f"an_agree_batches_{dataset_id}",
    )
    with st.spinner("Computing agreement…"):
        res = annotations.agreement(eng, dataset_id, batch_ids=chosen)
    st.caption(
        f"Krippendorff's alpha (nominal) over {res['n_units']} labelled sentence(s) from {res['n_annotators']} "
        "annotator(s), with 95% bootstrap intervals over sentences. Against a batch, the annotators' majority "
        "(ties left out) is one rater and the model's round-0 verdict the other (unknown verdicts left out)."
    )
    table = annotations.agreement_frame(res)
    st.dataframe(
        table.drop(columns=["note"]),
        hide_index=True,
        width="stretch",
        column_config={
            "comparison": st.column_config.TextColumn(width="large"),
            "alpha": st.column_config.NumberColumn(format="%.3f"),
            "ci_low": st.column_config.NumberColumn("95% CI low", format="%.3f"),
            "ci_high": st.column_config.NumberColumn("95% CI high", format="%.3f"),
        },
    )
    for what, note in zip(table["comparison"], table["note"], strict=True):
        if note:
            st.caption(f"**{what}**: {note}")
    st.markdown("##### Where they disagree")
    if blind:
        st.info(
            "Blind mode is on: this table shows the models' verdicts, so it is hidden. Turn blind mode off "
            "(for the dataset's annotators too) to see it.",
            icon=":material/visibility_off:",
        )
        return
    df = annotations.disagreements(eng, dataset_id, batch_ids=chosen)
    if df.empty:
        st.caption("No disagreement: every labelled sentence has one answer among annotators and models.")
        return
    st.caption(f"{len(df)} sentence(s) where annotators disagree, or a model differs from their majority.")
    # Numbered from 1 here, as in the queue; the export keeps the 0-based indices.
    shown = df.assign(**{"item #": df["item"] + 1, "sentence #": df["sentence_idx"] + 1})
    rest = [c for c in df.columns if c not in ("item", "external_id", "sentence_idx")]
    st.dataframe(
        shown[["item #", "external_id", "sentence #", *rest]],
        hide_index=True,
        width="stretch",
        column_config={"sentence": st.column_config.TextColumn(width="large")},
    )


# -- export / import ------------------------------------------------------------------------------
def export_view() -> None:
    name = Path(ds_names[dataset_id].split(" · ")[0]).name.replace(" ", "_") or "dataset"
    st.markdown("##### Export")
    st.caption(
        "One row per item, sentence and annotator: the dataset's external_id, the item's position, the sentence "
        "index (from 0) and text, the annotator's name, the label (1 consistent, 0 inconsistent), the note and "
        "the times."
    )
    row = st.container(horizontal=True)
    for fmt, mime in (("jsonl", "application/jsonl"), ("csv", "text/csv")):
        row.download_button(
            f"Download labels ({fmt.upper()})",
            annotations.export_labels(eng, dataset_id, fmt),
            file_name=f"{name}-labels.{fmt}",
            mime=mime,
            icon=":material/download:",
            key=f"an_export_{fmt}",
        )
    st.markdown("##### Import")
    st.caption(
        "The same columns; rows are matched to items by external_id and to sentences by index (a row whose "
        "sentence text differs is rejected). Missing annotators are created by name; a label replaces the same "
        "annotator's label of that sentence."
    )
    upload = st.file_uploader("Labels file", type=["jsonl", "json", "csv"], key="an_import_file")
    if upload is not None and st.button("Import labels", type="primary", icon=":material/upload:", key="an_do_import"):
        fmt = "csv" if upload.name.lower().endswith(".csv") else "jsonl"
        try:
            n, rejected = annotations.import_labels(eng, dataset_id, upload.getvalue(), fmt)
        except InputError as exc:
            st.session_state.an_import = {"error": str(exc)}
        else:
            st.session_state.an_import = {"n": n, "rejected": [{"row": r.row, "reason": r.reason} for r in rejected]}
    outcome = st.session_state.an_import
    if outcome:
        if "error" in outcome:
            st.error(outcome["error"])
        else:
            st.success(f"Imported {outcome['n']} label(s).")
            if outcome["rejected"]:
                st.warning(f"{len(outcome['rejected'])} row(s) rejected:")
                st.dataframe(outcome["rejected"], hide_index=True, width="stretch")


{"Annotate": queue_view, "Agreement": agreement_view, "Export / import": export_view}[view or VIEWS[0]]()
