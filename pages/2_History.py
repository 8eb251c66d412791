"""History: every evaluation with its documents, configuration, verdicts and rounds."""

import pandas as pd
import streamlit as st

from components.annotate import render_run_annotation
from components.dcr_views import (
    colored_text_html,
    evidence_for,
    judge_flags,
    render_delivered,
    render_flag_filter,
    render_score,
    sentence_cards_html,
)
from components.nli_views import render_method_detail
from components.report import render_report_download
from components.ui import engine, page_setup
from services import runs
from services.dcr import REFERENCE_NOUN
from services.figures.nli import ALL_METHOD_LABELS, method_name
from services.nli import paradigms as nli

backend = page_setup("History", ":material/history:")
eng = engine()
st.session_state.setdefault("hi_confirm_delete", None)


def _ids_from(param: str | None) -> list[int]:
    return [int(x) for x in (param or "").split(",") if x.strip().isdigit()]


def _select(df: pd.DataFrame, ids: list[int]) -> None:
    """Tick these runs in the table (before it is drawn); runs not in the table stay selected through the URL."""
    shown = df["run"].tolist()
    st.session_state.hi_table = {"selection": {"rows": [shown.index(i) for i in ids if i in shown]}}


st.title("History")
st.caption("Every evaluation run, from the app and from `cli.py`. Select one to reopen it, two to compare them.")

rows = runs.list_all(eng)
if not rows:
    st.info("No runs yet. Evaluate something on the **Evaluate** page, or run `python cli.py evaluate`.")
    st.page_link("pages/1_Evaluate.py", label="Go to Evaluate", icon=":material/fact_check:")
    st.stop()
if len(rows) >= runs.HISTORY_LIMIT:
    st.caption(
        f"Showing the newest {runs.HISTORY_LIMIT:,} runs; older ones stay in the database "
        "(open one by its link, `/Evaluate?run=ID`)."
    )

methods = runs.list_methods(eng, [r.id for r, _ in rows])
df = pd.DataFrame(
    [
        {  # what tells runs apart first: at 1280 px the columns after the candidate need a scroll
            "run": r.id,
            "method": method_name(r.method),
            "status": r.status,
            "initial Ẑ": r.initial_score,
            "final Ẑ": r.final_score,
            "rounds": r.n_rounds,
            "candidate": preview,
            "model": r.model,
            "created (UTC)": r.created_at.strftime("%Y-%m-%d %H:%M"),
            "task": r.task,
            "converter": "—" if nli.is_nli(r.method) else r.amc,
            "window": methods[r.id].window if r.id in methods else None,
            "source": r.source,
        }
        for r, preview in rows
    ]
)
q = st.text_input("Filter", placeholder="Search candidate text, model or task…", label_visibility="collapsed")
if q:
    mask = df.apply(lambda row: q.lower() in " ".join(map(str, row.values)).lower(), axis=1)
    df = df[mask].reset_index(drop=True)
# The URL names the selected runs (`?run=3` or `?run=3,5`), so a selection is a link. A URL that changed outside
# the table (a deep link, a link from another page) selects its runs; a new filter keeps the same runs selected,
# since the table's selection is by row position.
url = st.query_params.get("run", "")
if url != st.session_state.get("hi_url_seen") or q != st.session_state.get("hi_q_seen", ""):
    _select(df, _ids_from(url))
    st.session_state.hi_url_seen, st.session_state.hi_q_seen = url, q
    linked = [i for i in _ids_from(url) if runs.load(eng, i) is None]
    if linked:
        st.warning(f"There is no run {', '.join(f'#{i}' for i in linked)}: deleted, or the link is wrong.")
event = st.dataframe(
    df,
    hide_index=True,
    placeholder="—",
    width="stretch",
    on_select="rerun",
    selection_mode="multi-row",
    key="hi_table",
    column_config={
        "initial Ẑ": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f", width="small"),
        "final Ẑ": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f", width="small"),
        "candidate": st.column_config.TextColumn(width="medium"),
        "method": st.column_config.TextColumn(width="medium"),
        "run": st.column_config.NumberColumn(width="small"),
    },
)
ticked = [int(df.iloc[i]["run"]) for i in event.selection.rows if i < len(df)] if event and event.selection else []
# Runs selected through the URL but hidden by the filter (or older than the table) stay selected.
hidden = [i for i in _ids_from(url) if i not in set(df["run"].tolist()) and runs.load(eng, i) is not None]
selected = hidden + ticked
new_url = ",".join(map(str, selected))
if new_url != url:
    if new_url:
        st.query_params["run"] = new_url
    else:
        st.query_params.pop("run", None)
    st.session_state.hi_url_seen = new_url

if not selected:
    st.caption("Select a row to see its details; select two to compare.")
    st.stop()


SETTING_LABELS = {
    "model": "model",
    "task": "task",
    "method": "evaluator",
    "amc": "converter",
    "max_rounds": "maximum rounds m",
    "n_rounds": "rounds",
    "initial_score": "initial Ẑ",
    "final_score": "final Ẑ",
}


def shown(v: object) -> str:
    """A setting as read in the comparison: scores to 3 decimals, nothing as a dash."""
    if v is None:
        return "—"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def nf_mark(label: str | None) -> str:
    return {"consistent": "✓ consistent", "inconsistent": "✗ inconsistent"}.get(label or "", "? no verdict")


