"""Consistency Studio: the home page."""

import streamlit as st

from components import demo
from components.ui import demo_notice, engine, page_setup
from services import runs
from services.demo import workspace
from services.errors import InputError

backend = page_setup("Home", ":material/home:")

st.title("Consistency Studio")
st.markdown(
    "Check whether LLM-generated text is consistent with a reference, see **why** sentence by sentence, "
    "and repair it round by round. The method is Divide-Conquer-Reasoning (DCR): a Divide-Conquer "
    "Evaluator judges each sentence against the reference, an Auto-Metric Converter turns its reasons into "
    "marks of ±1 and a score in [0, 1], and a Reason-Assisted Improver rewrites the inconsistent sentences."
)
demo_notice(backend)

if workspace.enabled() and not demo.is_open():
    with st.container(border=True, key="demo_offer"):
        d1, d2 = st.columns([4, 1], vertical_alignment="center")
        d1.markdown(
            "**New here? Open the demo workspace.** A few hundred invented summaries from three systems, already "
            "judged, labelled and compared, so every page has something to show. Offline and apart from your "
            "data: its own database, left with one click."
        )
        d1.caption(
            "Built once on first open (about 15 s of CPU, no network, no model), instant after that. Its "
            "labels come from how the texts were made, so no number in it is a finding about real data."
        )
        if d2.button("Open the demo workspace", type="primary", icon=":material/science:", key="demo_open_button"):
            with st.spinner("Building the demo workspace: import, batches, labels, studies (offline)…"):
                try:
                    demo.open_workspace()
                except InputError as exc:
                    st.error(str(exc))
                else:
                    st.rerun()

c = st.columns(3)
with c[0].container(border=True):
    st.markdown("**1 · Evaluate**")
    st.caption("Paste or upload an article and a summary (or a true and an attempted answer) and read the verdicts.")
    st.page_link("pages/1_Evaluate.py", label="Evaluate a text", icon=":material/fact_check:")
with c[1].container(border=True):
    st.markdown("**2 · Improve**")
    st.caption("Rewrite the inconsistent sentences from their reasons; step through the rounds; accept or reject.")
    st.page_link("pages/1_Evaluate.py", label="Try a bundled sample", icon=":material/auto_fix_high:")
with c[2].container(border=True):
    st.markdown("**3 · Review**")
    st.caption("Every run is saved with its documents, configuration, verdicts, rounds and model usage.")
    st.page_link("pages/2_History.py", label="Open the history", icon=":material/history:")

st.subheader("Beyond one document")
c = st.columns(4)
with c[0].container(border=True):
    st.markdown("**Compare methods**")
    st.caption(
        "Summ-NLI, Sent-NLI, QG-QA and DCE on one document or a whole dataset against human labels: "
        "balanced accuracy, correlation, error types, length, spread and cost."
    )
    st.page_link("pages/5_Batches.py", label="Run a batch", icon=":material/dynamic_feed:")
    st.page_link("pages/6_Meta-evaluation.py", label="Meta-evaluation", icon=":material/query_stats:")
with c[1].container(border=True):
    st.markdown("**Is the judge consistent?**")
    st.caption(
        "ConsEval: does an LLM evaluator give the same score twice, and across rating scales? "
        "Krippendorff's alpha with intervals, beside human raters."
    )
    st.page_link("pages/8_ConsEval.py", label="Open ConsEval", icon=":material/balance:")
with c[2].container(border=True):
    st.markdown("**Does the judge notice?**")
    st.caption(
        "DHP: degrade good texts on purpose, test whether evaluators score them lower, weigh the "
        "perturbations by an expert survey, and read discernment scores."
    )
    st.page_link("pages/10_DHP.py", label="Open DHP", icon=":material/troubleshoot:")
with c[3].container(border=True):
    st.markdown("**Share and reuse**")
    st.caption(
        "One self-contained HTML report per run or study, read-only share links, and distillation "
        "datasets to train a smaller judge."
    )
    st.page_link("pages/12_Reports.py", label="Reports", icon=":material/summarize:")

st.subheader("In the database")
try:
    counts = runs.db_counts(engine())
except Exception as exc:  # a database that cannot be opened must not hide the rest of the page
    st.error(f"The database cannot be read: {exc}")
else:
    cols = st.columns(len(counts))
    for col, (name, n) in zip(cols, counts.items(), strict=True):
        col.metric(name.capitalize(), f"{n:,}")

st.subheader("Backend in use")
label = backend.label if backend.is_embedded else f"{backend.model} at `{backend.public_url}`"
st.markdown(f"**{label}** · temperature {backend.temperature:g} · max tokens {backend.max_tokens}")
st.page_link("pages/3_Settings.py", label="Change the backend", icon=":material/tune:")
