"""Consistency Studio: the home page."""

import streamlit as st

from components.ui import demo_notice, engine, page_setup
from services import runs

backend = page_setup("Home", ":material/home:")

st.title("Consistency Studio")
st.markdown(
    "Check whether LLM-generated text is consistent with a reference, see **why** sentence by sentence, "
    "and repair it round by round. The method is Divide-Conquer-Reasoning (DCR): a Divide-Conquer "
    "Evaluator judges each sentence against the reference, an Auto-Metric Converter turns its reasons into "
    "marks of ±1 and a score in [0, 1], and a Reason-Assisted Improver rewrites the inconsistent sentences."
)
demo_notice(backend)

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
label = backend.label if backend.is_embedded else f"{backend.model} at `{backend.base_url}`"
st.markdown(f"**{label}** · temperature {backend.temperature:g} · max tokens {backend.max_tokens}")
st.page_link("pages/3_Settings.py", label="Change the backend", icon=":material/tune:")
