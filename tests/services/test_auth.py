"""Who may see what: sign-in modes, the local-only check, passwords, OIDC allow-lists and the page gate."""

from __future__ import annotations

import pytest

from services import auth
from services.auth import Grant, Mode, decide

TOKEN = "x" * 32


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("", False),  # unset: Streamlit listens on every interface
        (None, False),
        ("192.168.1.10", False),
        ("studio.example.org", False),
    ],
)
def test_only_a_loopback_server_address_is_local(address, local):
    assert auth.is_local_only(address, {}) is local


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-For": "203.0.113.9"},
        {"Forwarded": "for=203.0.113.9"},
        {"X-Real-IP": "203.0.113.9"},
        {"Origin": "https://studio.example.org"},
        {"Host": "studio.example.org"},
    ],
)
def test_a_request_through_a_proxy_or_from_another_origin_is_not_local(headers):
    assert not auth.is_local_only("127.0.0.1", headers)


def test_a_request_from_this_machine_is_local():
    assert auth.is_local_only("127.0.0.1", {"Host": "localhost:8501", "Origin": "http://127.0.0.1:8501"})


def test_sign_in_prefers_oidc_then_a_password_and_opens_only_locally():
    assert auth.sign_in_mode(oidc=True, password=True, local_only=True) is Mode.OIDC
    assert auth.sign_in_mode(oidc=False, password=True, local_only=True) is Mode.PASSWORD
    assert auth.sign_in_mode(oidc=False, password=False, local_only=True) is Mode.OPEN
    assert auth.sign_in_mode(oidc=False, password=False, local_only=False) is Mode.CLOSED


def test_password_matching():
    assert auth.password_matches("correct horse", "correct horse")
    assert not auth.password_matches("correct hors", "correct horse")
    assert not auth.password_matches("", "")  # no password configured admits nobody
    assert auth.password_matches("pässwört", "pässwört")  # non-ASCII compares as UTF-8 bytes


def test_oidc_needs_a_redirect_cookie_secret_and_a_client():
    base = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "s"}
    assert auth.oidc_providers(None) == []
    assert auth.oidc_providers(base) == []
    assert auth.oidc_providers({**base, "client_id": "c"}) == [None]
    assert auth.oidc_providers({**base, "google": {"client_id": "g"}, "okta": {"client_id": "o"}}) == ["google", "okta"]
    assert auth.oidc_providers({"client_id": "c"}) == [], "no redirect or cookie secret: st.login would fail"


def test_the_owners_allow_list():
    owners = auth.parse_owners("Ada@Example.org, @team.example.org")
    assert owners == ["ada@example.org", "@team.example.org"]
    assert auth.is_owner_account("ada@example.org", owners)
    assert auth.is_owner_account("Bob@Team.Example.org", owners)
    assert not auth.is_owner_account("eve@example.org", owners)
    assert not auth.is_owner_account("eve@evil-team.example.org", owners)
    assert not auth.is_owner_account(None, owners)
    assert auth.is_owner_account("anyone@example.com", []), "no list: the provider decides"
    assert auth.parse_owners(["a@x.org", " "]) == ["a@x.org"]


# -- the gate --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(Mode))
def test_the_owner_sees_every_page_links_included(mode):
    for page_link in (None, "share", "annotator"):
        d = decide(page_link=page_link, query={"token": TOKEN, "share": TOKEN}, owner=True, held=None, mode=mode)
        assert d.show == "owner" and d.grant is None


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("kind", list(auth.LINKS))
def test_a_link_makes_the_session_a_link_holder_in_every_mode(mode, kind):
    param = auth.LINKS[kind].param
    d = decide(page_link=kind, query={param: TOKEN}, owner=False, held=None, mode=mode)
    assert d.show == "link" and d.grant == Grant(kind, TOKEN)


