"""Settings page: choosing an endpoint, validation, the session-only API key, and "Test connection"."""

from __future__ import annotations

from pathlib import Path

import pytest

import services.database
from components.ui import API_KEY_KEY, BACKEND_KEY
from services import runs
from tests.app.helpers import CAND, EVALUATE, REF, SETTINGS, click, counts, texts

SECRET = "sk-test-5f3c9e1d-never-store-me"


def endpoint_form(open_page, base_url: str, model: str = "fake-model", key: str = ""):
    """Settings with the OpenAI-compatible backend chosen and the form filled in (not submitted)."""
    at = open_page(SETTINGS)
    assert not at.exception
    at = at.radio[0].set_value("openai").run()
    assert not at.exception
    by_label = {t.label: t for t in at.text_input}
    by_label["Base URL"].input(base_url)
    by_label["Model"].input(model)
    if key:
        by_label["API key"].input(key)
    return at


@pytest.mark.parametrize("base_url", ["localhost:8000/v1", "", "ftp://example.com/v1"])
def test_invalid_base_url_is_refused(open_page, base_url):
    at = click(endpoint_form(open_page, base_url), "Save")
    assert not at.exception
    assert "The base URL must start with http:// or https://." in texts(at.error)
    assert BACKEND_KEY not in at.session_state and API_KEY_KEY not in at.session_state
    assert not at.success


def test_missing_model_is_refused(open_page, judge):
    at = click(endpoint_form(open_page, judge.base_url, model="  "), "Save")
    assert "Name the model to use." in texts(at.error)
    assert BACKEND_KEY not in at.session_state


@pytest.mark.sqlite_only  # searches the SQLite file's bytes; the key-leak search on PostgreSQL is elsewhere
def test_saved_endpoint_is_used_and_the_typed_key_lives_only_in_session_state(open_page, judge, tmp_path):
    at = click(endpoint_form(open_page, judge.base_url + "/", key=SECRET), "Save")
    assert not at.exception
    assert not at.error, texts(at.error)
    assert f"Saved: fake-model at {judge.base_url}." in texts(at.success)
    saved = at.session_state[BACKEND_KEY]
    assert (saved["kind"], saved["base_url"], saved["model"]) == ("openai", judge.base_url, "fake-model")
    assert "api_key" not in saved and SECRET not in repr(saved)
    assert at.session_state[API_KEY_KEY] == SECRET

    # Evaluate with it: the key goes to the server, and nowhere else.
    at.switch_page(EVALUATE).run()
    assert not at.exception
    at.text_area(key="ev_reference").input(REF)
    at.text_area(key="ev_candidate").input(CAND)
    at = click(at, "Evaluate")
    assert not at.exception
    assert not at.error, texts(at.error)
    assert counts()["runs"] == 1
    assert judge.request_headers[-1]["authorization"] == f"Bearer {SECRET}"
    detail = runs.load(services.database.get_engine(), 1)
    assert detail.run.base_url == judge.base_url
    assert detail.run.params.get("has_api_key") is True

    for name, value in at.session_state.items():
        if name != API_KEY_KEY:
            assert SECRET not in repr(value), f"the key leaked into session_state[{name!r}]"
    services.database.get_engine().dispose()  # flush the WAL so every byte is on disk
    files = [p for p in Path(tmp_path).rglob("*") if p.is_file()]
    assert any(p.name == "app.db" for p in files)
    for p in files:
        assert SECRET.encode() not in p.read_bytes(), f"the API key was written to {p}"


def test_sidebar_and_form_follow_the_saved_backend(open_page, judge):
    at = click(endpoint_form(open_page, judge.base_url), "Save")
    at = at.run()
    assert any("fake-model" in t and judge.base_url in t for t in texts(at.sidebar.markdown))
    assert at.radio[0].value == "openai"
    assert {t.label: t.value for t in at.text_input}["Base URL"] == judge.base_url


def test_test_connection_reports_success_against_the_fake(open_page, judge):
    at = click(endpoint_form(open_page, judge.base_url), "Test connection")
    assert not at.exception
    ok = [s for s in texts(at.success) if s.startswith("Connected to")]
    assert ok and f"Connected to {judge.base_url}: model 'fake-model' answered 'OK'" in ok[0], texts(at.success)
    assert not at.error
    assert BACKEND_KEY not in at.session_state, "testing is a dry run: it does not save the settings"
    assert any("does not save" in c for c in texts(at.caption))


def test_test_connection_reports_an_unreachable_server(open_page, closed_url, monkeypatch):
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    at = endpoint_form(open_page, closed_url)
    by_label = {n.label: n for n in at.number_input}
    by_label["Timeout (s)"].set_value(5.0)
    at = click(at, "Test connection")
    assert not at.exception
    errors = texts(at.error)
    assert any(e.startswith(f"Cannot reach {closed_url}") for e in errors), errors
    assert not any(s.startswith("Connected") for s in texts(at.success))


def test_sidebar_shows_the_new_backend_right_after_save(open_page, closed_url):
    at = click(endpoint_form(open_page, closed_url), "Save")
    assert any(closed_url in t for t in texts(at.sidebar.markdown)), texts(at.sidebar.markdown)


