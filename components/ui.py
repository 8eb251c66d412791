"""The thin Streamlit layer shared by every page: engine, backend, sidebar, styles."""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st
from pydantic import SecretStr

from components import access, demo
from db.redact import split_userinfo
from services import owners
from services.config import EMBEDDED_MODEL_NAME, BackendConfig, backend_from_settings, get_settings
from services.database import get_engine
from services.llm import keys as llm_keys

log = logging.getLogger(__name__)

BACKEND_KEY = "backend"  # public backend fields (no key) for this browser session
API_KEY_KEY = "backend_api_key"  # a key typed in Settings: this browser session only, never saved
RESTORED_KEY = "backend_restored"  # the owner's stored backend has been read into this session
NEEDS_KEY = "backend_needs_key"  # the stored backend's key (or URL credentials) was typed: type it again

CSS = """
<style>
.cs-text {line-height: 1.9; font-size: 1.02rem;}
.cs-s {padding: 2px 3px; border-radius: 4px; cursor: help;}
.cs-consistent {background: #d9f2e3; border-bottom: 2px solid #2e9d5b;}
.cs-inconsistent {background: #fbdada; border-bottom: 2px solid #d13c3c;}
.cs-unknown {background: #eceff3; border-bottom: 2px dashed #8a94a6;}
.cs-card {border-left: 5px solid #8a94a6; padding: 0.45rem 0.8rem; margin: 0.35rem 0; background: #fafbfc;
  border-radius: 4px;}
.cs-card.cs-consistent {border-left-color: #2e9d5b; background: #f3fbf6; border-bottom: none;}
.cs-card.cs-inconsistent {border-left-color: #d13c3c; background: #fdf4f4; border-bottom: none;}
.cs-card.cs-unknown {border-left-color: #8a94a6; background: #f6f7f9; border-bottom: none;}
.cs-chip {display: inline-block; font-size: 0.75rem; font-weight: 600; padding: 1px 8px; border-radius: 10px;
  margin-right: 6px; color: white;}
.cs-chip.consistent {background: #2e9d5b;} .cs-chip.inconsistent {background: #d13c3c;}
.cs-chip.unknown {background: #8a94a6;}
.cs-reason {color: #4a5363; font-size: 0.9rem; margin-top: 2px;}
.cs-err {color: #a8571b; font-size: 0.85rem;}
.cs-del {background: #fbdada; text-decoration: line-through; color: #8b1e1e;}
.cs-ins {background: #d9f2e3; text-decoration: none; color: #12532f; font-weight: 500;}
.cs-novel {background: #ffe28a; color: inherit; padding: 0 2px; border-radius: 3px; border-bottom: 2px solid #d99a00;}
.cs-novel-number, .cs-novel-name {background: #ffc46b; border-bottom-color: #c25e00; font-weight: 600;}
.cs-ev {color: #4a5363; font-size: 0.85rem; margin-top: 3px; padding-left: 6px; border-left: 2px solid #c9d1dc;}
.cs-ev-contradict {border-left-color: #d13c3c;}
.cs-ev-role {font-weight: 600; text-transform: uppercase; font-size: 0.7rem; letter-spacing: 0.03em;}
.cs-ev-contradict .cs-ev-role {color: #b02a2a;}
.cs-checker {font-size: 0.85rem; margin-top: 4px; padding: 2px 6px; border-radius: 4px; border: 1px dashed #8a94a6;}
.cs-checker.consistent {background: #f0f8f3;} .cs-checker.inconsistent {background: #fcf0f0;}
.stElementContainer:has(.cs-cookie), .stElementContainer:has(.cs-script) {display: none;}
.cs-flag {font-size: 0.85rem; margin-top: 4px; padding: 2px 6px; border-radius: 4px; background: #fff4d6;
  border: 1px solid #e0a800;}
</style>
"""


@st.cache_resource(show_spinner=False)
def app_engine():
    """The user's database engine, created and migrated once per process."""
    return get_engine()


