"""DHP: how well does an LLM evaluator discern perturbed texts? Perturb, benchmark, read D; run the expert survey."""

import json

import pandas as pd
import streamlit as st

from components import dhp as view
from components.ui import batch_worker, demo_notice, engine, page_setup
from services import dhp, estimates
from services.dhp import survey as sv
from services.dhp.catalogue import KINDS, custom_task
from services.export import frame_csv
from services.jobs import queue as jobs

backend = page_setup("DHP", ":material/troubleshoot:")
batch_worker()

VIEWS = ["Texts", "Benchmark", "Results", "Expert survey", "Tasks"]
for key, default in {"dhp_flash": None, "dhp_set": None, "dhp_survey": None}.items():
    st.session_state.setdefault(key, default)
# A link to a view (?view=Expert survey, from the Survey page) opens it, also in a session that has been here:
# the URL names a view other than the one this page last wrote into it.
view_param = st.query_params.get("view")
if view_param in VIEWS and view_param != st.session_state.get("dhp_view_written"):
    st.session_state.dhp_view = view_param
st.session_state.setdefault("dhp_view", "Texts")


def flash(kind: str, msg: str) -> None:
    st.session_state.dhp_flash = (kind, msg)


st.title("DHP: discernment of LLM evaluators")
st.caption(
    "Good texts are degraded on purpose at the character, word and sentence level (Tables 1-2 of the DHP paper); "
    "an evaluator model scores originals and perturbed texts separately, and a one-sided Wilcoxon test per metric "
    "asks whether it scored the perturbed ones lower. The p-values combine into a discernment score "
    "D = log₀.₀₅(p): **D > 1 means the evaluator noticed the problem** (p < 0.05)."
)
if st.session_state.dhp_flash:
    kind, msg = st.session_state.dhp_flash
    getattr(st, kind)(msg)
    st.session_state.dhp_flash = None

tasks = dhp.tasks(engine())
task_by_key = {t.key: t for t in tasks}
if "dhp_next_task" in st.session_state:  # a task just added: select it before the selector is drawn
    st.session_state.dhp_task = st.session_state.pop("dhp_next_task")
if st.query_params.get("task") in task_by_key and "dhp_task" not in st.session_state:
    st.session_state.dhp_task = st.query_params["task"]
top = st.columns([2, 3])
task_key = top[0].selectbox(
    "Task",
    list(task_by_key),
    key="dhp_task",
    format_func=lambda k: task_by_key[k].name,
    help="The NLG task: what is evaluated, against what, on which metrics. Add your own under Tasks.",
)
st.query_params["task"] = task_key
task = task_by_key[task_key]
with top[1]:
    view.render_task_summary(task)

section = st.segmented_control("Section", VIEWS, key="dhp_view", label_visibility="collapsed") or "Texts"
st.query_params["view"] = st.session_state.dhp_view_written = section

sets = dhp.sets(engine(), task_key)
set_ids = [x.id for x in sets]
set_by_id = {x.id: x for x in sets}


def pick_set(label: str = "Perturbation set") -> int | None:
    if not sets:
        st.info("No perturbation set for this task yet: make one under **Texts**.")
        return None
    if st.session_state.dhp_set not in set_ids:
        st.session_state.dhp_set = set_ids[0]
    return st.selectbox(
        label,
        set_ids,
        key="dhp_set",
        # No status in the label: a selectbox keeps the label it was given, so a status in it would go stale.
        format_func=lambda i: f"#{i} · {set_by_id[i].name} · {len(set_by_id[i].items)} items",
    )


