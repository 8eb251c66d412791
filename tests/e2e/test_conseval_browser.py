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
        # A tab's click reruns the page; the next click waits for that run to end, as a reader does: a tab
        # clicked while the last click's run is still drawing can be drawn over by that run's tab (under load).
        main.get_by_role("tab", name="Inter-consistency").click()
        expect(main.get_by_text("Inter-consistency: α between scales").first).to_be_visible()
        _idle(page)
        main.get_by_role("tab", name="Model × method").click()
        expect(main.get_by_text("Model × method (Table 5)").first).to_be_visible()
        _idle(page)
        main.get_by_role("tab", name="Radar").click()
        expect(main.get_by_text("ConsEval across criteria (Figure 4)").first).to_be_visible()
        _idle(page)
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
