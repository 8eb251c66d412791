"""ConsEval: how consistent is an LLM evaluator? Set up a study, run it in the worker, read alpha and accuracy."""

import html

import streamlit as st

from components import conseval as view
from components.ui import batch_worker, demo_notice, engine, page_setup
from services import conseval as ce
from services import estimates
from services.errors import InputError
from services.jobs import queue as jobs

backend = page_setup("ConsEval", ":material/balance:")
eng = engine()
batch_worker()
st.session_state.setdefault("ce_selected", None)
st.session_state.setdefault("ce_flash", None)
param = st.query_params.get("study")
if param and param.isdigit():
    st.session_state.ce_selected = int(param)
if "ce_next" in st.session_state:  # a study chosen by a button after the selector was drawn
    st.session_state.ce_selected = st.session_state.pop("ce_next")

st.title("ConsEval")
st.caption(
    "How consistent is an LLM evaluator? Each model rates query/response pairs under a criterion on several "
    "scales. **Self-consistency**: Krippendorff's α across n samples at temperature 1.0. **Inter-consistency**: "
    "α between scales (Table 4) and between greedy and sampled decoding. **Accuracy**: Pearson r against an "
    "oracle model or people. Every α has a bootstrap 95% interval and its n."
)

if st.session_state.ce_flash:
    kind, msg = st.session_state.ce_flash
    getattr(st, kind)(msg)
    st.session_state.ce_flash = None

studies = ce.list_studies(eng)