# -- Texts ---------------------------------------------------------------------------------------------
def texts_section() -> None:
    with st.expander("Make a perturbation set", expanded=not sets):
        samples = dhp.sample_items(task_key)
        origin = st.radio(
            "Good texts",
            ["Sample texts", "Upload"] if samples else ["Upload"],
            horizontal=True,
            key="dhp_origin",
            help="Upload JSONL, JSON or CSV with id, text, source (and wrong_ending for story endings).",
        )
        items = samples
        if origin == "Upload":
            up = st.file_uploader("Items file", type=["jsonl", "json", "csv"], key="dhp_upload")
            items = []
            if up is not None:
                try:
                    items = dhp.parse_items_upload(up.name, up.getvalue())
                except ValueError as exc:
                    st.error(f"This file cannot be used: {exc}")
        st.caption(f"{len(items)} item(s)" + (f", e.g. “{items[0].text[:90]}…”" if items else ""))
        c = st.columns([3, 1])
        name = c[0].text_input("Name", key="dhp_set_name", placeholder=f"{task.name} · samples")
        seed = c[1].number_input("Seed", 0, 2**31 - 1, 0, key="dhp_seed", help="Same seed, same perturbed texts.")
        keys = [p.key for p in task.perturbations]
        labels = {p.key: p.label for p in task.perturbations}
        default = keys
        if backend.is_embedded:  # every perturbation, scored r times, takes hours on the demo model
            first: dict[str, str] = {}
            for p in task.perturbations:
                if p.spec.method == "rule":
                    first.setdefault(p.level, p.key)
            default = list(first.values()) or keys
            st.caption(
                "Cut down for the embedded demo model: the first rule-based perturbation of each level that has "
                "one. The paper's benchmark uses all of them; add them back here."
            )
        chosen = st.multiselect("Perturbations", keys, default=default, format_func=labels.get, key="dhp_perts")
        n_llm = sum(task.perturbation(k).spec.method == "llm" for k in chosen)
        use_llm = st.toggle(
            f"Make the {n_llm} LLM-based perturbation(s) with {backend.model}",
            value=n_llm > 0,
            key="dhp_use_llm",
            disabled=n_llm == 0,
            help="They run in the background worker; rule-based ones are made at once.",
        )
        if st.button("Make the set", type="primary", disabled=not items or not chosen, key="dhp_make"):
            chosen_backend = backend if use_llm else None
            sid = dhp.make_set(engine(), task, items, name=name, seed=int(seed), backend=chosen_backend, only=chosen)
            if use_llm and n_llm:
                jobs.enqueue_dhp("perturb", sid)
            st.session_state.dhp_set = sid
            flash(
                "success",
                f"Set #{sid} made"
                + (" — the LLM-based perturbations are being written." if use_llm and n_llm else "."),
            )
            st.rerun()
    sid = pick_set()
    if sid is None:
        return
    live_set(sid)


def set_status(sid: int) -> None:
    """The set's status, polled only while its LLM-based perturbations are being written: a poll every 2 s of a
    finished set kept the browser redrawing for as long as the page was open (it never settled)."""
    known = set_by_id.get(sid)
    st.fragment(_set_status, run_every=2.0 if known is not None and known.status == "generating" else None)(sid)


def _set_status(sid: int) -> None:
    cur = dhp.find_set(engine(), sid)
    if cur is None:
        return
    if cur.status == "generating":
        st.info(
            f"Writing the LLM-based perturbations with {cur.model}… (background worker)",
            icon=":material/hourglass_top:",
        )
        # A worker that stopped mid-way leaves texts pending; handing the set over again finishes only those.
        if st.button("Hand to the worker again", key=f"dhp_resume_set_{sid}", help="If nothing moves for a while."):
            jobs.enqueue_dhp("perturb", sid)
    elif st.session_state.get("dhp_seen_set") == (sid, "generating"):
        st.session_state.dhp_seen_set = (sid, cur.status)
        st.rerun()
    st.session_state.dhp_seen_set = (sid, cur.status)
    if cur.error:
        st.warning(cur.error)


def live_set(sid: int) -> None:
    set_status(sid)
    texts = dhp.set_texts(engine(), sid)
    pert = texts[texts["perturbation"] != dhp.ORIGINAL]
    if pert.empty:
        st.info("This set holds only originals.")
        return
    known = {p.key: p.label for p in task.perturbations}
    summary = view.render_set_summary(pert, known)
    c = st.columns(2)
    which = c[0].selectbox(
        "Perturbation", list(summary["perturbation"]), key="dhp_view_pert", format_func=lambda k: known.get(k, k)
    )
    rows = pert[pert["perturbation"] == which]
    item = c[1].selectbox("Item", list(rows["item_id"]), key="dhp_view_item")
    row = rows[rows["item_id"] == item].iloc[0]
    st.markdown("**Perturbed text, as a diff of its original**")
    view.render_diff(row["original"], row["text"], detail=row["detail"], error=row["error"])
    with st.expander("Original"):
        view.render_text(row["original"])
    st.download_button(
        "Download the texts (CSV)",
        frame_csv(texts).encode(),
        f"dhp_set_{sid}.csv",
        "text/csv",
        icon=":material/download:",
    )


