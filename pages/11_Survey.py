"""The expert's survey page, reached by a personal link (?token=...): which metric does each issue impact most?"""

import streamlit as st

from components.access import is_owner
from components.ui import engine, page_setup
from services.dhp import survey as sv

page_setup("Survey", ":material/how_to_vote:", link="expert")

token = st.query_params.get("token", "")
st.title("Expert survey")
if not token:
    st.info("This page is opened by the personal link the survey's organiser sent you (…/Survey?token=…).")
    if is_owner():
        st.caption("Expert links are made on the DHP page, in its **Expert survey** view.")
        st.page_link(
            "pages/10_DHP.py",
            label="DHP → Expert survey",
            icon=":material/troubleshoot:",
            query_params={"view": "Expert survey"},
        )
    st.stop()
access = sv.open_link(engine(), token)
if access.expert is None or access.survey is None:
    st.error(access.problem or "This survey link is not valid.")
    st.stop()
expert, survey = access.expert, access.survey
is_open = survey.status == "open"


def save(question: str) -> None:
    metric = st.session_state.get(f"sv_q_{question}")
    if metric is None:
        return
    try:
        sv.cast_vote(engine(), expert.id, question, metric)
    except sv.SurveyError as exc:
        st.session_state.sv_flash = ("error", str(exc))
    else:
        st.session_state.sv_flash = ("success", f"Saved: {metric}.")


st.markdown(f"### {survey.title}")
st.markdown(f"You are **{expert.name}** (from your personal link).")
if not is_open:
    st.warning("This survey is closed: your answers are final and shown below.", icon=":material/lock:")
flash = st.session_state.pop("sv_flash", None)
if flash:
    getattr(st, flash[0])(flash[1])

with st.container(border=True):
    st.markdown(
        "**Instructions.** For each quality issue below, choose the **one metric it impacts most**. Your answers "
        "are saved as you choose and you can change them until the organiser closes the survey. They set the "
        "weights with which the evaluators' results on each metric are combined."
    )
    if survey.task_definition:
        st.markdown(f"**Task.** {survey.task_definition}")
    st.markdown("**Metrics**")
    for m in survey.metrics:
        st.markdown(f"- **{m['name']}**: {m['definition']}")

mine = sv.votes_of(engine(), expert.id)
metrics = [m["name"] for m in survey.metrics]
st.progress(
    len(mine) / len(survey.questions) if survey.questions else 0.0,
    text=f"{len(mine)} of {len(survey.questions)} answered",
)
for n, q in enumerate(survey.questions, 1):
    key = f"sv_q_{q['key']}"
    if key not in st.session_state and q["key"] in mine:
        st.session_state[key] = mine[q["key"]]
    with st.container(border=True):
        st.markdown(f"**{n}. {q['name']}**: {q['issue']}")
        st.radio(
            "Which metric does this issue impact most?",
            metrics,
            index=None,
            key=key,
            horizontal=True,
            on_change=save,
            args=(q["key"],),
            disabled=not is_open,
        )
if is_open and len(mine) == len(survey.questions):
    st.success("All questions answered. Thank you! You can still change an answer until the survey closes.")
