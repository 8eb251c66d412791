"""The owner in headless Chromium across reloads, new tabs, typed URLs and deep links: still signed in, still on
the model they chose on Settings (never silently back on the embedded demo model), the Start batch form naming
that model; signing out ends every tab; wrong passwords slow the next attempt but never refuse the right one.

The real app (`python serve.py`) with STUDIO_PASSWORD set and no endpoint in its environment, so a
session that lost the owner's choice would show the embedded model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from db.engine import make_engine
from tests.annotation_seed import make_dataset
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.browser import (
    BROWSER_MARKS,
    main,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    shot,
    wait_idle,
)

pytestmark = BROWSER_MARKS

expect = playwright_expect()

PASSWORD = "the owner's own passphrase"
MODEL = "owner-chosen-model"
VIEWPORT = {"width": 1280, "height": 800}


@dataclass
class OwnerApp:
    url: str
    fake_url: str


@pytest.fixture(scope="module")
def owner_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnerApp]:
    tmp = tmp_path_factory.mktemp("e2e-owner")
    database_url = f"sqlite:///{tmp / 'owner.db'}"
    engine = make_engine(database_url)
    make_dataset(engine, [["The council met on Tuesday."]], name="owner's dataset")
    engine.dispose()
    with FakeOpenAIServer(toy_judge(bad="47 million", fix="40 million")) as fake:
        for url in serve(tmp, database_url, STUDIO_PASSWORD=PASSWORD, CONSISTENCY_SPAWN_WORKER="0"):
            yield OwnerApp(url=url, fake_url=fake.base_url)


pg = page_fixture(VIEWPORT, name="pg")


def sign_in(pg, password: str = PASSWORD) -> None:
    main(pg).get_by_label("Password", exact=True).fill(password)
    main(pg).get_by_role("button", name=re.compile("Sign in")).click()


def signed_in_on(pg, title: str) -> None:
    expect(main(pg).get_by_role("heading", name=title, exact=True)).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    expect(main(pg).get_by_role("heading", name="Sign in")).to_have_count(0)
    expect(pg.get_by_test_id("stSidebar").get_by_text("Signed in with the studio password.")).to_be_visible()


def pick_endpoint_backend(pg) -> None:
    """Choose the endpoint backend and wait for the rerun it starts to end: until then the form's stale Save
    button (from the embedded layout) is still on the page beside the new one."""
    main(pg).get_by_text("OpenAI-compatible endpoint", exact=False).first.click()
    expect(main(pg).get_by_role("textbox", name="Base URL")).to_be_visible()
    wait_idle(pg)
    expect(main(pg).get_by_role("button", name=re.compile("Save"))).to_have_count(1)


def choose_endpoint(pg, app: OwnerApp, key: str = "") -> None:
    pg.goto(f"{app.url}/Settings")
    signed_in_on(pg, "Settings")
    pick_endpoint_backend(pg)
    main(pg).get_by_role("textbox", name="Base URL").fill(app.fake_url)
    main(pg).get_by_role("textbox", name="Model", exact=True).fill(MODEL)
    if key:
        main(pg).get_by_role("textbox", name="API key").fill(key)
    main(pg).get_by_role("button", name=re.compile("Save")).click()
    expect(main(pg).get_by_text(f"Saved: {MODEL} at {app.fake_url}.")).to_be_visible()


def sidebar_names_the_model(pg) -> None:
    sidebar = pg.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text(MODEL).first).to_be_visible()
    expect(sidebar.get_by_text("Embedded demo model")).to_have_count(0)


def test_reload_new_tab_typed_url_and_deep_link_keep_the_owner_and_the_model(owner_app: OwnerApp, pg):
    app = owner_app
    pg.goto(f"{app.url}/History")
    expect(main(pg).get_by_role("heading", name="Sign in")).to_be_visible()
    sign_in(pg)
    signed_in_on(pg, "History")
    choose_endpoint(pg, app)
    sidebar_names_the_model(pg)

    pg.reload()  # a reload is a new Streamlit session
    signed_in_on(pg, "Settings")
    sidebar_names_the_model(pg)
    expect(main(pg).get_by_role("textbox", name="Model", exact=True)).to_have_value(MODEL)

    tab = pg.context.new_page()  # a new tab, by a typed URL deep into the app
    tab.goto(f"{app.url}/Batches?batch=999")
    signed_in_on(tab, "Batches")
    sidebar_names_the_model(tab)
    form = main(tab).locator(".st-key-ba_new")
    expect(form.get_by_text(re.compile(f"Model: {MODEL} at {re.escape(app.fake_url)}"))).to_be_visible()
    shot(tab, "owner-batches-form-names-the-model")

    tab.goto(f"{app.url}/Evaluate")  # a deep link to another page
    signed_in_on(tab, "Evaluate and improve")
    expect(main(tab).get_by_text(re.compile(f"Model: {MODEL} at "))).to_be_visible()
    tab.close()


def test_signing_out_ends_every_tab_and_later_reloads(owner_app: OwnerApp, pg):
    app = owner_app
    pg.goto(app.url)
    sign_in(pg)
    signed_in_on(pg, "Consistency Studio")
    other = pg.context.new_page()
    other.goto(f"{app.url}/History")
    signed_in_on(other, "History")

    pg.get_by_test_id("stSidebar").get_by_role("button", name=re.compile("Sign out")).click()
    expect(main(pg).get_by_role("heading", name="Sign in")).to_be_visible()
    pg.reload()
    expect(main(pg).get_by_role("heading", name="Sign in")).to_be_visible()
    # The other tab's session held the same sign-in: its next run finds it ended.
    other.get_by_test_id("stSidebar").get_by_role("link", name="Settings").click()
    expect(main(other).get_by_role("heading", name="Sign in")).to_be_visible()
    wait_idle(other)
    expect(main(other).get_by_role("heading", name="Settings", exact=True)).to_have_count(0)
    other.close()


def test_a_key_typed_on_settings_must_be_typed_again_after_a_reload_and_says_so(owner_app: OwnerApp, pg):
    app = owner_app
    pg.goto(f"{app.url}/Settings")
    sign_in(pg)
    signed_in_on(pg, "Settings")
    choose_endpoint(pg, app, key="sk-typed-in-the-form")
    pg.goto(f"{app.url}/Batches")
    signed_in_on(pg, "Batches")
    sidebar_names_the_model(pg)  # still the chosen endpoint, not the embedded model
    expect(pg.get_by_test_id("stSidebar").get_by_text(re.compile("must be typed again|Enter it again"))).to_be_visible()
    expect(main(pg).get_by_text(re.compile("its API key must be entered again on Settings"))).to_be_visible()
    shot(pg, "owner-key-must-be-typed-again")
    # Typing it again puts the warning away.
    choose_endpoint(pg, app, key="sk-typed-in-the-form")
    expect(pg.get_by_test_id("stSidebar").get_by_text("Enter it again")).to_have_count(0)


def test_wrong_passwords_slow_the_next_attempt_but_the_right_one_gets_in(owner_app: OwnerApp, pg):
    app = owner_app
    pg.goto(app.url)
    for _ in range(6):
        sign_in(pg, "a wrong guess")
        expect(main(pg).get_by_text(re.compile("Wrong password"))).to_be_visible()
        wait_idle(pg)
    sign_in(pg)
    signed_in_on(pg, "Consistency Studio")


def test_the_owner_signs_in_while_wrong_passwords_from_the_same_address_are_held(owner_app: OwnerApp, pg, browser):
    """Every tab comes from 127.0.0.1, as every user behind one proxy comes from the proxy: four tabs' wrong
    passwords are held by the back-off, and the owner's right one, in a fifth tab, signs in meanwhile."""
    app = owner_app
    pg.goto(app.url)
    for _ in range(7):  # the address's failures: from here on a wrong answer is held for several seconds
        sign_in(pg, "a wrong guess")
        expect(main(pg).get_by_text(re.compile("Wrong password"))).to_be_visible()
        wait_idle(pg)
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(4)]
    try:
        tabs = [c.new_page() for c in contexts]
        for tab in tabs:
            tab.goto(app.url)
            expect(main(tab).get_by_role("heading", name="Sign in")).to_be_visible()
        for tab in tabs:
            sign_in(tab, "another wrong guess")
        owner = browser.new_context(viewport=VIEWPORT)
        contexts.append(owner)
        mine = owner.new_page()
        mine.goto(app.url)
        sign_in(mine)
        signed_in_on(mine, "Consistency Studio")
        held = [t for t in tabs if main(t).get_by_text(re.compile("Wrong password")).count() == 0]
        assert held, "the owner got in while wrong passwords were still held, not after them"
        for tab in tabs:  # and the wrong ones are answered in the end, none turned away
            expect(main(tab).get_by_text(re.compile("Wrong password"))).to_be_visible(timeout=60_000)
            expect(main(tab).get_by_text(re.compile("Too many"))).to_have_count(0)
    finally:
        for c in contexts:
            c.close()


