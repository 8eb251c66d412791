"""The gate on every page: password sign-in, OpenID Connect, the open local mode, the closed mode, and link
holders who see only their page (the pages are run through AppTest; the browser tests are in tests/e2e)."""

from __future__ import annotations

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

import services.database
from services import annotations as an
from services import conseval as ce
from tests.annotation_seed import make_dataset
from tests.app.helpers import HISTORY, ROOT, SETTINGS
from tests.support.conseval import seeded_study
from tests.support.waiting import WAIT_LIMIT

PASSWORD = "correct horse battery staple"
RATE = "pages/9_Rate.py"
ANNOTATE = "pages/7_Annotate.py"
DATASETS = "pages/4_Datasets.py"


def app(page: str | None = None, *, query: dict[str, str] | None = None, secrets: dict | None = None) -> AppTest:
    at = AppTest.from_file(ROOT / "app.py", default_timeout=WAIT_LIMIT)
    for k, v in (secrets or {}).items():
        at.secrets[k] = v
    if query:
        at.query_params.update(query)
    if page:
        at.switch_page(page)
    return at.run()


def sidebar_links(at: AppTest) -> list[str]:
    return [str(e.proto.label) for e in at.sidebar.get("page_link")]


def sign_in(at: AppTest, password: str) -> AppTest:
    at.text_input(key="auth_password").input(password)
    return at.button(key="FormSubmitter:auth_sign_in-Sign in").click().run()


def test_with_a_password_nothing_shows_before_signing_in():
    at = app(secrets={"studio_password": PASSWORD})
    assert not at.exception
    assert at.title[0].value == "Sign in"
    assert sidebar_links(at) == [] and "Consistency Studio checks" not in str([m.value for m in at.markdown])
    at = sign_in(at, "wrong")
    assert not at.exception and any("Wrong password" in e.value for e in at.error)
    assert at.title[0].value == "Sign in"
    at = sign_in(at, PASSWORD)
    assert not at.exception
    assert at.title[0].value == "Consistency Studio"
    assert "History" in sidebar_links(at) and "Settings" in sidebar_links(at)
    assert "auth_password" not in at.session_state, "the typed password is not kept"
    # Signed in for the rest of the session: other pages open; signing out closes them again.
    at.switch_page(HISTORY).run()
    assert not at.exception and at.title[0].value == "History"
    at = at.sidebar.button(key="auth_sign_out").click().run()
    assert at.title[0].value == "Sign in"


def test_the_password_can_come_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("STUDIO_PASSWORD", PASSWORD)
    at = app(SETTINGS)
    assert at.title[0].value == "Sign in"
    at = sign_in(at, PASSWORD)
    assert not at.exception and at.title[0].value == "Settings"


def test_open_on_loopback_with_no_password_and_says_so():
    at = app()
    assert not at.exception and at.title[0].value == "Consistency Studio"
    assert any("no password is set" in c.value for c in at.sidebar.caption)


def test_reachable_from_other_machines_with_no_sign_in_it_shows_nothing():
    config.set_option("server.address", "0.0.0.0")  # restored by the autouse fixture in conftest.py
    for page in (None, HISTORY, SETTINGS):
        at = app(page)
        assert not at.exception
        assert any("STUDIO_PASSWORD" in e.value for e in at.error)
        assert sidebar_links(at) == [] and at.title[0].value == "Consistency Studio"
    assert "Backend in use" not in str([s.value for s in app().subheader])


def test_openid_connect_offers_the_providers_sign_in():
    auth = {
        "redirect_uri": "http://localhost:8501/oauth2callback",
        "cookie_secret": "a-long-random-cookie-secret",
        "google": {
            "client_id": "id",
            "client_secret": "secret",
            "server_metadata_url": "https://accounts.google.com/.well-known/openid-configuration",
        },
    }
    at = app(HISTORY, secrets={"auth": auth, "studio_password": PASSWORD})
    assert not at.exception
    assert at.title[0].value == "Sign in"
    assert [b.label for b in at.button] == ["Sign in with Google"], "OIDC wins over the password"
    assert not at.text_input