@pytest.mark.parametrize("mode", list(Mode))
def test_a_link_holder_is_refused_every_other_page(mode):
    held = Grant("rater", TOKEN)
    for page_link in (None, "share", "expert", "annotator"):
        d = decide(page_link=page_link, query={}, owner=False, held=held, mode=mode)
        assert d.show == "refused" and not d.allowed
        assert d.grant == held, "still a link holder afterwards"
        assert "Rate" in d.message
    # The other page's own link kind with no token of that kind is refused too.
    d = decide(page_link="annotator", query={"share": TOKEN}, owner=False, held=held, mode=mode)
    assert d.show == "refused"


def test_a_link_holder_back_on_their_page_gets_the_token_put_back():
    held = Grant("annotator", TOKEN)
    d = decide(page_link="annotator", query={}, owner=False, held=held, mode=Mode.PASSWORD)
    assert d.show == "link" and d.restore == {"token": TOKEN}


def test_a_new_token_on_the_same_page_replaces_the_held_one():
    held = Grant("annotator", TOKEN)
    d = decide(page_link="annotator", query={"token": "y" * 32}, owner=False, held=held, mode=Mode.OPEN)
    assert d.grant == Grant("annotator", "y" * 32)


def test_another_kind_of_link_in_a_holders_session_does_not_replace_the_held_grant():
    """A share URL (bogus or not) opened in a rater's tab shows the shared-report page, checked there, and the
    rater's access stays."""
    held = Grant("rater", TOKEN)
    d = decide(page_link="share", query={"share": "bogus-" + "z" * 20}, owner=False, held=held, mode=Mode.PASSWORD)
    assert d.show == "link" and d.keep_held
    back = decide(page_link="rater", query={}, owner=False, held=held, mode=Mode.PASSWORD)
    assert back.show == "link" and back.grant == held and back.restore == {"token": TOKEN}


def test_anyone_else_signs_in_is_the_local_user_or_is_refused():
    for page_link in (None, "rater"):  # a link page without its token is the owner's page
        assert decide(page_link=page_link, query={}, owner=False, held=None, mode=Mode.PASSWORD).show == "sign_in"
        assert decide(page_link=page_link, query={}, owner=False, held=None, mode=Mode.OIDC).show == "sign_in"
        assert decide(page_link=page_link, query={}, owner=False, held=None, mode=Mode.OPEN).show == "owner"
        closed = decide(page_link=page_link, query={}, owner=False, held=None, mode=Mode.CLOSED)
        assert closed.show == "closed" and "STUDIO_PASSWORD" in closed.message


def test_an_empty_or_absurd_token_is_no_link():
    for token in ("", "   ", "t" * (auth.MAX_TOKEN + 1)):
        d = decide(page_link="rater", query={"token": token}, owner=False, held=None, mode=Mode.PASSWORD)
        assert d.show == "sign_in"


# -- the address the sign-in back-off counts by ------------------------------------------------------------
def test_a_forwarded_address_counts_only_from_a_trusted_proxy():
    xff = {"X-Forwarded-For": "198.51.100.7, 10.0.0.2"}
    assert auth.client_address("203.0.113.5", xff, []) == "203.0.113.5", "no proxy trusted: the connection's"
    assert auth.client_address("203.0.113.5", xff, ["10.0.0.0/8"]) == "203.0.113.5", "a client writing a header"
    assert auth.client_address("10.0.0.1", xff, ["10.0.0.0/8"]) == "198.51.100.7", "the nearest untrusted hop"
    assert auth.client_address(None, xff, ["127.0.0.1"]) == "10.0.0.2", "a proxy on this machine: its last hop"
    assert auth.client_address(None, {}, ["127.0.0.1"]) == "", "no header: the proxy's own connection"
    assert auth.client_address("10.0.0.1", {"x-forwarded-for": "10.0.0.3"}, ["10.0.0.0/8"]) == "10.0.0.1"
    assert auth.client_address("10.0.0.1", xff, ["not an address"]) == "10.0.0.1"
