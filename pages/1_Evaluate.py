"""Evaluate: paste or upload a reference and a candidate, read sentence verdicts, improve round by round."""

import json

import pandas as pd
import streamlit as st

from components.annotate import render_run_annotation
from components.dcr_views import (
    evidence_for,
    judge_flags,
    make_rounds_figure,
    render_evaluation,
    render_flag_filter,
    render_no_verdict,
    render_rewrite_review,
    render_score,
    rounds_frame,
)
from components.evidence_views import render_checker_calibration, render_checker_lead
from components.nli_views import render_comparison
from components.ui import demo_notice, engine, page_setup, render_backend_line
from services import estimates, runs
from services.dcr import (
    CONVERTER_LABELS,
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    METHOD_LABELS,
    NO_IMPROVE_REASON,
    REFERENCE_NOUN,
    TASK_LABELS,
    DCRConfig,
)
from services.errors import InputError
from services.figures.nli import ALL_METHOD_LABELS, method_name
from services.nli import paradigms as nli
from services.samples import load_samples
from services.text import SUPPORTED_UPLOADS, read_document

backend = page_setup("Evaluate", ":material/fact_check:")
eng = engine()

for key, default in {
    "ev_reference": "",
    "ev_candidate": "",
    "ev_task": "summarization",
    "ev_criteria": "",
    "ev_method": "dce-amc",
    "ev_amc": "rule",
    "ev_rounds": 3,
    "ev_run_id": None,
    "ev_messages": [],
    "ev_window": 1,
    "ev_alpha": DEFAULT_ALPHA,
    "ev_beta": DEFAULT_BETA,
    "ev_compare": None,
    "ev_compare_methods": list(runs.COMPARE_METHODS),
}.items():
    st.session_state.setdefault(key, default)

run_param = st.query_params.get("run")
if run_param and run_param.isdigit() and st.session_state.ev_run_id != int(run_param):
    st.session_state.ev_run_id = int(run_param)
    st.session_state.ev_from_link = True  # opened by its URL: if it is missing, it may never have existed
compare_param = st.query_params.get("compare")
if compare_param and st.session_state.ev_compare != compare_param:
    st.session_state.ev_compare, st.session_state.ev_run_id = compare_param, None


def _load_upload(which: str) -> None:
    f = st.session_state.get(f"ev_{which}_file")
    if f is None:
        return
    try:
        st.session_state[f"ev_{which}"] = read_document(f.name, f.getvalue())
        st.session_state.ev_messages = [("success", f"Loaded {f.name} into the {which}.")]
    except InputError as exc:
        st.session_state.ev_messages = [("error", str(exc))]


def _load_sample() -> None:
    title = st.session_state.get("ev_sample")
    for s in load_samples():
        if s.title == title:
            st.session_state.ev_reference = s.reference
            st.session_state.ev_candidate = s.candidate
            st.session_state.ev_task = s.task
            st.session_state.ev_messages = [("success", f"Loaded the sample “{s.title}”.")]


def _open_run(run_id: int | None) -> None:
    st.session_state.ev_run_id = run_id
    st.session_state.ev_compare = None
    st.query_params.pop("compare", None)
    if run_id is None:
        st.query_params.pop("run", None)
    else:
        st.query_params["run"] = str(run_id)


def _open_compare(group: str | None) -> None:
    st.session_state.ev_run_id = None
    st.query_params.pop("run", None)
    st.session_state.ev_compare = group
    if group is None:
        st.query_params.pop("compare", None)
    else:
        st.query_params["compare"] = group


def _check_with_evidence(reference: str, candidate: str, task: str) -> None:
    """Put the run's pair in the form and evaluate it with the offline evidence checker (no model)."""
    st.session_state.ev_reference, st.session_state.ev_candidate, st.session_state.ev_task = reference, candidate, task
    st.session_state.ev_method = "evidence"
    st.session_state.ev_autorun = True
    _open_run(None)