# -- Benchmark -----------------------------------------------------------------------------------------------
def benchmark_section() -> None:
    demo_notice(backend)
    sid = pick_set()
    if sid is None:
        return
    cur = set_by_id[sid]
    if cur.status == "generating":
        st.info("The set's LLM-based perturbations are still being written; runs started now skip them.")
    texts = dhp.set_texts(engine(), sid)["text"].dropna()
    n_texts, text_chars = int(len(texts)), int(texts.str.len().sum())
    with st.container(border=True):  # no form: Enter in a field only sets its value, it never starts a run
        st.markdown("**Run the benchmark**: every text scored on every metric, r times, averaged.")
        c = st.columns([3, 1, 1])
        models = c[0].text_input(
            "Evaluator models",
            value=backend.model,
            key="dhp_models",
            help=f"Comma-separated model names at {backend.public_url or 'the embedded server'}; one run each.",
        )
        repeats = c[1].number_input(
            "Repeats r",
            1,
            20,
            1 if backend.is_embedded else 5,
            key="dhp_repeats",
            help="The paper averages 5 scores per text; the demo model starts at 1 to keep a run short.",
        )
        fmt = st.selectbox("Reply", list(dhp.ANSWER_FORMATS), format_func=dhp.ANSWER_FORMATS.get, key="dhp_fmt")
        seed = c[2].number_input(
            "Seed", 0, 2**31 - 1, 0, key="dhp_run_seed", help="Goes into each request's cache key."
        )
        names = [m.strip() for m in models.split(",") if m.strip()]
        calls = n_texts * len(task.metrics) * int(repeats) * len(names)
        estimate = (
            f", {view.duration(calls * view.DEMO_SECONDS_PER_SCORE)} with the demo model" if backend.is_embedded else ""
        )
        st.caption(
            f"{n_texts} texts × {len(task.metrics)} metrics × r = {int(repeats)} × {len(names)} model(s) = "
            f"**{calls:,} model calls**{estimate} (cached answers cost no call)."
        )
        if not backend.is_embedded and calls:
            per_text = text_chars * len(task.metrics) * int(repeats) * len(names)
            est = estimates.text_estimate(
                engine(), backend, prompt_chars=per_text, calls=calls, concurrency=backend.concurrency
            )
            st.caption(est.summary())
        if backend.is_embedded and calls * view.DEMO_SECONDS_PER_SCORE > 15 * 60:
            st.warning(
                "This run would take a long time on the demo model: lower r, or make a set with fewer "
                "perturbations, or connect a faster model in Settings.",
                icon=":material/schedule:",
            )
        where = "the embedded server (offline)" if backend.is_embedded else f"`{backend.public_url}`"
        st.caption(f"Model(s): {', '.join(f'`{n}`' for n in names) or 'none named'} at {where} · change it on Settings")
        go_run = st.button("Run", type="primary", icon=":material/play_arrow:", key="dhp_run", disabled=not calls)
    if go_run:
        if not names:
            st.error("Name at least one model.")
        else:
            evaluators = [backend.with_changes(model=m) for m in names]
            ids, repeated = dhp.start_runs(
                engine(), sid, evaluators, repeats=int(repeats), seed=int(seed), answer_format=fmt
            )
            for rid in ids:
                jobs.enqueue_dhp("run", rid)
            msg = ""
            if ids:
                msg = f"{len(ids)} run(s) handed to the background worker: " + ", ".join(f"#{i}" for i in ids)
            if repeated:
                msg += (
                    (" " if msg else "")
                    + "Not started again: "
                    + "; ".join(
                        f"run #{r.id} ({r.model}, r = {r.repeats}, seed {r.seed}) is {r.status} with the same settings"
                        for r in repeated
                    )
                    + "."
                )
            flash("success" if ids else "warning", msg)
            st.rerun()
    runs_live(sid)


