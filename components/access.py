"""The gate at the top of every page (called by `page_setup`): the owner signs in, a link holder sees only the
page of their link. The decisions are in services/auth.py; this layer reads the session, secrets and headers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import streamlit as st

from services import auth
from services.auth import Grant, Mode
from services.config import get_settings

OWNER_KEY = "auth_owner"  # how this session's owner got in: the Mode's value ("password", "open")
GRANT_KEY = "auth_grant"  # a link holder's (kind, token): kept for the whole browser session
VISITOR_KEY = "auth_visitor"  # "owner" or "link", set by the gate on every run
PASSWORD_KEY = "auth_password"

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
    try:
        return st.context.ip_address or ""
    except Exception:
        return ""


def sign_in_config() -> tuple[Mode, str, list[str | None], list[str]]:
    """The mode, the password (empty unless in password mode), the OIDC providers and the owners' allow-list."""
    secrets = _secrets()
    settings = get_settings()
    providers = auth.oidc_providers(secrets.get("auth"))
    password = settings.studio_password.get_secret_value() if settings.studio_password else ""
    password = password or str(secrets.get("studio_password") or "")
    owners = auth.parse_owners(settings.studio_owners or secrets.get("studio_owners"))
    mode = auth.sign_in_mode(
        oidc=bool(providers),
        password=bool(password),
        local_only=auth.is_local_only(st.get_option("server.address"), _headers()),
    )
    return mode, password if mode is Mode.PASSWORD else "", providers, owners


def _logged_in() -> bool:
    return bool(st.user.get("is_logged_in", False))  # absent where no OIDC cookie was ever set


def _oidc_owner(owners: list[str]) -> bool:
    return _logged_in() and auth.is_owner_account(st.user.get("email"), owners)


def gate(page_link: str | None) -> bool:
    """Let this page run for the owner, or for the holder of the link it accepts; otherwise show why not (a
    sign-in form, or a refusal) and stop. Returns True for the owner, False for a link holder."""
    mode, password, providers, owners = sign_in_config()
    if mode is Mode.OIDC:
        owner = _oidc_owner(owners)
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
    if decision.grant is not None:
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
        _oidc_form(providers, owners)
    else:
        _password_form(password)
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


def _password_form(password: str) -> None:
    _sign_in_title()
    client = _client_key()
    with st.form("auth_sign_in"):
        typed = st.text_input("Password", type="password", key=PASSWORD_KEY)
        submitted = st.form_submit_button("Sign in", type="primary", icon=":material/login:")
    if not submitted:
        return
    wait = auth.PASSWORD_THROTTLE.wait(client)
    if wait > 0:
        st.error(f"Too many wrong passwords. Try again in {math.ceil(wait)} s.", icon=":material/timer:")
    elif auth.password_matches(typed, password):
        auth.PASSWORD_THROTTLE.succeeded(client)
        st.session_state[OWNER_KEY] = Mode.PASSWORD.value
        st.session_state.pop(PASSWORD_KEY, None)
        st.rerun()
    else:
        auth.PASSWORD_THROTTLE.failed(client)
        st.error("Wrong password.", icon=":material/key_off:")


def _oidc_form(providers: list[str | None], owners: list[str]) -> None:
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


def render_owner_status() -> None:
    """In the owner's sidebar: how they got in, and how to leave."""
    mode, _, _, owners = sign_in_config()
    if mode is Mode.OPEN:
        st.caption(
            ":orange[Open: no password is set.] Only this machine reaches the app (served on loopback), so it "
            "is open to its one local user. Set `STUDIO_PASSWORD` before serving it to others."
        )
    elif mode is Mode.PASSWORD:
        st.caption("Signed in with the studio password.")
        if st.button("Sign out", icon=":material/logout:", key="auth_sign_out"):
            st.session_state.pop(OWNER_KEY, None)
            st.rerun()
    elif mode is Mode.OIDC:
        st.caption(f"Signed in as {st.user.get('email') or st.user.get('name') or 'the owner'}.")
        if not owners:
            st.caption(":orange[Every account the provider signs in is admitted: set `studio_owners` to limit it.]")
        st.button("Sign out", icon=":material/logout:", key="auth_sign_out", on_click=st.logout)