def _start_from_final(reference: str, final: str) -> None:
    """Close the run and put its reference and final text in the form, ready to evaluate again."""
    st.session_state.ev_reference = reference
    st.session_state.ev_candidate = final
    _open_run(None)


st.title("Evaluate and improve")
st.caption(
    "Each candidate sentence is judged against the reference (Divide-Conquer Evaluator), its reason is turned "
    "into a mark z = ±1 (Auto-Metric Converter) and the marks into a score Ẑ in [0, 1] (Eq. 3). "
    "**Improve** rewrites the inconsistent sentences from their reasons (Reason-Assisted Improver) and judges again."
)
open_run = st.session_state.ev_run_id if st.session_state.ev_compare is None else -1
viewed = runs.load(eng, open_run) if open_run is not None and open_run >= 0 else None
# The evidence checker calls no model, demo or not: no demo banner while it is chosen or its run is open.
if st.session_state.get("ev_method") != "evidence" and not (viewed and viewed.run.method == "evidence"):
    demo_notice(backend)

if open_run is not None and open_run >= 0 and not st.session_state.ev_reference and not st.session_state.ev_candidate:
    if viewed is not None:  # a deep link: show what was evaluated, ready to run again with changes
        st.session_state.ev_reference, st.session_state.ev_candidate = viewed.reference, viewed.candidate
        st.session_state.ev_task = viewed.run.task