def test_the_app_fetches_nothing_from_other_hosts_so_it_works_offline(owner_app: OwnerApp, pg):
    """The tab icon was a Material icon, fetched from fonts.gstatic.com; it is a file shipped with the app."""
    from urllib.parse import urlsplit

    asked: list[str] = []
    pg.on("request", lambda r: asked.append(r.url))
    pg.goto(owner_app.url)
    sign_in(pg)
    signed_in_on(pg, "Consistency Studio")
    pg.get_by_test_id("stSidebar").get_by_role("link", name="DHP").click()
    signed_in_on(pg, "DHP: discernment of LLM evaluators")
    icon = pg.locator("link[rel~='icon']").first.get_attribute("href") or ""
    assert "gstatic" not in icon and icon, icon
    elsewhere = [u for u in asked if urlsplit(u).scheme in ("http", "https") and urlsplit(u).hostname != "127.0.0.1"]
    assert not elsewhere, elsewhere


def test_before_a_batch_on_a_remote_model_the_form_estimates_calls_tokens_time_and_cost(owner_app: OwnerApp, pg):
    app = owner_app
    pg.goto(f"{app.url}/Settings")
    sign_in(pg)
    signed_in_on(pg, "Settings")
    pick_endpoint_backend(pg)
    main(pg).get_by_role("spinbutton", name="Price per million input tokens (USD)").fill("2.5")
    main(pg).get_by_role("spinbutton", name="Price per million output tokens (USD)").fill("10")
    main(pg).get_by_role("textbox", name="Base URL").fill(app.fake_url)
    main(pg).get_by_role("textbox", name="Model", exact=True).fill(MODEL)
    main(pg).get_by_role("button", name=re.compile("Save")).click()
    expect(main(pg).get_by_text(f"Saved: {MODEL} at {app.fake_url}.")).to_be_visible()
    pg.goto(f"{app.url}/Batches")  # a new session: the prices come back with the backend
    signed_in_on(pg, "Batches")
    form = main(pg).locator(".st-key-ba_new")
    estimate = form.get_by_text(re.compile(r"^Estimate: about 1 calls? "))
    expect(estimate).to_be_visible()
    text = estimate.inner_text()
    assert "input" in text and "output tokens" in text and "time" in text, text
    assert re.search(r"(\$\d+\.\d\d|under \$0\.01) at the prices set on Settings", text), text
    shot(pg, "owner-batch-estimate")