# -- a new study ----------------------------------------------------------------------------------
with st.expander("New study", expanded=not studies, icon=":material/add_circle:"):
    demo_notice(backend)
    small = backend.is_embedded  # the demo model takes a second or more per answer: start with a small study
    if small:
        st.caption(
            "Defaults are cut down for the embedded demo model (short definitions only, n = 3, 4 items per "
            "criterion); the paper's defaults are all three definitions and n = 5."
        )
    c = st.columns([3, 2])
    criteria = c[0].multiselect("Criteria", list(ce.CRITERIA), default=["Harmlessness", "Conciseness"], key="ce_crit")
    grans = c[1].multiselect(
        "Definitions",
        list(ce.GRANULARITIES),
        default=["short"] if small else list(ce.GRANULARITIES),
        key="ce_gran",
        help="None, a short phrase or a paragraph (Appendix B).",
    )
    with st.popover("Add your own criterion", icon=":material/add:"):
        st.text_input("Name", key="ce_own_name", placeholder="e.g. Politeness")
        st.text_input("Short definition", key="ce_own_short")
        st.text_area("Long definition", key="ce_own_long", height=100)
    own_name = (st.session_state.get("ce_own_name") or "").strip()
    if own_name:
        criteria = [*criteria, own_name] if own_name not in criteria else criteria
        st.caption(f"Own criterion **{html.escape(own_name)}** is part of the study (it needs uploaded items).")
    scales = st.multiselect(
        "Scales (Table 2)",
        list(ce.SCALES),
        default=list(ce.SCALES),
        key="ce_scales",
        help="Inter-consistency cases need their scales: 5-P/7-P/11-P (POS), 5-P/Likert, 11-P POS/NEG, Binary/10-P.",
    )
    c = st.columns([1, 1, 2, 1])  # the methods' chips need room: a quarter of the form cuts "Base prompt" off
    n_samples = c[0].number_input(
        "Samples n", 0, 50, 3 if small else 5, key="ce_n", help="At temperature 1.0; 0 skips sampling."
    )
    greedy = c[1].toggle("Greedy answer too", value=True, key="ce_greedy", help="One answer at temperature 0.")
    methods = c[2].multiselect(
        "Methods", list(ce.METHODS), default=["base"], format_func=ce.METHODS.get, key="ce_methods"
    )
    k = c[3].number_input("k examples (dICL)", 1, 20, 5, key="ce_k")
    st.markdown("**Models**")
    c = st.columns([2, 3])
    use_current = c[0].checkbox(f"The backend in use: {backend.model}", value=True, key="ce_use_current")
    extra = c[1].text_area(
        "More OpenAI-compatible endpoints, one per line: `name | base URL | model`",
        key="ce_extra",
        height=68,
        placeholder="llama | http://localhost:8000/v1 | meta-llama/Llama-2-7b-chat-hf",
        help="Keys come from LLM_API_KEY / OPENAI_API_KEY in the worker's environment, never from this page.",
    )
    c = st.columns([2, 3])
    oracle = c[0].selectbox(
        "Oracle (for dICL and accuracy)", list(ce.ORACLES), format_func=ce.ORACLES.get, key="ce_oracle"
    )
    oracle_lines = c[1].text_area(
        "Oracle endpoints, one per line: `name | base URL | model`",
        key="ce_oracle_ep",
        height=68,
        disabled=oracle != "endpoint",
        placeholder="gpt-4-turbo | https://api.openai.com/v1 | gpt-4-turbo",
        help="The paper pools GPT-4-Turbo and Gemini-Pro: dICL draws from every oracle's evaluations, and accuracy "
        "is reported against each.",
    )
    c = st.columns(2)
    # Radios, not select boxes: the options are sentences, which a select box cuts short.
    answer_format = c[0].radio(
        "Reply", list(ce.ANSWER_FORMATS), format_func=ce.ANSWER_FORMATS.get, key="ce_answer_format"
    )
    split = c[1].radio(
        "Items for dICL",
        list(ce.SPLITS),
        format_func=ce.SPLITS.get,
        key="ce_split",
        disabled=not any(m.startswith("dicl") for m in methods),
    )
    st.markdown("**Items**")
    c = st.columns([2, 3, 2])
    source = c[0].radio("Source", ["Bundled sample set", "Upload JSONL or CSV"], key="ce_source")
    upload = c[1].file_uploader(
        "query, response, optional criterion and score",
        type=["jsonl", "csv", "json"],
        key="ce_upload",
        disabled=source.startswith("Bundled"),
    )
    score_scale = c[2].selectbox(
        "Scale of the uploaded scores", list(ce.SCALES), key="ce_score_scale", disabled=source.startswith("Bundled")
    )
    c = st.columns(4)
    limit = c[0].number_input(
        "Items per criterion (0: all)",
        0,
        10_000,
        4 if small else 0,
        key="ce_limit",
        help="The embedded demo model takes about a second per answer here: start small.",
    )
    n_boot = c[1].number_input("Bootstrap resamples", 0, 10_000, 1000, step=100, key="ce_boot")
    seed = c[2].number_input("Seed", 0, 2**31 - 1, 0, key="ce_seed")
    name = c[3].text_input("Name", placeholder="optional", key="ce_name")

    def build():
        models = ([ce.ModelSpec.of(backend)] if use_current else []) + ce.endpoint_lines(extra)
        oracles = ce.endpoint_lines(oracle_lines, what="Oracle") if oracle == "endpoint" else []
        own = {}
        if own_name:
            own[own_name] = {
                "short": st.session_state.get("ce_own_short") or "",
                "long": st.session_state.get("ce_own_long") or "",
            }
        cfg = ce.StudyConfig(
            criteria=criteria,
            scales=scales,
            granularities=grans,
            models=models,
            definitions=own,
            n_samples=int(n_samples),
            greedy=greedy,
            methods=methods,
            k=int(k),
            oracle=oracle,
            oracle_models=oracles,
            answer_format=answer_format,
            split=split,
            seed=int(seed),
            n_boot=int(n_boot),
            concurrency=int(backend.concurrency),
        )
        cfg.validate()
        if source.startswith("Bundled"):
            items = ce.sample_items([c for c in criteria if c in ce.CRITERIA], int(limit) or None)
        else:
            if upload is None:
                raise InputError("Upload a JSONL or CSV file with query and response columns.")
            items = ce.read_items(upload.getvalue(), upload.name, criteria=criteria, score_scale=score_scale)
            items = ce.limit_items(items, int(limit))
        return cfg, items

    try:
        cfg, items = build()
        oracle_calls, calls = ce.plan_for_items(cfg, items)
        st.info(
            f"{len(items)} items × {len(cfg.granularities)} definition(s) × {len(cfg.scales)} scales × "
            f"{cfg.n_samples + int(cfg.greedy)} answers × {len(cfg.models)} model(s) × {len(cfg.methods)} method(s)"
            + (" on the 20% test share (section 7.1)" if cfg.uses_split() else "")
            + f" = **{len(calls) + len(oracle_calls):,} answers** to ask (cached answers cost no call).",
            icon=":material/calculate:",
        )
        problem = None
    except InputError as exc:
        problem = str(exc)
        st.warning(problem, icon=":material/warning:")
    if problem is None:
        all_calls = [*calls, *oracle_calls]
        sizes = [len(it.query) + len(it.response) for it in items]
        chars = sum(
            sizes[c.item_id] * (1 + int(cfg.k) * c.method.startswith("dicl")) if c.item_id < len(sizes) else 0
            for c in all_calls
        )
        est = estimates.text_estimate(
            eng, backend, prompt_chars=chars, calls=len(all_calls), concurrency=cfg.concurrency
        )
        st.caption(est.summary() + (" Priced at the backend in use." if len(cfg.models) > 1 else ""))
        st.caption(
            "Models: "
            + "; ".join(
                f"**{m.label}**"
                + (f" (`{m.model}` at `{m.base_url}`)" if m.kind != "embedded" else " (embedded, offline)")
                for m in cfg.models
            )
        )
    if st.button(
        "Start study", type="primary", icon=":material/play_arrow:", disabled=problem is not None, key="ce_start"
    ):
        try:
            sid = ce.create_study(eng, cfg, items, name=name)
        except InputError as exc:
            st.error(str(exc))
        else:
            jobs.enqueue_conseval(sid)
            st.session_state.ce_next = sid
            st.query_params["study"] = str(sid)
            st.session_state.ce_flash = ("success", f"Study {sid} started in the background worker.")
            st.rerun()