form_box = (
    st.expander("New evaluation", icon=":material/edit_note:") if open_run is not None else st.container(border=True)
)
with form_box:
    # One row each: beside the task's long labels, the sample's title (with its size and errors) was cut off.
    st.radio("Task", list(TASK_LABELS), format_func=TASK_LABELS.get, key="ev_task", horizontal=True)
    st.selectbox(
        "Load a bundled sample",
        [s.title for s in load_samples()],
        index=None,
        placeholder="Choose a sample…",
        key="ev_sample",
        on_change=_load_sample,
    )
    if st.session_state.ev_task == "custom":
        st.text_area(
            "Criteria",
            key="ev_criteria",
            height=100,
            placeholder="* Every number and name in the sentence must appear in the reference\n* …",
            help="Replaces the procedure of the Table 8 prompt; the rest of the prompt stays the same.",
        )
    labels = {
        "summarization": ("Article (reference)", "Summary (candidate)"),
        "semantic": ("True answer (reference)", "Attempt answer (candidate)"),
        "custom": ("Reference", "Candidate"),
    }[st.session_state.ev_task]
    left, right = st.columns(2)
    with left:
        st.text_area(labels[0], key="ev_reference", height=260, placeholder="Paste the reference text…")
        st.file_uploader(
            "…or upload it",
            type=list(SUPPORTED_UPLOADS),
            key="ev_reference_file",
            on_change=_load_upload,
            args=("reference",),
        )
    with right:
        st.text_area(labels[1], key="ev_candidate", height=260, placeholder="Paste the text to check…")
        st.file_uploader(
            "…or upload it",
            type=list(SUPPORTED_UPLOADS),
            key="ev_candidate_file",
            on_change=_load_upload,
            args=("candidate",),
        )
    for kind, msg in st.session_state.ev_messages:
        (st.error if kind == "error" else st.success)(msg)
    st.session_state.ev_messages = []
    with st.expander("Options", icon=":material/settings:"):
        o = st.columns(3)
        o[0].radio("Evaluator", list(ALL_METHOD_LABELS), format_func=ALL_METHOD_LABELS.get, key="ev_method")
        o[1].radio(
            "Converter (AMC)",
            list(CONVERTER_LABELS),
            format_func=CONVERTER_LABELS.get,
            key="ev_amc",
            help="Both converters keep the verdict a reason states: a mark against it leaves the sentence unjudged. "
            "The rule converter first reads a per-sentence verdict field the evaluator is asked for in its JSON "
            "output (beyond the paper), then the reason's own words; it is the default because it costs no call "
            "and never turns a stated verdict around.",
        )
        ab = o[1].columns(2)
        ab[0].number_input("α (Eq. 3)", step=0.5, key="ev_alpha", help="Appendix C.1 sets α = 0.")
        ab[1].number_input("β (Eq. 3)", step=0.5, key="ev_beta", help="Appendix C.1 sets β = 0.")
        o[2].number_input("Maximum rounds m", min_value=1, max_value=10, key="ev_rounds")
        o[2].number_input(
            "Window w (sentences)",
            min_value=1,
            max_value=10,
            key="ev_window",
            help="Sent-NLI and QG-QA judge the summary w sentences at a time; the paper uses a few sentences.",
        )
        if nli.is_nli(st.session_state.ev_method):
            st.caption(
                "The factual-inconsistency paradigms of the Summ-NLI / Sent-NLI / QG-QA paper give a verdict, not a "
                "rewrite: the converter and the rounds do not apply. A long document (over about 4,096 tokens, as "
                "GovReport's and SQuALITY's are) is cut to the sentences that best match the summary (up to 1,024 "
                "tokens; each window: 5 sentences). A window the model's answer could not be read for leaves the "
                "verdict unknown unless another window is inconsistent."
            )
        st.multiselect(
            "Methods to compare",
            list(runs.COMPARE_METHODS),
            format_func=ALL_METHOD_LABELS.get,
            key="ev_compare_methods",
            help="Compare methods runs each of these on the same article and summary.",
        )
        if st.session_state.ev_method == "evidence":
            st.caption(
                "The evidence checker aligns each sentence with the reference (MiniLM embeddings when installed, "
                "plus word overlap) and flags numbers, names and words found nowhere in it. No model is called, "
                "so the converter and the rounds do not apply."
            )
    if st.session_state.ev_method != "evidence":
        render_backend_line(backend)
        if not backend.is_embedded and st.session_state.ev_reference and st.session_state.ev_candidate:
            st.caption(
                estimates.single_estimate(
                    eng,
                    backend,
                    st.session_state.ev_reference,
                    st.session_state.ev_candidate,
                    method=st.session_state.ev_method,
                    window=int(st.session_state.ev_window),
                    amc=st.session_state.ev_amc,
                ).summary()
            )
    b = st.container(horizontal=True)
    go = b.button("Evaluate", type="primary", icon=":material/play_arrow:") or st.session_state.pop("ev_autorun", False)
    go_compare = b.button(
        "Compare methods",
        icon=":material/compare:",
        help="DCE-AMC, Summ-NLI, Sent-NLI and QG-QA (as chosen in Options) on the same pair, side by side.",
    )

# Each status box sits in a slot, emptied when the input is refused: no "Evaluating…" box is left behind.
if go and nli.is_nli(st.session_state.ev_method):
    slot = st.empty()
    try:
        with slot.status("Evaluating…", expanded=False) as status:
            run_id = runs.start_method_run(
                eng,
                backend,
                st.session_state.ev_reference,
                st.session_state.ev_candidate,
                st.session_state.ev_method,
                window=int(st.session_state.ev_window),
                progress=lambda m: status.update(label=m),
            )
            status.update(label="Evaluated", state="complete")
        _open_run(run_id)
        st.rerun()
    except InputError as exc:
        slot.empty()
        st.error(str(exc), icon=":material/warning:")
    go = False
if go_compare:
    slot = st.empty()
    try:
        with slot.status("Comparing methods…", expanded=True) as status:
            group = runs.compare_methods(
                eng,
                backend,
                st.session_state.ev_reference,
                st.session_state.ev_candidate,
                st.session_state.ev_compare_methods,
                window=int(st.session_state.ev_window),
                amc=st.session_state.ev_amc,
                progress=status.write,
            )
            status.update(label="Compared", state="complete")
        _open_compare(group)
        st.rerun()
    except InputError as exc:
        slot.empty()
        st.error(str(exc), icon=":material/warning:")