def test_a_new_browser_session_starts_on_the_saved_backend_and_its_prices(open_page, judge):
    at = endpoint_form(open_page, judge.base_url)
    by_label = {n.label: n for n in at.number_input}
    by_label["Price per million input tokens (USD)"].set_value(0.5)
    by_label["Price per million output tokens (USD)"].set_value(1.5)
    click(at, "Save")
    again = open_page(SETTINGS)  # another AppTest: a new session with empty session state
    assert not again.exception
    assert any("fake-model" in t and judge.base_url in t for t in texts(again.sidebar.markdown))
    assert not any("Embedded demo model" in t for t in texts(again.sidebar.markdown))
    prices = {n.label: n.value for n in again.number_input}
    assert prices["Price per million input tokens (USD)"] == 0.5
    assert prices["Price per million output tokens (USD)"] == 1.5
    assert not again.warning, "no key was typed: none is missing"


def test_a_new_session_says_a_typed_key_must_be_entered_again(open_page, judge):
    click(endpoint_form(open_page, judge.base_url, key=SECRET), "Save")
    again = open_page(EVALUATE)
    assert not again.exception
    assert any("Enter it again on **Settings**" in w for w in texts(again.sidebar.warning))
    assert any("fake-model" in t for t in texts(again.sidebar.markdown)), "still the chosen endpoint"


def test_the_key_warning_goes_once_the_endpoint_answers_without_one(open_page, judge):
    """The owner typed a key, but the server needs none: after a call that went through without a key, no page
    says the key must be entered again (the walk-through saw calls succeed under that red line)."""
    click(endpoint_form(open_page, judge.base_url, key=SECRET), "Save")
    again = open_page(SETTINGS)
    assert any("Enter it again on **Settings**" in w for w in texts(again.sidebar.warning))
    again = click(again, "Test connection")  # no key typed in this session: a keyless call, and it answers
    assert any(s.startswith("Connected to") for s in texts(again.success)), texts(again.success)
    assert (
        "authorization" not in judge.request_headers[-1] or "not-needed" in judge.request_headers[-1]["authorization"]
    )
    again.switch_page(EVALUATE).run()
    assert not again.exception
    assert not any("Enter it again" in w for w in texts(again.sidebar.warning)), texts(again.sidebar.warning)
    assert not any("entered again" in c for c in texts(again.caption))


def test_the_key_warning_goes_when_the_environment_supplies_a_key(open_page, judge, monkeypatch):
    click(endpoint_form(open_page, judge.base_url, key=SECRET), "Save")
    again = open_page(EVALUATE)
    assert any("Enter it again on **Settings**" in w for w in texts(again.sidebar.warning))
    monkeypatch.setenv("LLM_API_KEY", "sk-from-the-environment")
    again.run()
    assert not again.exception
    assert not any("Enter it again" in w for w in texts(again.sidebar.warning)), texts(again.sidebar.warning)


def test_an_endpoint_that_refused_a_keyless_call_keeps_the_warning(open_page, judge):
    from services.llm import keys

    click(endpoint_form(open_page, judge.base_url, key=SECRET), "Save")
    keys.remember(judge.base_url, asks=False)
    again = open_page(EVALUATE)
    assert not any("Enter it again" in w for w in texts(again.sidebar.warning))
    judge.enqueue_status(401)
    again = click(open_page(SETTINGS), "Test connection")
    assert any("401" in e for e in texts(again.error)), texts(again.error)
    again.switch_page(EVALUATE).run()
    assert any("Enter it again on **Settings**" in w for w in texts(again.sidebar.warning))


URL_KEY = "Zq7-base-url-credential-" + "p" * 10


def test_the_base_url_field_hides_url_credentials_and_keeps_them_when_left_alone(open_page, judge, monkeypatch):
    with_creds = judge.base_url.replace("http://", f"http://studio:{URL_KEY}@")
    monkeypatch.setenv("LLM_BASE_URL", with_creds)
    at = open_page(SETTINGS)
    at = at.radio[0].set_value("openai").run()
    field = next(t for t in at.text_input if t.label == "Base URL")
    assert field.value == judge.base_url, "the field shows the URL without its credentials"
    for t in at.text_input:
        assert URL_KEY not in str(t.value) and "studio" not in str(t.value)

    at = click(at, "Save")  # the field unchanged: the URL in use keeps its credentials
    assert not at.exception and not at.error, texts(at.error)
    assert at.session_state[BACKEND_KEY]["base_url"] == with_creds
    assert URL_KEY not in texts(at.success), "the saved message names the URL without credentials"

    at = open_page(SETTINGS)  # a URL typed anew replaces it, credentials and all
    at = at.radio[0].set_value("openai").run()
    next(t for t in at.text_input if t.label == "Base URL").input(judge.base_url + "/")
    at = click(at, "Save")
    assert at.session_state[BACKEND_KEY]["base_url"] == judge.base_url


def test_the_test_connection_outcome_outlives_the_next_rerun(open_page, judge):
    """A rerun right after the press (another widget, the sign-in cookie's round trip) wiped the outcome: the
    first press seemed to do nothing. It stays until the form is sent with other fields."""
    at = click(endpoint_form(open_page, judge.base_url), "Test connection")
    assert any(s.startswith("Connected to") for s in texts(at.success))
    at.run()  # a rerun that is not the button's
    assert not at.exception
    assert any(s.startswith("Connected to") for s in texts(at.success)), texts(at.success)