def engine():
    """The database this browser session shows: the demo workspace's while it is open, else the user's."""
    if demo.is_open():
        return demo.engine()
    return app_engine()


def batch_worker():
    """The background worker that runs batches: started with the app by serve.py, else by the first page
    shown (once per server process; again if it died)."""
    from services.jobs.queue import ensure_worker

    return ensure_worker()


def _jobs_run_on(eng) -> None:
    """Jobs this session starts go to the workers (None), or run in this process on `eng` (the demo)."""
    from services.jobs.queue import run_here

    run_here(eng)


def restore_backend(eng) -> None:
    """Once per browser session: the backend the owner last saved on Settings (stored per owner)."""
    if st.session_state.get(RESTORED_KEY) or BACKEND_KEY in st.session_state:
        st.session_state[RESTORED_KEY] = True
        return
    st.session_state[RESTORED_KEY] = True
    stored = owners.load_backend(eng, access.owner_identity())
    if stored is not None:
        st.session_state[BACKEND_KEY] = stored.fields
        st.session_state[NEEDS_KEY] = stored.needs_secret


def key_missing(backend: BackendConfig) -> bool:
    """A call would lack a key the endpoint asks for: none is set (typed, environment, secrets, URL) and the
    endpoint refused a keyless call with 401, or, not called without one yet in this process, the owner had
    typed a key for it in an earlier session. An endpoint seen answering without a key needs none."""
    if backend.is_embedded or backend.api_key is not None or split_userinfo(backend.base_url or "")[1]:
        return False
    asks = llm_keys.asks_for_key(backend.public_url)
    if asks is not None:
        return asks
    return bool(st.session_state.get(NEEDS_KEY))


KEY_MISSING = (
    "The API key for **{model}** was typed on Settings in an earlier session and is not stored (keys never "
    "are). Enter it again on **Settings**; until then calls to this endpoint fail instead of going anywhere else."
)


def current_backend() -> BackendConfig:
    """The backend this browser session uses: Settings page choices over the environment defaults."""
    base = backend_from_settings()
    chosen = st.session_state.get(BACKEND_KEY)
    if chosen:
        base = base.with_changes(**chosen)
    typed = st.session_state.get(API_KEY_KEY)
    if typed:
        base = base.with_changes(api_key=SecretStr(typed))
    elif not base.is_embedded and base.api_key is None:
        env_key = get_settings().llm_api_key
        if env_key is not None:
            base = base.with_changes(api_key=env_key)
    return base


def set_backend(backend: BackendConfig, typed_key: str | None) -> None:
    """Remember a backend for this browser session, and for the owner's later sessions (stored without its
    key); a typed key lives only in session state."""
    d = backend.public()
    d.pop("has_api_key", None)
    d["base_url"] = backend.base_url  # this session's memory only: credentials in it are never stored
    for k in ("price_input_per_million", "price_output_per_million"):
        d[k] = getattr(backend, k)
    st.session_state[BACKEND_KEY] = d
    if typed_key:
        st.session_state[API_KEY_KEY] = typed_key
    elif typed_key == "":
        st.session_state.pop(API_KEY_KEY, None)
    # Saved with the warning in view and no key typed: the endpoint needs none.
    st.session_state.pop(NEEDS_KEY, None)
    typed = bool(st.session_state.get(API_KEY_KEY)) and not backend.is_embedded
    try:
        owners.save_backend(app_engine(), access.owner_identity(), backend, typed_key=typed)
    except Exception:  # kept for this session all the same; the next one starts on the defaults
        log.exception("the chosen backend could not be stored")
        st.warning("The database cannot be written: this choice lasts for this browser session only.")


def backend_caption(backend: BackendConfig) -> str:
    """One line for a Start/Run form: the model this run will call."""
    if backend.is_embedded:
        return f"Model: **embedded demo model** `{EMBEDDED_MODEL_NAME}` (offline) · change it on Settings"
    where = f"`{backend.model}` at `{backend.public_url}`"
    if key_missing(backend):
        return f"Model: {where} · :red[its API key must be entered again on Settings]"
    return f"Model: {where} · temperature {backend.temperature:g} · change it on Settings"