ACTIVE = ("queued", "running")


def runs_live(sid: int) -> None:
    """The set's runs, polled only while one is waiting or running (see set_status)."""
    active = any(r.status in ACTIVE for r in dhp.runs(engine(), sid))
    st.session_state.dhp_runs_polled = active
    st.fragment(_runs_live, run_every=2.0 if active else None)(sid)


def _runs_live(sid: int) -> None:
    runs = dhp.runs(engine(), sid)
    if st.session_state.get("dhp_runs_polled") and not any(r.status in ACTIVE for r in runs):
        st.rerun(scope="app")  # every run has ended: draw them once more, and stop polling
    if not runs:
        st.caption("No run on this set yet.")
        return
    for r in runs:
        box = st.container(border=True)
        head = box.columns([4, 1])
        head[0].markdown(f"**Run #{r.id} · {r.model}** · r = {r.repeats} · status **{r.status}**")
        frac = (r.n_done / r.n_total) if r.n_total else 0.0
        box.progress(min(1.0, frac), text=f"{r.n_done} of {r.n_total} scores · {r.n_failed} failed")
        answered, retries = estimates.calls_text(r.calls, r.answered)
        line = f"Model calls: {answered} answered · {retries} retries · {r.cache_hits or 0:,} from the cache"
        if r.status in ("done", "failed", "cancelled"):
            spent = estimates.spent(
                backend,
                model=r.model,
                base_url=r.base_url,
                kind=r.backend_kind,
                input_tokens=r.prompt_tokens,
                output_tokens=r.completion_tokens,
            )
            line += " · " + spent.summary()
        box.caption(line)
        if r.error:
            box.error(r.error)
        if r.status in ACTIVE and head[1].button("Cancel", key=f"dhp_cancel_{r.id}"):
            dhp.cancel_run(engine(), r.id)
            st.rerun()


# -- Results -------------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def discernment(run_id: int, weights: str, stamp: tuple) -> dhp.DiscernmentResult | None:
    """A run's D, kept until its scores change (`stamp`: status and counts): its Wilcoxon tests with ties are
    permutation tests, most of this view's server time on every rerun."""
    return dhp.discernment_of(engine(), run_id, json.loads(weights))


def results_section() -> None:
    sid = pick_set()
    if sid is None:
        return
    runs = [r for r in dhp.runs(engine(), sid) if r.n_done > 0]
    surveys = [x for x in sv.surveys(engine(), task_key) if x.status == "closed"]
    if not runs:
        st.info("No scores yet: start a run under **Benchmark**.")
        return
    # A cancelled or failed run holds part of the scores: it can be picked, but is not shown by default.
    complete = [r.id for r in runs if r.status not in ("cancelled", "failed")]

    def run_label(i: int) -> str:
        r = next(r for r in runs if r.id == i)
        partial = f" (partial: {r.n_done} of {r.n_total} scores)" if r.n_done < r.n_total else ""
        return f"#{r.id} · {r.model} · {r.status}{partial}"

    chosen = st.multiselect(
        "Evaluator runs (side by side)",
        [r.id for r in runs],
        default=complete[:4],
        key="dhp_res_runs",
        format_func=run_label,
        help="Cancelled and failed runs are left out unless you pick them.",
    )
    options = [None, *[x.id for x in surveys]]
    names = {x.id: f"closed survey #{x.id} · {x.title}" for x in surveys}
    survey_id = st.selectbox(
        "Expert weights (for D_EW)",
        options,
        key="dhp_res_survey",
        index=1 if surveys else 0,
        format_func=lambda i: "none (D_EW not computed)" if i is None else names[i],
        help="Only closed surveys feed D_EW. Run one under Expert survey.",
    )
    weights = None
    if survey_id is not None:
        weights = sv.survey_weights(engine(), survey_id).weights
    results = []
    for rid in chosen:
        run = next(r for r in runs if r.id == rid)
        try:
            res = discernment(rid, json.dumps(weights, sort_keys=True), (run.status, run.n_done, run.n_failed))
        except ValueError as exc:
            st.error(f"Run #{rid}: {exc}")
            continue
        if res is not None:
            label = (
                res.model if sum(r.model == run.model for r in runs if r.id in chosen) == 1 else f"{res.model} #{rid}"
            )
            results.append(_relabel(res, label))
    if not results:
        st.info("Pick at least one run with scores.")
        return
    view.render_result_notes(results, len(set_by_id[sid].items))
    view.render_result_metrics(results)
    view.render_overall_figure(results, has_weights=weights is not None)
    measures = ["D", "D_wilson"] if weights is None else ["D", "D_EW", "D_wilson"]
    measure = st.radio("Per perturbation", measures, horizontal=True, key="dhp_res_measure")
    labels = {p.key: p.label for p in task.perturbations}
    view.render_perturbation_figure(results, labels, measure)
    view.render_result_tables(results, labels)