@pytest.mark.parametrize("secrets", [{"studio_password": PASSWORD}, {}], ids=["password", "open-local"])
def test_a_link_holder_sees_their_page_and_nothing_else(secrets, judge):
    token = ce.add_rater(services.database.get_engine(), seeded_study(judge, n_items=1), "rita").token
    at = app(RATE, query={"token": token}, secrets=secrets)
    assert not at.exception
    assert at.title[0].value == "Rate" and any("You are **rita**" in m.value for m in at.markdown)
    assert sidebar_links(at) == [], "no navigation for a link holder"
    for page in (HISTORY, SETTINGS, DATASETS, ANNOTATE, None):
        at.query_params.clear()
        at.switch_page(page or "app.py").run()
        assert not at.exception
        assert at.title[0].value == "Not part of your link", page
        assert any("opens only the **Rate** page" in e.value for e in at.error)
        assert sidebar_links(at) == []
    # Back on their page without the token in the URL: still rita, from the session.
    at.switch_page(RATE).run()
    assert not at.exception and any("You are **rita**" in m.value for m in at.markdown)


def test_an_annotators_link_is_refused_other_pages_and_gives_no_owner_controls():
    eng = services.database.get_engine()
    ds, _ = make_dataset(eng, [["One sentence."]])
    ada = an.create_annotator(eng, "ada")
    an.assign(eng, ds, annotators=[ada.id], per_item=1)
    at = app(ANNOTATE, query={"token": an.annotator_token(eng, ada.id)}, secrets={"studio_password": PASSWORD})
    assert not at.exception
    assert any("You are **ada**" in m.value for m in at.markdown)
    assert not at.toggle, "blind mode is the lead's"
    at.query_params.clear()
    at.switch_page(HISTORY).run()
    assert at.title[0].value == "Not part of your link"


def test_a_signed_in_owner_who_opens_a_link_keeps_full_access(judge):
    token = ce.add_rater(services.database.get_engine(), seeded_study(judge, n_items=1), "rita").token
    at = sign_in(app(secrets={"studio_password": PASSWORD}), PASSWORD)
    at.query_params.update({"token": token})
    at.switch_page(RATE).run()
    assert not at.exception and any("You are **rita**" in m.value for m in at.markdown)
    assert "History" in sidebar_links(at), "the owner keeps the navigation"
    at.query_params.clear()
    at.switch_page(HISTORY).run()
    assert at.title[0].value == "History"


def test_the_refusal_leads_back_to_the_holders_own_page(judge):
    token = ce.add_rater(services.database.get_engine(), seeded_study(judge, n_items=1), "rita").token
    at = app(RATE, query={"token": token}, secrets={"studio_password": PASSWORD})
    at.query_params.clear()
    at.switch_page(SETTINGS).run()
    (back,) = at.main.get("page_link")
    assert (back.proto.label, back.proto.page, back.proto.query_string) == ("Back to Rate", "Rate", f"token={token}")


def test_a_bogus_share_url_in_a_raters_session_leaves_the_raters_access(judge):
    token = ce.add_rater(services.database.get_engine(), seeded_study(judge, n_items=1), "rita").token
    at = app(RATE, query={"token": token}, secrets={"studio_password": PASSWORD})
    at.query_params.clear()
    at.query_params.update({"share": "not-a-real-share-token-000000"})
    at.switch_page("pages/12_Reports.py").run()
    assert not at.exception
    assert sidebar_links(at) == []
    at.query_params.clear()
    at.switch_page(RATE).run()
    assert not at.exception and any("You are **rita**" in m.value for m in at.markdown), "still rita"


def test_with_an_unreadable_database_the_sign_in_page_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}")
    at = app(secrets={"studio_password": PASSWORD})
    assert not at.exception
    assert at.title[0].value == "Sign in"
    assert any("The database cannot be opened" in e.value for e in at.error)