if not studies:
    st.stop()

# -- a study --------------------------------------------------------------------------------------
ids = [s.id for s in studies]
if st.session_state.ce_selected not in ids:
    if param and param.isdigit() and int(param) == st.session_state.ce_selected:  # a link to no study
        st.warning(f"There is no study #{param} (deleted, or the link is wrong); showing study #{ids[0]}.")
    st.session_state.ce_selected = ids[0]
labels = {s.id: f"#{s.id} · {s.name}" for s in studies}  # the status is under it: a label in a selector goes stale
st.selectbox("Study", ids, format_func=labels.get, key="ce_selected")
st.query_params["study"] = str(st.session_state.ce_selected)
sid = st.session_state.ce_selected


study = ce.get_study(eng, sid)
ACTIVE = ("queued", "running")


# Polls only while the study is waiting or running: a finished study's page has nothing to follow, and a poll
# every 2 s kept the browser redrawing (and the server running the fragment) for as long as the tab was open.
@st.fragment(run_every=2.0 if study is not None and study.status in ACTIVE else None)
def progress() -> None:
    s = ce.get_study(eng, sid)
    if s is None:
        return
    view.render_progress(s, backend)
    c = st.columns(4)
    if s.status in ("queued", "running") and not s.cancel_requested:
        if c[0].button("Cancel", icon=":material/stop:", key="ce_cancel"):
            ce.request_cancel(eng, sid)
    elif s.status in ("cancelled", "failed") or s.cancel_requested:
        if c[0].button(
            "Resume", icon=":material/replay:", key="ce_resume", help="Answers already saved are never asked again."
        ):
            ce.reopen(eng, sid)
            jobs.enqueue_conseval(sid)
            st.rerun(scope="app")  # the whole page again, so the progress polls while the study runs
    prev = st.session_state.get("ce_seen")
    st.session_state.ce_seen = (sid, s.status)
    if prev is not None and prev[0] == sid and prev[1] in ACTIVE and s.status != prev[1]:
        st.rerun()  # the study ended while the page was open: draw its results


