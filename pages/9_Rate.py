"""Rate: a person rates a ConsEval study's items on the study's scales, through their personal link (?token=...)."""

import html

import streamlit as st

from components.access import is_owner
from components.ui import engine, page_setup
from services import conseval as ce
from services.errors import InputError

page_setup("Rate", ":material/how_to_vote:", link="rater")
eng = engine()
st.session_state.setdefault("rt_idx", None)
st.session_state.setdefault("rt_flash", None)
if "rt_next" in st.session_state:  # set by "Save and next" in the previous run
    st.session_state.rt_idx = st.session_state.pop("rt_next")

st.title("Rate")
token = st.query_params.get("token")
if not token:
    st.info("This page opens through a personal link (`/Rate?token=...`) sent by the lead of a ConsEval study.")
    if is_owner():
        st.caption("Rater links are made on the ConsEval page, under **Human raters** below a chosen study.")
        st.page_link("pages/8_ConsEval.py", label="ConsEval → Human raters", icon=":material/balance:")
    st.stop()
me = ce.rater_by_token(eng, token)
if me is None:
    st.error("This link is not valid: it may have been revoked. Ask the study's lead for a new one.")
    st.stop()
study = ce.get_study(eng, me.study_id)
cfg = ce.StudyConfig.from_dict(study.config)
items = ce.items_frame(eng, study.id)
if items.empty:
    st.info("This study has no items.")
    st.stop()
mine = ce.human_ratings_frame(eng, study.id)
mine = mine[mine["rater_id"] == me.id]
given = {(int(r.item_id), r.scale): float(r.value) for r in mine.itertuples()}
complete = [all((int(i), s) in given for s in cfg.scales) for i in items["id"]]

st.markdown(f"You are **{html.escape(me.name)}**, rating for the study *{html.escape(study.name)}*.")
st.caption(
    "Read the query and the response, then pick a score on each scale for the criterion shown. There is no right "
    "answer to copy: rate as you judge. You can come back to any item and change your scores."
)
n_done = sum(complete)
st.progress(n_done / len(items), text=f"{n_done} of {len(items)} items rated on every scale")
if st.session_state.rt_flash:
    st.success(st.session_state.rt_flash)
    st.session_state.rt_flash = None

n_items = len(items)
if st.session_state.rt_idx is None or not 0 <= st.session_state.rt_idx < n_items:
    st.session_state.rt_idx = next((i for i, c in enumerate(complete) if not c), 0)


def _label(i: int) -> str:
    row = items.iloc[i]
    return f"{'✓' if complete[i] else '○'} {i + 1}. {row.criterion}: {row.query[:60]}"


st.selectbox("Item", list(range(n_items)), format_func=_label, key="rt_idx")
item = items.iloc[st.session_state.rt_idx]
item_id = int(item["id"])
definition = cfg.definition(item.criterion, "long" if "long" in cfg.granularities else cfg.granularities[-1])
definition = definition or cfg.definition(item.criterion, "short") or cfg.definition(item.criterion, "long")

with st.container(border=True):
    st.markdown(
        f"**Criterion: {html.escape(item.criterion)}**" + (f" — {html.escape(definition)}" if definition else "")
    )
    st.markdown("**Query**")
    st.markdown(f"<div class='cs-text'>{html.escape(item.query)}</div>", unsafe_allow_html=True)
    st.markdown("**Response**")
    st.markdown(f"<div class='cs-text'>{html.escape(item.response)}</div>", unsafe_allow_html=True)

with st.form(f"rt_form_{item_id}"):
    chosen = {}
    for key in cfg.scales:
        sc = ce.SCALES[key]
        values = sc.choices()
        current = given.get((item_id, key))
        chosen[key] = st.radio(
            f"{key} ({sc.options})",
            values,
            index=values.index(current) if current in values else None,
            format_func=sc.format,
            horizontal=True,
            key=f"rt_{item_id}_{key}",
        )
    c = st.columns(2)
    save_next = c[0].form_submit_button("Save and next", type="primary", icon=":material/arrow_forward:")
    save = c[1].form_submit_button("Save", icon=":material/save:")

if save or save_next:
    picked = {k: v for k, v in chosen.items() if v is not None}
    try:
        for key, value in picked.items():
            ce.save_human_rating(eng, me.id, item_id, key, value)
    except InputError as exc:
        st.error(str(exc))
    else:
        left = [k for k in cfg.scales if k not in picked]
        st.session_state.rt_flash = f"Saved {len(picked)} score(s) for item {st.session_state.rt_idx + 1}." + (
            f" Not yet rated on: {', '.join(left)}." if left else ""
        )
        if save_next and st.session_state.rt_idx + 1 < n_items:
            st.session_state.rt_next = st.session_state.rt_idx + 1
        st.rerun()