def _relabel(res: dhp.DiscernmentResult, label: str) -> dhp.DiscernmentResult:
    from dataclasses import replace

    return replace(res, model=label)


# -- Expert survey ---------------------------------------------------------------------------------------
def survey_section() -> None:
    surveys = sv.surveys(engine(), task_key)
    with st.expander("Create a survey", expanded=not surveys):
        st.caption(
            f"Experts read the task and metric definitions of **{task.name}** and, for each of its "
            f"{len(task.kinds())} quality issues, choose the metric it impacts most. Their vote shares become "
            "the expert weights of D_EW."
        )
        title = st.text_input("Title", key="dhp_sv_title", placeholder=f"{task.name}: expert weights")
        if st.button("Create survey", type="primary", key="dhp_sv_create"):
            new = sv.new_survey(engine(), task, title)
            st.session_state.dhp_survey = new
            flash("success", f"Survey #{new} created: invite experts below.")
            st.rerun()
    if not surveys:
        return
    ids = [x.id for x in surveys]
    if st.session_state.dhp_survey not in ids:
        st.session_state.dhp_survey = ids[0]
    by_id = {x.id: x for x in surveys}
    # The status is shown under the selector, not in it: the selector would keep showing the old one after a change.
    sid = st.selectbox("Survey", ids, key="dhp_survey", format_func=lambda i: f"#{i} · {by_id[i].title}")
    survey_live(sid)


@st.fragment(run_every=3.0)
def survey_live(sid: int) -> None:
    state = sv.survey_state(engine(), sid, n_boot=500, seed=0)
    if state is None:
        return
    cur, experts, matrix = state.survey, state.experts, state.answers
    w, alpha, tokens = state.weights, state.agreement, state.tokens
    is_open = cur.status == "open"
    st.markdown(
        f"**Status: {cur.status}**"
        + ("" if is_open else f" · closed {cur.closed_at:%Y-%m-%d %H:%M} UTC · its weights feed D_EW")
    )
    left, right = st.columns([1, 1])
    with left:
        st.markdown("**Experts**")
        if is_open:
            with st.form(f"dhp_invite_{sid}", clear_on_submit=True, border=False):
                c = st.columns([3, 1], vertical_alignment="bottom")
                name = c[0].text_input("Invite an expert", key=f"dhp_inv_name_{sid}", placeholder="Name")
                if c[1].form_submit_button("Invite"):
                    try:
                        sv.invite_expert(engine(), sid, name)
                    except sv.SurveyError as exc:
                        st.error(str(exc))
                    else:
                        st.rerun()
        if not experts:
            st.caption("No expert invited yet.")
        for e in experts:
            row = st.container(border=True)
            answered = matrix.loc[e.name, "answered"] if e.name in matrix.index else "0"
            row.markdown(
                f"**{e.name}** · answered {answered}"
                + (" · :red[link revoked: votes not counted]" if e.revoked_at else "")
            )
            if not e.revoked_at:
                row.code(view.personal_link(tokens[e.id]), language=None)
                if row.button(
                    "Revoke link",
                    key=f"dhp_revoke_{e.id}",
                    help="The link stops working at once; their votes stop counting in the weights.",
                ):
                    sv.set_link(engine(), e.id, revoked=True)
                    st.rerun()
            elif row.button("New link", key=f"dhp_restore_{e.id}"):
                sv.set_link(engine(), e.id, revoked=False)
                st.rerun()
    with right:
        view.render_survey_weights(sv.weights_frame(w, cur), alpha, sid)
    view.render_answer_matrix(matrix, cur.questions)
    a = st.container(horizontal=True)
    if is_open and a.button(
        "Close the survey",
        type="primary",
        key=f"dhp_close_{sid}",
        help="Answers become final and the weights can feed D_EW.",
    ):
        sv.set_open(engine(), sid, is_open=False)
        st.rerun()
    if not is_open and a.button("Reopen", key=f"dhp_reopen_{sid}"):
        sv.set_open(engine(), sid, is_open=True)
        st.rerun()
    a.download_button(
        "Weights (EW.json)",
        json.dumps(w.weights, indent=2).encode(),
        f"ew_survey_{sid}.json",
        "application/json",
        key=f"dhp_ew_{sid}",
        icon=":material/download:",
    )


