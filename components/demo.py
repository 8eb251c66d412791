"""The demo workspace in the app: opened and left per browser session, its banner and tour on every page.

While it is open, `components.ui.engine()` is the workspace's own database, so every page reads and writes it and
never the user's; jobs started meanwhile run in this process on it (services.jobs.queue.run_here), since the
workers read the user's database. A link with ?demo=1 (the tour's links, a share link made in the demo) opens it
in the session it starts.
"""

from __future__ import annotations

import html

import streamlit as st

from services.demo import workspace
from services.demo.build import Tour

KEY = "demo_open"  # this browser session shows the demo workspace
PARAM = "demo"


def is_open() -> bool:
    """Whether this browser session shows the demo workspace (False outside a script run)."""
    try:
        return bool(st.session_state.get(KEY))
    except Exception:  # outside a browser session's script run
        return False


@st.cache_resource(show_spinner=False)
def _engine(path: str):
    return workspace.engine()


def engine():
    """The demo workspace's engine (the file of this version of the app)."""
    return _engine(str(workspace.path()))


def tour() -> Tour | None:
    """Where the tour's steps point; None when the workspace is not built."""
    try:
        return workspace.ensure() if workspace.is_built() else None
    except Exception:  # a damaged workspace file: the banner offers to leave
        return None


def sync() -> None:
    """Open the demo for a session whose link asks for it (?demo=1); close it where the deployment turned it off
    or its file is gone."""
    if st.query_params.get(PARAM) == "1" and not st.session_state.get(KEY):
        if workspace.enabled() and workspace.is_built():
            st.session_state[KEY] = True
            st.cache_data.clear()  # as on opening it from Home
    if st.session_state.get(KEY) and not (workspace.enabled() and workspace.is_built()):
        st.session_state[KEY] = False


def open_workspace() -> Tour:
    """Build the workspace if this version has none (offline, once), and show it in this session."""
    built = workspace.ensure()
    st.session_state[KEY] = True
    st.query_params[PARAM] = "1"
    st.cache_data.clear()  # cached figures are keyed by ids, which both databases use
    return built


def leave_workspace() -> None:
    """Back to the user's own database."""
    st.session_state[KEY] = False
    st.query_params.pop(PARAM, None)
    st.cache_data.clear()


def step_links(t: Tour) -> list[tuple[str, str]]:
    """(label, relative URL) of each step of the tour: the page, the demo asked for, and the place on it."""
    where = {
        "Judges": "Judges?demo=1",
        "Evaluate": f"Evaluate?demo=1&run={t.run_id}",
        "Reports": f"Reports?demo=1&share={t.share_token}",
    }
    return [(label, where[page] + (f"#{anchor}" if anchor else "")) for label, page, anchor in workspace.TOUR]


def render_banner() -> None:
    """The banner every page shows in the demo: what the numbers are, the tour, and the way out."""
    t = tour()
    links = " → ".join(
        f'<a href="{html.escape(url)}" target="_self">{html.escape(label)}</a>' for label, url in step_links(t)
    ) if t else ""  # fmt: skip
    with st.container(border=True, key="demo_banner"):
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        c1.markdown(
            f":material/science: **{workspace.BANNER}.** Invented texts, three invented systems, offline judges and "
            "scripted raters: every number here describes this made-up workspace, never real data. "
            "Your own data is untouched.",
        )
        if links:
            c1.markdown(f"Tour: {links}", unsafe_allow_html=True)
        if c2.button("Leave the demo", icon=":material/logout:", key="demo_leave", width="stretch"):
            leave_workspace()
            st.rerun()