group = st.session_state.ev_compare
if group is not None and not go:
    found = runs.load_group(eng, group)
    if not found:
        st.warning(f"Comparison {group} no longer exists (its runs were deleted).")
        _open_compare(None)
        st.stop()
    first = found[0][1]
    st.divider()
    head = st.columns([5, 1], vertical_alignment="center")
    head[0].subheader("Methods compared on one document")
    head[0].caption(
        f"{first.run.model} · {len(found)} method(s) · runs {', '.join(f'#{d.run.id}' for _, d in found)} "
        f"(each listed in History) · {first.run.created_at:%Y-%m-%d %H:%M} UTC"
    )
    if head[1].button("Close", icon=":material/close:", key="ev_compare_close"):
        _open_compare(None)
        st.rerun()
    for m, d in found:
        if d.run.status == "failed" or d.run.error:
            st.warning(f"{method_name(m.method, m.window)} (run #{d.run.id}): {d.run.error}", icon=":material/report:")
    render_comparison(
        first.candidate, [m.detail for m, _ in found], [d.usage for _, d in found], [d.run.id for _, d in found]
    )
    st.stop()

if go:
    cfg = DCRConfig(
        task=st.session_state.ev_task,
        criteria=st.session_state.ev_criteria,
        method=st.session_state.ev_method,
        amc=st.session_state.ev_amc,
        max_rounds=int(st.session_state.ev_rounds),
        alpha=float(st.session_state.ev_alpha),
        beta=float(st.session_state.ev_beta),
    )
    slot = st.empty()
    try:
        with slot.status("Evaluating…", expanded=False) as status:
            if backend.is_embedded and cfg.uses_model:
                status.update(label="Starting the embedded model and evaluating…")
            run_id = runs.start_run(
                eng,
                backend,
                st.session_state.ev_reference,
                st.session_state.ev_candidate,
                cfg,
                progress=lambda m: status.update(label=m),
            )
            status.update(label="Evaluated", state="complete")
        _open_run(run_id)
        st.rerun()
    except InputError as exc:
        slot.empty()
        st.error(str(exc), icon=":material/warning:")