def _details(run_id: int, annotate: bool = False) -> None:
    d = runs.load(eng, run_id)
    if d is None:
        st.warning(f"Run {run_id} no longer exists.")
        return
    r = d.run
    st.markdown(f"#### Run #{r.id}")
    converter = "" if nli.is_nli(r.method) else f" · converter {r.amc}"
    st.caption(f"{r.model} · {ALL_METHOD_LABELS.get(r.method, r.method)}{converter} · status {r.status}")
    if r.error:
        st.error(r.error)
    m = runs.load_method(eng, run_id) if nli.is_nli(r.method) else None
    if m is not None:
        if m.score is not None:
            st.metric("Verdict", nf_mark(m.label), help=f"Score {m.score:.2f}: share of units judged consistent")
        render_method_detail(m.detail, key=f"hi_m_{run_id}")
        if m.compare_group:
            st.page_link(
                "pages/1_Evaluate.py",
                label="Open the comparison this run belongs to",
                icon=":material/compare:",
                query_params={"compare": m.compare_group},
            )
    if d.rounds:
        out = runs.delivered(d)
        # The last round judged rewrites that were rejected: its score is not the delivered text's (unless it is
        # the round that scored the delivered text after the review).
        if out.left_out and out.judged_round != out.last_round:
            st.caption("Scores per round below; the last round's text is not the delivered text.")
        else:
            render_score(
                d.rounds[-1].evaluation,
                d.usage,
                compact=not annotate,
                checker=r.method == "evidence",
                spent=runs.spent(d, backend),
            )
        if m is None and r.method != "evidence":
            render_delivered(out)
        for rnd in d.rounds:
            with st.expander(
                f"Round {rnd.index}: Ẑ = "
                + (
                    f"{rnd.evaluation.score.z_hat:.3f}"
                    if rnd.evaluation.score and rnd.evaluation.score.z_hat is not None
                    else "n/a"
                )
                + (f" · {sum(w.changed for w in rnd.rewrites)} rewrite(s)" if rnd.rewrites else ""),
                expanded=rnd.index == len(d.rounds) - 1,
            ):
                st.markdown(colored_text_html(rnd.evaluation), unsafe_allow_html=True)
                found = evidence_for(d.reference, rnd.evaluation, r.task)
                noun = REFERENCE_NOUN.get(r.task, "reference")
                flags = judge_flags(rnd.evaluation, found, method=r.method)
                only = render_flag_filter(flags, key=f"hi_flagged_{run_id}_{rnd.index}")
                st.markdown(
                    sentence_cards_html(rnd.evaluation, found, noun=noun, flags=flags, only_flagged=only),
                    unsafe_allow_html=True,
                )
    if annotate and d.rounds:
        with st.expander("Annotate sentences", icon=":material/edit_note:"):
            idx = st.selectbox(
                "Round", [x.index for x in d.rounds], index=len(d.rounds) - 1, key=f"hi_lab_round_{run_id}"
            )
            render_run_annotation(eng, run_id=r.id, rnd=d.rounds[idx], key_prefix="hi_lab")
    with st.expander("Documents and configuration"):
        st.text_area("Reference", d.reference, height=150, disabled=True, key=f"hi_ref_{run_id}")
        st.text_area("Candidate", d.candidate, height=100, disabled=True, key=f"hi_cand_{run_id}")
        st.json({"parameters": r.params, "prompt_versions": r.prompt_versions, "max_rounds": r.max_rounds})
    render_report_download("run", r.id, key=f"hi_rep_{run_id}")


actions = st.container(horizontal=True)  # buttons as wide as their labels: none cut short
if len(selected) == 1:
    if actions.button("Reopen in Evaluate", type="primary", icon=":material/open_in_new:"):
        st.session_state.ev_run_id = selected[0]
        st.switch_page("pages/1_Evaluate.py", query_params={"run": str(selected[0])})
if actions.button(f"Delete {len(selected)} run(s)", icon=":material/delete:"):
    st.session_state.hi_confirm_delete = list(selected)
if st.session_state.hi_confirm_delete:
    ids = st.session_state.hi_confirm_delete
    with st.container(border=True):
        st.warning(f"Delete run(s) {', '.join(map(str, ids))} with their rounds and verdicts? This cannot be undone.")
        c = st.columns([1, 1, 5])
        if c[0].button("Delete", type="primary", key="hi_do_delete"):
            for i in ids:
                runs.delete(eng, i)
            st.session_state.hi_confirm_delete = None
            # Nothing stays selected: the rows that move up into the deleted ones' places were never chosen.
            st.query_params.pop("run", None)
            st.session_state.hi_url_seen = None
            st.toast(f"Deleted {len(ids)} run(s).")
            st.rerun()
        if c[1].button("Cancel", key="hi_cancel_delete"):
            st.session_state.hi_confirm_delete = None
            st.rerun()

if len(selected) == 2:
    st.subheader(f"Compare run #{selected[0]} and run #{selected[1]}")
    a, b = (runs.load(eng, i) for i in selected)
    if a and b:
        diff = {
            label: tuple(shown(getattr(x.run, k)) for x in (a, b))
            for k, label in SETTING_LABELS.items()
            if getattr(a.run, k) != getattr(b.run, k)
        }
        if a.reference != b.reference:
            diff["reference"] = ("(differs)", "(differs)")
        if a.candidate != b.candidate:
            diff["candidate"] = ("(differs)", "(differs)")
        if diff:
            st.dataframe(
                pd.DataFrame(
                    [{"setting": k, f"run #{selected[0]}": v[0], f"run #{selected[1]}": v[1]} for k, v in diff.items()]
                ),
                hide_index=True,
            )
        else:
            st.caption("Same documents and configuration.")
cols = st.columns(len(selected[:2]) or 1)
for col, run_id in zip(cols, selected[:2], strict=False):
    with col:
        _details(run_id, annotate=len(selected) == 1)
if len(selected) > 2:
    st.caption(f"Showing the first two of {len(selected)} selected runs.")
