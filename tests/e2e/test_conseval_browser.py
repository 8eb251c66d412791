"""ConsEval in headless Chromium: a finished study's results through a deep link, and a rater's personal link.

The app runs as `python serve.py` in a subprocess with its own SQLite file, seeded from here (as `cli.py
conseval` would write it) against the fake OpenAI server. Chromium runs on a thread of its own, so this module
works beside the session-wide browser of test_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from db.engine import make_engine
from services import conseval as ce
from tests.fakes import FakeOpenAIServer
from tests.support.browser import ARTIFACTS, BROWSER_MARKS, in_browser, serve, wait_idle
from tests.support.conseval import browser_study, scorer

pytestmark = BROWSER_MARKS
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")


@dataclass
class App:
    url: str
    database_url: str
    study_id: int
    token: str


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    tmp = tmp_path_factory.mktemp("e2e-conseval")
    fake = FakeOpenAIServer(scorer(noisy=True)).start()
    database_url = f"sqlite:///{tmp / 'conseval.db'}"
    engine = make_engine(database_url)
    try:
        sid, token = browser_study(engine, fake.base_url)
    finally:
        engine.dispose()
    try:
        for url in serve(tmp, database_url, fake=fake, CONSISTENCY_SPAWN_WORKER="0"):
            yield App(url, database_url, sid, token)
    finally:
        fake.stop()


def _idle(page) -> None:
    wait_idle(page)
    sync_api.expect(page.get_by_test_id("stException")).to_have_count(0)


ATTEMPTS = 5


def _open_tab(page, name: str, heading: str) -> None:
    """Click a tab until it is selected and its content is drawn, the page idle after each click.

    A click reruns the page. Under load a click can be lost: landing while the tab bar is being laid out again,
    or drawn over by a run still under way (a whole run of the suite saw the page stay on the last tab with the
    click made). A reader then clicks again, and so does this; the last check waits the whole limit."""
    main = page.get_by_test_id("stMain")
    tab, content = main.get_by_role("tab", name=name), main.get_by_text(heading).first
    for _ in range(ATTEMPTS):
        tab.click()
        _idle(page)
        if tab.get_attribute("aria-selected") == "true" and content.is_visible():
            return
    sync_api.expect(tab).to_have_attribute("aria-selected", "true")
    sync_api.expect(content).to_be_visible()


def test_a_deep_link_shows_the_study_results_with_charts(app: App):
    def check(page) -> None:
        expect = sync_api.expect
        page.goto(f"{app.url}/ConsEval?study={app.study_id}")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", name="ConsEval")).to_be_visible()
        expect(main.get_by_text("Finished · 256 of 256 answers")).to_be_visible()
        _idle(page)
        expect(main.get_by_role("tab", name="Self-consistency")).to_be_visible()
        expect(main.locator(".js-plotly-plot").first).to_be_visible()
        expect(main.get_by_text("Self-consistency: α across the n samples").first).to_be_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "conseval-sc.png"), full_page=True)
        _open_tab(page, "Inter-consistency", "Inter-consistency: α between scales")
        _open_tab(page, "Model × method", "Model × method (Table 5)")
        _open_tab(page, "Radar", "ConsEval across criteria (Figure 4)")
        page.screenshot(path=str(ARTIFACTS / "conseval-radar.png"), full_page=True)
        expect(main.get_by_text("Ada", exact=True)).to_be_visible()
        expect(main.get_by_text(f"/Rate?token={app.token}")).to_be_visible()

    in_browser(check, "conseval-deep-link")


def test_a_rater_rates_through_the_personal_link(app: App):
    def rate(page) -> None:
        expect = sync_api.expect
        page.goto(f"{app.url}/Rate?token={app.token}")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text("You are Ada")).to_be_visible()
        _idle(page)
        main.get_by_test_id("stRadio").filter(has_text="5-P (1-5)").get_by_text("4", exact=True).click()
        main.get_by_test_id("stRadio").filter(has_text="5-P Likert").get_by_text("Agree", exact=True).click()
        page.screenshot(path=str(ARTIFACTS / "conseval-rate.png"), full_page=True)
        main.get_by_role("button", name="Save and next").click()
        expect(main.get_by_text("Saved 2 score(s) for item 1")).to_be_visible()
        _idle(page)
        page.goto(f"{app.url}/Rate?token=not-a-real-token")
        expect(page.get_by_test_id("stMain").get_by_text("This link is not valid")).to_be_visible()

    in_browser(rate, "conseval-rate")
    engine = make_engine(app.database_url)
    try:
        h = ce.human_ratings_frame(engine, app.study_id)
    finally:
        engine.dispose()
    assert sorted(zip(h.scale, h.value, strict=True)) == [("5-P", 4.0), ("5-P Likert", 4.0)]
