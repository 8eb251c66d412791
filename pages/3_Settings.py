"""Settings: the embedded model or any OpenAI-compatible endpoint, and the generation parameters."""

import streamlit as st
from pydantic import SecretStr

from components.ui import (
    API_KEY_KEY,
    KEY_MISSING,
    current_backend,
    demo_notice,
    key_missing,
    page_setup,
    set_backend,
)
from db.redact import redact_url
from services.config import EMBEDDED_MODEL_NAME, get_settings
from services.embedded import server_available
from services.runs import connection_check

page_setup("Settings", ":material/tune:")
backend = current_backend()

PRESETS = {
    "OpenAI": ("https://api.openai.com/v1", "gpt-4o-mini"),
    "Ollama": ("http://localhost:11434/v1", "llama3.1"),
    "vLLM": ("http://localhost:8000/v1", "meta-llama/Llama-3.1-8B-Instruct"),
    "llama.cpp server": ("http://localhost:8080/v1", "default"),
    "Other": (None, None),
}

st.title("Settings")
if flash := st.session_state.pop("se_flash", None):
    st.success(flash, icon=":material/check_circle:")
st.caption(
    "Saved choices are kept for you: a reload, a new tab or another browser session starts with them. An API "
    "key typed here is never stored: it lasts for this browser session. Defaults come from `LLM_BASE_URL`, "
    "`LLM_MODEL`, `LLM_API_KEY` / `OPENAI_API_KEY` in the environment or `.streamlit/secrets.toml`."
)
if key_missing(backend):
    st.warning(KEY_MISSING.format(model=backend.model), icon=":material/key_off:")

kind = st.radio(
    "Backend",
    ["embedded", "openai"],
    index=0 if backend.is_embedded else 1,
    format_func={
        "embedded": f"Embedded demo model ({EMBEDDED_MODEL_NAME}, offline)",
        "openai": "OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server…)",
    }.get,
    horizontal=True,
)
if kind == "embedded":
    demo_notice(backend.with_changes(kind="embedded"))
    if not server_available():
        st.error("The embedded model is not installed here. Run `make install`, or connect an endpoint.")

with st.form("settings"):
    base_url, model, typed_key = None, backend.model, None
    price_in, price_out = backend.price_input_per_million, backend.price_output_per_million
    if kind == "openai":
        preset = st.selectbox("Preset", list(PRESETS), index=len(PRESETS) - 1 if backend.base_url else 0)
        p_url, p_model = PRESETS[preset]
        c = st.columns(2)
        # Credentials inside the URL (user:key@host) are never shown: the field holds the URL without them,
        # and when it comes back unchanged the URL in use, credentials and all, is kept.
        shown_url = redact_url(backend.base_url) if not backend.is_embedded else None
        base_url = c[0].text_input(
            "Base URL",
            value=shown_url or p_url or "",
            help="The OpenAI-compatible root, ending in /v1. Credentials in the URL in use (user:key@host) are "
            "not shown, and kept while this field is left as it is.",
        )
        if shown_url and base_url == shown_url:  # left as it was: the URL in use
            base_url = backend.base_url
        model = c[1].text_input(
            "Model",
            value=(backend.model if not backend.is_embedded else None) or p_model or "",
        )
        env_key = get_settings().llm_api_key is not None
        typed_key = st.text_input(
            "API key",
            type="password",
            value="",
            placeholder="Using the key from the environment" if env_key else "Not needed for most local servers",
            help="Kept for this browser session only; never saved to the database, logs or exports.",
        )
        if st.session_state.get(API_KEY_KEY):
            st.caption("A key typed earlier in this session is in use. Type a new one to replace it.")
        c = st.columns(2)
        price_in = c[0].number_input(
            "Price per million input tokens (USD)",
            min_value=0.0,
            value=backend.price_input_per_million,
            step=0.05,
            format="%.3f",
            placeholder="unknown",
            help="For the cost estimate shown before a run; leave empty when unknown. Not part of any cache key.",
        )
        price_out = c[1].number_input(
            "Price per million output tokens (USD)",
            min_value=0.0,
            value=backend.price_output_per_million,
            step=0.05,
            format="%.3f",
            placeholder="unknown",
            help="For the cost estimate shown before a run; leave empty when unknown.",
        )
    c = st.columns(4)
    temperature = c[0].number_input("Temperature", 0.0, 2.0, float(backend.temperature), 0.1)
    max_tokens = c[1].number_input("Max tokens", 16, 32768, int(backend.max_tokens), 64)
    concurrency = c[2].number_input("Concurrency", 1, 64, int(backend.concurrency), 1)
    timeout = c[3].number_input("Timeout (s)", 1.0, 3600.0, float(backend.timeout), 5.0)
    with st.container(horizontal=True):
        save = st.form_submit_button("Save", type="primary", icon=":material/save:")
        test = st.form_submit_button("Test connection", icon=":material/lan:")

# What a "Test connection" outcome is about: it is shown again on later reruns until one of these changes.
tested_fields = (kind, (base_url or "").strip(), (model or "").strip(), float(timeout), bool(typed_key))
if save or test:
    errors = []
    if kind == "openai":
        if not (base_url or "").strip().startswith(("http://", "https://")):
            errors.append("The base URL must start with http:// or https://.")
        if not (model or "").strip():
            errors.append("Name the model to use.")
    if errors:
        for e in errors:
            st.error(e)
    else:
        new = backend.with_changes(
            kind=kind,
            base_url=(base_url or "").strip().rstrip("/") or None,
            model=(model or "").strip() if kind == "openai" else EMBEDDED_MODEL_NAME,
            temperature=float(temperature),
            max_tokens=int(max_tokens),
            concurrency=int(concurrency),
            timeout=float(timeout),
            price_input_per_million=price_in if kind == "openai" else None,
            price_output_per_million=price_out if kind == "openai" else None,
        )
        if typed_key:
            new = new.with_changes(api_key=SecretStr(typed_key))
        elif kind == "openai" and new.api_key is None and get_settings().llm_api_key is not None:
            new = new.with_changes(api_key=get_settings().llm_api_key)
        if save:
            set_backend(new, typed_key or None)
            st.session_state.se_flash = f"Saved: {current_backend().label}."
            st.rerun()  # so the sidebar shows the new backend at once
        with st.spinner("Testing the connection…" if kind == "openai" else "Starting the embedded model…"):
            ok, msg = connection_check(new)
        # Kept for the fields as tested: a rerun that comes before the user reads it (another widget, the
        # sign-in cookie's first round trip) must not wipe it, which left the first press showing nothing.
        st.session_state.se_tested = (tested_fields, ok, msg)
tested = st.session_state.get("se_tested")
if tested and tested[0] == tested_fields:
    (st.success if tested[1] else st.error)(tested[2])
    st.caption("Testing does not save; press Save to use these settings.")