progress()
study = ce.get_study(eng, sid)  # again: the progress may have just seen it end
cfg = ce.StudyConfig.from_dict(study.config)
with st.expander("Configuration", icon=":material/settings:"):
    st.markdown(
        f"**Criteria** {', '.join(cfg.criteria)} · **definitions** {', '.join(cfg.granularities)} · **scales** "
        f"{', '.join(cfg.scales)} · **n** {cfg.n_samples} · greedy {'yes' if cfg.greedy else 'no'} · **methods** "
        f"{', '.join(ce.METHODS[m] for m in cfg.methods)} · k {cfg.k} · **oracle** {ce.ORACLES[cfg.oracle]} · "
        f"**models** {', '.join(m.label for m in cfg.models)} · bootstrap {cfg.n_boot} · seed {cfg.seed}"
    )
if study.status == "done":
    n_wait = ce.n_without_examples(eng, sid)
    if n_wait:
        st.warning(
            f"{n_wait:,} dICL answers were not asked: the oracle had no example for them yet (with human raters as "
            "the oracle, people rate first). Ask them again once there are ratings.",
            icon=":material/info:",
        )
        if st.button("Ask them again", icon=":material/replay:", key="ce_reask"):
            ce.forget_without_examples(eng, sid)
            jobs.enqueue_conseval(sid)
            st.rerun()
    view.render_results(study, ce.ratings_frame(eng, sid))

st.subheader("Human raters")
st.caption(
    "People rate the same items on the same scales through a personal link (the Rate page). Links are "
    "unguessable and can be revoked; ratings stay."
)


def _add_rater() -> None:
    try:
        r = ce.add_rater(eng, sid, st.session_state.get("ce_rater_name", ""))
    except InputError as exc:
        st.session_state.ce_flash = ("error", str(exc))
    else:
        st.session_state.ce_flash = ("success", f"Rater {r.name} added; send them the link below.")
        st.session_state.ce_rater_name = ""


def _revoke(rater_id: int) -> None:
    ce.revoke_rater(eng, rater_id)


c = st.columns([3, 1, 2], vertical_alignment="bottom")
c[0].text_input("New rater", key="ce_rater_name", placeholder="Their name")
c[1].button("Add rater", on_click=_add_rater, icon=":material/person_add:", key="ce_add_rater")
if study.status == "done" and c[2].button(
    "Recompute results", icon=":material/refresh:", key="ce_refresh", help="Include the newest human ratings."
):
    ce.refresh_results(eng, sid)
    st.session_state.ce_flash = ("success", "Results recomputed with the newest human ratings.")
    st.rerun()
study_items = ce.items_frame(eng, sid)
view.render_raters(ce.list_raters(eng, sid), len(study_items), len(cfg.scales), _revoke)
matrix = view.rating_matrix(ce.human_ratings_frame(eng, sid), study_items, len(cfg.scales))
if not matrix.empty:
    with st.expander("Who has rated what", icon=":material/grid_on:"):
        st.dataframe(matrix, hide_index=True, width="stretch")

with st.expander("Delete this study", icon=":material/delete:"):
    st.caption("Removes the study, its items, answers, raters and their ratings. Cached model answers stay.")
    if st.button("Delete study", key="ce_delete", type="secondary"):
        ce.delete_study(eng, sid)
        st.session_state.ce_next = None
        st.query_params.pop("study", None)
        st.session_state.ce_flash = ("success", f"Study {sid} deleted.")
        st.rerun()
