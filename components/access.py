"""The gate at the top of every page (called by `page_setup`): the owner signs in, a link holder sees only the
page of their link. The decisions are in services/auth.py; this layer reads the session, secrets and headers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine

from services import auth, owners
from services.auth import Grant, Mode
from services.config import get_settings

OWNER_KEY = "auth_owner"  # how this session's owner got in: the Mode's value ("password", "open")
GRANT_KEY = "auth_grant"  # a link holder's (kind, token): kept for the whole browser session
VISITOR_KEY = "auth_visitor"  # "owner" or "link", set by the gate on every run
PASSWORD_KEY = "auth_password"
COOKIE_KEY = "auth_cookie"  # this session's sign-in cookie (password mode): checked against the database each run
CLEAR_COOKIE_KEY = "auth_clear_cookie"  # signed out: the browser's cookie is to be removed

HIDE_SIDEBAR = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stSidebarNav"], [data-testid="stTopNav"] {display: none !important;}
</style>
"""


def _secrets() -> dict[str, Any]:
    try:
        return st.secrets.to_dict()
    except Exception:  # no secrets.toml at all (Streamlit raises its own not-found error)
        return {}


def _headers() -> Mapping[str, str]:
    try:
        return dict(st.context.headers)
    except Exception:  # no browser request (a headless test run)
        return {}


def _client_key() -> str:
    """The browser's address: the connection's, or the one a proxy the deployment trusts forwards."""
    try:
        peer = st.context.ip_address  # None on loopback
    except Exception:
        peer = None
    return auth.client_address(peer, _headers(), get_settings().trusted_proxy_list)


def _browser_session() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def _browser_cookie() -> str | None:
    try:
        return st.context.cookies.get(owners.COOKIE)
    except Exception:  # no browser request (a headless test run)
        return None


def _cookie_script(value: str | None) -> str:
    """A script that stores (or, for None, removes) the sign-in cookie in the browser. It cannot be set by the
    server: Streamlit offers pages no response headers."""
    attrs = f"Path=/; SameSite=Strict; Max-Age={owners.cookie_max_age() if value else 0}"
    cookie = json.dumps(f"{owners.COOKIE}={value or ''}; {attrs}")
    return (
        '<span class="cs-cookie" hidden></span><script>'
        f'document.cookie = {cookie} + (location.protocol === "https:" ? "; Secure" : "");</script>'
    )


def _password_owner(engine: Engine | None, password: str) -> bool:
    """Whether this session is the signed-in owner: its cookie (from this session's sign-in, or sent by the
    browser from an earlier one) is signed with the current password and neither expired nor signed out."""
    cookie = st.session_state.get(COOKIE_KEY) or _browser_cookie()
    if cookie and engine is not None and owners.session_owner(engine, cookie, password=password):
        st.session_state[COOKIE_KEY] = cookie
        st.session_state[OWNER_KEY] = Mode.PASSWORD.value
        return True
    st.session_state.pop(COOKIE_KEY, None)
    st.session_state.pop(OWNER_KEY, None)
    return False


def keep_cookie() -> None:
    """Store this session's sign-in cookie in the browser unless it sent that one already (a reload, a new
    tab or a typed URL then stays signed in)."""
    cookie = st.session_state.get(COOKIE_KEY)
    if cookie and cookie != _browser_cookie():
        st.html(_cookie_script(cookie), unsafe_allow_javascript=True)


def sign_in_config() -> tuple[Mode, str, list[str | None], list[str]]:
    """The mode, the password (empty unless in password mode), the OIDC providers and the owners' allow-list."""
    secrets = _secrets()
    settings = get_settings()
    providers = auth.oidc_providers(secrets.get("auth"))
    password = settings.studio_password.get_secret_value() if settings.studio_password else ""
    password = password or str(secrets.get("studio_password") or "")
    allowed = auth.parse_owners(settings.studio_owners or secrets.get("studio_owners"))
    mode = auth.sign_in_mode(
        oidc=bool(providers),
        password=bool(password),
        local_only=auth.is_local_only(st.get_option("server.address"), _headers()),
    )
    return mode, password if mode is Mode.PASSWORD else "", providers, allowed


def _logged_in() -> bool:
    return bool(st.user.get("is_logged_in", False))  # absent where no OIDC cookie was ever set


def _oidc_owner(allowed: list[str]) -> bool:
    return _logged_in() and auth.is_owner_account(st.user.get("email"), allowed)