def render_backend_line(backend: BackendConfig) -> None:
    """The model a Start/Run button will use, inside its form."""
    st.caption(backend_caption(backend))


def demo_notice(backend: BackendConfig) -> None:
    """Say plainly that the embedded model is a demo-grade judge."""
    if backend.is_embedded:
        st.warning(
            f"**Demo judge.** The embedded {EMBEDDED_MODEL_NAME} (135M parameters, runs offline) makes the app "
            "work without a network, but its verdicts are near chance: it often repeats the prompt's template "
            "instead of judging. Do not read quality into them. Connect a real model (OpenAI, vLLM, Ollama, a "
            "llama.cpp server) on the **Settings** page.",
            icon=":material/science:",
        )


# The sidebar, in reading order; a page whose file is absent is skipped.
NAV: list[tuple[str, str, str]] = [
    ("app.py", "Home", ":material/home:"),
    ("pages/1_Evaluate.py", "Evaluate", ":material/fact_check:"),
    ("pages/2_History.py", "History", ":material/history:"),
    ("pages/4_Datasets.py", "Datasets", ":material/dataset:"),
    ("pages/5_Batches.py", "Batches", ":material/dynamic_feed:"),
    ("pages/7_Annotate.py", "Annotate", ":material/edit_note:"),
    ("pages/6_Meta-evaluation.py", "Meta-evaluation", ":material/query_stats:"),
    ("pages/13_Judges.py", "Judges", ":material/gavel:"),
    ("pages/8_ConsEval.py", "ConsEval", ":material/balance:"),
    ("pages/10_DHP.py", "DHP", ":material/troubleshoot:"),
    ("pages/12_Reports.py", "Reports", ":material/summarize:"),
    ("pages/3_Settings.py", "Settings", ":material/tune:"),
]
ROOT = Path(__file__).resolve().parent.parent
ICON = Path(__file__).resolve().parent / "icon.png"


def page_setup(title: str, icon: str, *, link: str | None = None) -> BackendConfig:
    """Common page start: config, styles, the access gate, the owner's sidebar. Returns the backend in use.

    link: the kind of personal link this page also opens for its holder (services.auth.LINKS); every other
    page is the owner's only. A link holder gets no sidebar and no navigation."""
    # The tab's icon is a file shipped with the app: a Material icon there is fetched from fonts.gstatic.com,
    # which an offline machine cannot reach. (`icon` is the page's own, for links to it.)
    st.set_page_config(page_title=f"{title} · Consistency Studio", page_icon=ICON, layout="wide")
    batch_worker()
    st.html(CSS)
    try:
        eng = app_engine()  # sign-in and the stored backend are the user's, in the demo too
    except Exception:  # an unreadable database: the page says so where it reads it; the gate does without
        log.exception("the database cannot be opened")
        eng = None
    owner = access.gate(link, eng)
    if owner and eng is not None:
        restore_backend(eng)
    backend = current_backend()
    demo.sync()
    _jobs_run_on(demo.engine() if demo.is_open() else None)
    if demo.is_open():
        demo.render_banner()
    if not owner:
        return backend
    with st.sidebar:
        st.markdown("### Consistency Studio")
        for path, label, icon in NAV:
            if (ROOT / path).is_file():
                st.page_link(path, label=label, icon=icon)
        st.divider()
        st.caption("Backend in use")
        if backend.is_embedded:
            st.markdown(f"**Embedded demo model**  \n`{EMBEDDED_MODEL_NAME}` · offline")
            st.caption(":orange[Demo-grade judge: near chance on consistency.]")
        else:
            st.markdown(f"**{backend.model}**  \n`{backend.public_url}`")
        st.caption(f"temperature {backend.temperature:g} · max tokens {backend.max_tokens}")
        if key_missing(backend):
            st.warning(KEY_MISSING.format(model=backend.model), icon=":material/key_off:")
        st.divider()
        access.render_owner_status(eng)
        access.keep_cookie()
    return backend