run_id = st.session_state.ev_run_id
if run_id is not None:
    detail = viewed if viewed is not None and viewed.run.id == run_id else runs.load(eng, run_id)
    if detail is None:
        if st.session_state.pop("ev_from_link", False):
            st.warning(f"There is no run #{run_id}: check the link, or find the run in **History**.")
        else:
            st.warning(f"Run #{run_id} no longer exists (it was deleted).")
        st.page_link("pages/2_History.py", label="Open History", icon=":material/history:")
        _open_run(None)
        st.stop()
    st.session_state.ev_from_link = False
    r = detail.run
    st.divider()
    if nli.is_nli(r.method):
        head = st.columns([5, 1], vertical_alignment="center")
        m = runs.load_method(eng, r.id)
        head[0].subheader(f"Run #{r.id} · {method_name(r.method, m.window if m else None)}")
        head[0].caption(
            f"{r.model} · {ALL_METHOD_LABELS.get(r.method, r.method)} · "
            f"{r.created_at:%Y-%m-%d %H:%M} UTC · source: {r.source}"
        )
        if head[1].button("Close", icon=":material/close:"):
            _open_run(None)
            st.rerun()
        if r.error:
            (st.error if r.status == "failed" else st.warning)(r.error, icon=":material/report:")
        if m is None:
            st.stop()
        render_comparison(detail.candidate, [m.detail], [detail.usage], [r.id], key="ev_one")
        st.stop()
    head = st.columns([5, 1], vertical_alignment="center")
    head[0].subheader(f"Run #{r.id} · {TASK_LABELS.get(r.task, r.task).split(' (')[0]}")
    # The evidence checker's model name already says what it is; a model's run names its method and converter.
    how = "" if r.method == "evidence" else f" · {METHOD_LABELS.get(r.method, r.method)} · converter: {r.amc}"
    head[0].caption(f"{r.model}{how} · {r.created_at:%Y-%m-%d %H:%M} UTC · source: {r.source}")
    if head[1].button("Close", icon=":material/close:"):
        _open_run(None)
        st.rerun()
    if not detail.rounds:
        st.error(f"This run failed before any round was judged: {r.error or 'unknown error'}")
        st.stop()
    n = len(detail.rounds)
    if n > 1:
        chosen = st.segmented_control(
            "Round",
            list(range(n)),
            format_func=lambda i: f"Round {i}",
            default=n - 1,
            key=f"ev_round_{r.id}_{n}",
            required=True,
            help="Round 0 is the candidate as given; each later round is the improved text, judged again.",
        )
        chosen = n - 1 if chosen is None else chosen
    else:
        chosen = 0
    rnd = detail.rounds[chosen]
    lead = r.method != "evidence" and r.backend_kind == "embedded"  # the demo model judges near chance
    found = evidence_for(detail.reference, rnd.evaluation, r.task)
    if lead:
        render_checker_lead(rnd.evaluation, found, noun=REFERENCE_NOUN.get(r.task, "reference"))
        st.caption("The demo model's run in detail:")
    render_score(
        rnd.evaluation,
        detail.usage,
        checker=r.method == "evidence",
        spent=runs.spent(detail, backend) if r.status != "running" else None,
    )
    undecided_said = render_no_verdict(
        rnd.evaluation, embedded=r.backend_kind == "embedded", checker_shown=lead, checker=r.method == "evidence"
    )
    noun = REFERENCE_NOUN.get(r.task, "reference")
    show_checker = False
    if r.method != "evidence":
        # The embedded demo model judges near chance: its verdicts come with the offline checker's by default.
        show_checker = st.toggle(
            "Show the offline evidence checker's verdicts beside the model's",
            value=r.backend_kind == "embedded",
            key=f"ev_checker_{r.id}",
            help="A second opinion that calls no model: each sentence is aligned with the reference, and numbers, "
            "names or weakly supported statements are flagged. Labelled 'Offline evidence checker' on each card.",
        )
    flags = judge_flags(rnd.evaluation, found, method=r.method)
    body, side = st.columns([3, 2])
    with body:
        only = render_flag_filter(flags, key=f"ev_flagged_{r.id}")
        render_evaluation(
            rnd.evaluation,
            found,
            checker=show_checker,
            noun=noun,
            flags=flags,
            only_flagged=only,
            undecided_said=undecided_said,
        )
        with st.expander("Annotate these sentences", icon=":material/edit_note:"):
            render_run_annotation(eng, run_id=r.id, rnd=rnd, key_prefix="ev_lab")
    with side:
        if n > 1:
            st.plotly_chart(
                make_rounds_figure(rounds_frame(detail.rounds)), width="stretch", config={"displayModeBar": False}
            )
        last = detail.rounds[-1]
        ev_last = last.evaluation
        stopped = runs.stop_reason(detail)
        can_improve = (
            r.method != "evidence"
            and not ev_last.all_consistent
            and not ev_last.error
            and any(s.verdict == "inconsistent" for s in ev_last.sentences)
            and not (last.rewrites and not any(rw.changed for rw in last.rewrites))
        )
        if r.method == "evidence":
            render_checker_calibration(found)
            if ev_last.all_consistent:
                st.success("The evidence checker finds every sentence supported.", icon=":material/check_circle:")
            else:
                st.info(f"No **Improve** here. {NO_IMPROVE_REASON}", icon=":material/info:")
        elif chosen != n - 1:
            st.caption(f"Viewing round {chosen} of {n - 1}. Improving continues from the last round.")
        elif ev_last.all_consistent:
            st.success(
                stopped or f"Every sentence is consistent after round {last.index}.", icon=":material/check_circle:"
            )
        elif stopped and ev_last.n_judged:
            st.info(stopped, icon=":material/info:")
        if r.method != "evidence" and chosen == n - 1 and can_improve:
            c = st.columns([1, 2])
            m = c[0].number_input(
                "Up to round",
                min_value=last.index + 1,
                max_value=10,
                value=max(last.index + 1, r.max_rounds),
                key=f"ev_m_{r.id}_{n}",
            )
            with c[1]:
                render_backend_line(backend)
            if c[1].button("Improve", type="primary", icon=":material/auto_fix_high:", key=f"ev_improve_{r.id}"):
                with st.status("Improving…", expanded=True) as status:
                    runs.improve_run(eng, backend, r.id, max_rounds=int(m), progress=status.write)
                    status.update(label="Improved", state="complete")
                st.rerun()
        if chosen == n - 1 and not ev_last.n_judged and not ev_last.fatal and r.method != "evidence":
            st.button(
                "Check with the evidence checker",
                icon=":material/plagiarism:",
                key=f"ev_to_evidence_{r.id}",
                on_click=_check_with_evidence,
                args=(detail.reference, detail.candidate, r.task),
                help="Evaluate the same pair with the offline evidence checker, which calls no model.",
            )

        render_rewrite_review(
            detail.rounds,
            lambda rd, idx, ok: (runs.set_rewrite(eng, r.id, rd, idx, ok), st.rerun()),
            key_prefix=f"ev_rw_{r.id}",
        )

    if r.method != "evidence":  # the checker rewrites nothing: its final text is the candidate
        st.markdown("#### Final text")
        out = runs.delivered(detail)
        final = out.text
        st.caption(
            "The candidate with every accepted rewrite applied"
            + (f" ({len(out.left_out)} rewrite(s) left out). " if out.left_out else ". ")
            + out.score_note()
            + " Copy it with the button in the box's corner."
        )
        if out.scored_after_review and out.z_hat is not None:
            st.metric("Score Ẑ of the delivered text", f"{out.z_hat:.3f}", help=out.score_note())
        st.code(final, language=None, wrap_lines=True)
        if not out.judged and r.status != "running":
            n_calls = runs.delivered_calls(detail)
            st.caption(
                f"Scoring the delivered text judges it once more with this run's evaluator: "
                f"**{n_calls} more model call{'' if n_calls == 1 else 's'}**, saved in this run as round "
                f"{out.last_round + 1} (no rewrite is proposed)."
            )
            if st.button(
                "Score the delivered text",
                type="primary",
                icon=":material/grading:",
                key=f"ev_score_delivered_{r.id}",
                help="One more evaluation inside this run, of the text with the accepted rewrites only.",
            ):
                with st.spinner("Judging the delivered text…"):
                    try:
                        runs.score_delivered(eng, backend, r.id)
                    except InputError as exc:
                        st.error(str(exc))
                    else:
                        st.rerun()
        fc = st.container(horizontal=True)
        fc.download_button(
            "Download .txt", final, file_name=f"run-{r.id}-final.txt", mime="text/plain", icon=":material/download:"
        )
        # A callback: the text areas' state can only be set before they are drawn, i.e. before the script reruns.
        fc.button(
            "Evaluate final text",
            icon=":material/replay:",
            help="Start a new run with this text",
            on_click=_start_from_final,
            args=(detail.reference, final),
        )

    with st.expander("Configuration, prompts and usage", icon=":material/receipt_long:"):
        st.json(
            {
                "model": r.model,
                "backend": r.backend_kind,
                "base_url": r.base_url,
                "parameters": r.params,
                "prompt_versions": r.prompt_versions,
                "max_rounds": r.max_rounds,
                "criteria": r.criteria or None,
            },
            expanded=False,
        )
        if detail.usage_by_stage:
            st.dataframe(pd.DataFrame(detail.usage_by_stage), hide_index=True, width="stretch")
        st.caption(
            "Totals: " + json.dumps(detail.usage) + ". Calls count requests sent to the model; cache hits cost none."
        )