def gate(page_link: str | None, engine: Engine | None) -> bool:
    """Let this page run for the owner, or for the holder of the link it accepts; otherwise show why not (a
    sign-in form, or a refusal) and stop. Returns True for the owner, False for a link holder."""
    mode, password, providers, allowed = sign_in_config()
    if mode is Mode.OIDC:
        owner = _oidc_owner(allowed)
    elif mode is Mode.PASSWORD:
        owner = _password_owner(engine, password)
    else:
        owner = st.session_state.get(OWNER_KEY) == mode.value
    held = st.session_state.get(GRANT_KEY)
    decision = auth.decide(
        page_link=page_link,
        query=st.query_params.to_dict(),
        owner=owner,
        held=Grant(*held) if held else None,
        mode=mode,
    )
    if decision.grant is not None and not decision.keep_held:
        st.session_state[GRANT_KEY] = (decision.grant.kind, decision.grant.token)
    if decision.show == "owner":
        if mode is Mode.OPEN:
            st.session_state[OWNER_KEY] = mode.value
        st.session_state[VISITOR_KEY] = "owner"
        return True
    st.html(HIDE_SIDEBAR)
    if decision.show == "link":
        if decision.restore:
            st.query_params.update(decision.restore)
        st.session_state[VISITOR_KEY] = "link"
        return False
    st.session_state[VISITOR_KEY] = None
    if decision.show == "refused":
        link = decision.grant.link  # type: ignore[union-attr]
        st.title("Not part of your link")
        st.error(decision.message, icon=":material/lock:")
        st.page_link(
            link.path,
            label=f"Back to {link.page}",
            icon=":material/arrow_back:",
            query_params={link.param: decision.grant.token},
        )  # type: ignore[union-attr]
    elif decision.show == "closed":
        st.title("Consistency Studio")
        st.error(decision.message, icon=":material/lock:")
    elif mode is Mode.OIDC:
        _oidc_form(providers, allowed)
    else:
        if st.session_state.pop(CLEAR_COOKIE_KEY, False):
            st.html(_cookie_script(None), unsafe_allow_javascript=True)
        _password_form(engine, password)
    st.stop()
    return False  # not reached


def is_owner() -> bool:
    """Whether this run's visitor is the owner (the gate has run at the top of the page)."""
    return st.session_state.get(VISITOR_KEY) == "owner"


def _sign_in_title() -> None:
    st.title("Sign in")
    st.caption(
        "Consistency Studio is open to its owner and team. Were you sent a personal link (a survey, a rating, "
        "an annotation queue or a shared report)? Open that link itself: it needs no sign-in."
    )


def _password_form(engine: Engine | None, password: str) -> None:
    _sign_in_title()
    if engine is None:
        st.error(
            "The database cannot be opened, and sign-ins are kept there. Check `DATABASE_URL` (or that the "
            "data folder can be written), then reload.",
            icon=":material/database:",
        )
        return
    client = _client_key()
    with st.form("auth_sign_in"):
        typed = st.text_input("Password", type="password", key=PASSWORD_KEY)
        submitted = st.form_submit_button("Sign in", type="primary", icon=":material/login:")
    if not submitted:
        return
    slowed = owners.sign_in_delay(engine, client) > 0
    with st.spinner("Checking…"):
        ok = owners.attempt_sign_in(engine, client, typed, password, session=_browser_session())
    if ok:
        st.session_state[COOKIE_KEY] = owners.new_owner_session(engine, password=password)
        st.session_state[OWNER_KEY] = Mode.PASSWORD.value
        st.session_state.pop(PASSWORD_KEY, None)
        st.rerun()
    else:
        st.error(
            "Wrong password."
            + (" After repeated wrong passwords the answer to a wrong one comes more slowly." if slowed else ""),
            icon=":material/key_off:",
        )


def _oidc_form(providers: list[str | None], allowed: list[str]) -> None:
    _sign_in_title()
    if _logged_in():  # signed in, but not an account on the allow-list
        st.error(
            f"The account {st.user.get('email') or st.user.get('name') or ''} is not one of this app's owners. "
            "Sign out and use another account, or ask the owner to add it to `studio_owners`.",
            icon=":material/person_off:",
        )
        st.button("Sign out", icon=":material/logout:", on_click=st.logout)
        return
    for name in providers:
        st.button(
            f"Sign in with {name.capitalize()}" if name else "Sign in",
            type="primary",
            icon=":material/login:",
            on_click=st.login,
            args=(name,) if name else (),
            key=f"auth_login_{name or 'default'}",
        )


def _sign_out(engine: Engine | None) -> None:
    cookie = st.session_state.pop(COOKIE_KEY, None)
    if engine is not None:
        owners.end_owner_session(engine, cookie)
    st.session_state.pop(OWNER_KEY, None)
    st.session_state[CLEAR_COOKIE_KEY] = True


def owner_identity() -> str:
    """Whose stored choices (the backend) this owner session uses."""
    mode = sign_in_config()[0]
    email = st.user.get("email") if mode is Mode.OIDC and _logged_in() else None
    return owners.owner_id(mode.value, email)


def render_owner_status(engine: Engine | None) -> None:
    """In the owner's sidebar: how they got in, and how to leave."""
    mode, _, _, allowed = sign_in_config()
    if mode is Mode.OPEN:
        st.caption(
            ":orange[Open: no password is set.] Only this machine reaches the app (served on loopback), so it "
            "is open to its one local user. Set `STUDIO_PASSWORD` before serving it to others."
        )
    elif mode is Mode.PASSWORD:
        st.caption(
            f"Signed in with the studio password. Kept in this browser for {owners.SESSION_DAYS} days, "
            "until you sign out."
        )
        if st.button("Sign out", icon=":material/logout:", key="auth_sign_out"):
            _sign_out(engine)
            st.rerun()
    elif mode is Mode.OIDC:
        st.caption(f"Signed in as {st.user.get('email') or st.user.get('name') or 'the owner'}.")
        if not allowed:
            st.caption(":orange[Every account the provider signs in is admitted: set `studio_owners` to limit it.]")
        st.button("Sign out", icon=":material/logout:", key="auth_sign_out", on_click=st.logout)