# -- Tasks -----------------------------------------------------------------------------------------------
def tasks_section() -> None:
    st.markdown("**Add a task** with your own metrics and definitions; pick its perturbations from the catalogue.")
    c = st.columns(4)
    key = c[0].text_input("Key", key="dhp_t_key", placeholder="dialogue")
    name = c[1].text_input("Name", key="dhp_t_name", placeholder="Dialogue response")
    text_label = c[2].text_input("What is evaluated", key="dhp_t_text", placeholder="Reply")
    source_label = c[3].text_input("Judged against (optional)", key="dhp_t_source", placeholder="Context")
    definition = st.text_input("Task definition", key="dhp_t_def", placeholder="Reply to the last turn of a dialogue.")
    st.caption("Metrics (name and definition, one per row)")
    metrics = st.data_editor(
        pd.DataFrame({"name": ["", ""], "definition": ["", ""]}),
        num_rows="dynamic",
        key="dhp_t_metrics",
        width="stretch",
        hide_index=True,
    )
    st.caption("Perturbations (k: characters, typos or words; for reordering 0 means all sentences)")
    default = pd.DataFrame(
        [
            {"kind": "char_deletion", "degree": "minor", "k": 10},
            {"kind": "typo", "degree": "minor", "k": 10},
            {"kind": "grammar", "degree": "minor", "k": None},
        ]
    )
    perts = st.data_editor(
        default,
        num_rows="dynamic",
        key="dhp_t_perts",
        width="stretch",
        hide_index=True,
        column_config={
            "kind": st.column_config.SelectboxColumn("kind", options=list(KINDS), required=True),
            "degree": st.column_config.SelectboxColumn("degree", options=["single", "minor", "major"], required=True),
            "k": st.column_config.NumberColumn("k", min_value=0, step=1),
        },
    )
    if st.button("Add task", type="primary", key="dhp_t_add"):
        try:
            spec = custom_task(
                key.strip(),
                name,
                text_label=text_label,
                source_label=source_label,
                definition=definition,
                metrics=[(str(r["name"] or ""), str(r["definition"] or "")) for r in metrics.to_dict("records")],
                perturbations=[
                    {
                        "kind": r["kind"],
                        "degree": r["degree"] or "single",
                        "k": None if pd.isna(r["k"]) else int(r["k"]),
                    }
                    for r in perts.to_dict("records")
                    if r.get("kind")
                ],
            )
            dhp.new_task(engine(), spec)
        except ValueError as exc:
            st.error(str(exc))
        else:
            st.session_state.dhp_next_task = spec.key
            flash("success", f"Task '{spec.name}' added.")
            st.rerun()
    custom = [t for t in tasks if not t.builtin]
    if custom:
        st.markdown("**Added tasks**: " + ", ".join(f"{t.name} (`{t.key}`)" for t in custom))


{
    "Texts": texts_section,
    "Benchmark": benchmark_section,
    "Results": results_section,
    "Expert survey": survey_section,
    "Tasks": tasks_section,
}[section]()
