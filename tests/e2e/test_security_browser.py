"""User text is shown, never run: a candidate holding <script>, raw HTML, CSS and markdown links, on the
Evaluate and History pages of the real app in headless Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from db.engine import make_engine
from services import runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.support.browser import (
    ARTIFACTS,
    BROWSER_MARKS,
    VIEWPORT,
    page_fixture,
    playwright_expect,
    serve,
    wait_idle,
)
from tests.support.waiting import WAIT_MS

pytestmark = BROWSER_MARKS

expect = playwright_expect()

BAD, FIX = "47 million", "40 million"
REFERENCE = "The council met on Tuesday. It approved 40 million dollars for the bridge. Work starts in March."
HOSTILE = (
    "The council met <script>window.__xss = 1; alert(1)</script> on Tuesday. "
    'It approved <img src=x onerror="window.__xss = 2; alert(2)"> 47 million dollars. '
    "Read [the full story](javascript:alert(3)) and [this](https://evil.example/) "
    '<b id="cs-injected" style="display:block;font-size:90px;color:rgb(255,0,0)">now</b>. '
    "<style>body, .stApp, [data-testid=stMain] { background: rgb(255, 0, 0) !important; }</style>"
    "Work starts in March."
)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The app with one saved run whose candidate is hostile; yields (url, run id)."""
    tmp = tmp_path_factory.mktemp("security")
    database_url = f"sqlite:///{tmp / 'security.db'}"
    with FakeOpenAIServer(toy_judge(bad=BAD, fix=FIX)) as fake:
        engine = make_engine(database_url)
        backend = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1)
        run_id = runs.start_run(engine, backend, REFERENCE, HOSTILE, DCRConfig(max_rounds=1), source="cli")
        engine.dispose()
        for url in serve(tmp, database_url, fake=fake):
            yield url, run_id


page = page_fixture(VIEWPORT)


def watch_dialogs(pg) -> list[str]:
    """Every alert/confirm the page opens (none may open), dismissed at once."""
    seen: list[str] = []

    def on_dialog(d) -> None:
        seen.append(d.message)
        d.dismiss()

    pg.on("dialog", on_dialog)
    return seen


def assert_inert(pg, dialogs: list[str]) -> None:
    """Nothing of the candidate ran, was inserted as markup, or restyled the page; its text is shown as text."""
    main = pg.get_by_test_id("stMain")
    expect(main).to_contain_text("<script>window.__xss = 1; alert(1)</script>")
    expect(main).to_contain_text('<img src=x onerror="window.__xss = 2; alert(2)">')
    expect(main).to_contain_text("[the full story](javascript:alert(3))")
    assert pg.evaluate("() => typeof window.__xss") == "undefined"
    assert dialogs == []
    assert pg.locator("#cs-injected").count() == 0
    assert main.locator('img[src="x"]').count() == 0
    assert pg.locator('a[href^="javascript"]').count() == 0
    assert main.locator('a[href*="evil.example"]').count() == 0
    for selector in ("body", ".stApp", '[data-testid="stMain"]'):
        bg = pg.evaluate(f"() => getComputedStyle(document.querySelector('{selector}')).backgroundColor")
        assert bg != "rgb(255, 0, 0)", f"the candidate's <style> restyled {selector}"
    expect(pg.get_by_test_id("stException")).to_have_count(0)


def test_a_hostile_candidate_is_shown_as_text_on_evaluate(app, page):
    url, run_id = app
    dialogs = watch_dialogs(page)
    page.goto(f"{url}/Evaluate?run={run_id}")
    expect(page.get_by_role("heading", name=re.compile(rf"Run #{run_id}\b"))).to_be_visible()
    # the sentence cards come after the evidence (the embedding model loads once, slowly on a busy machine)
    expect(page.locator(".cs-chip.inconsistent").first).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert_inert(page, dialogs)
    # Improve: the rewrites' before/after diff and the next round show the text escaped too.
    page.get_by_role("button", name=re.compile(r"^\W*(auto_fix_high)?\s*Improve$")).click()
    rounds = page.get_by_test_id("stButtonGroup").filter(has_text="Round 0").first
    expect(rounds.get_by_text("Round 1", exact=True)).to_be_visible()
    wait_idle(page)
    assert_inert(page, dialogs)
    rounds.get_by_text("Round 0", exact=True).click()
    expect(page.get_by_text("Round 0 → round 1")).to_be_visible()
    wait_idle(page)
    assert_inert(page, dialogs)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "30-security-evaluate.png"))


def test_a_hostile_candidate_is_shown_as_text_on_history(app, page):
    url, run_id = app
    dialogs = watch_dialogs(page)
    page.goto(f"{url}/History")
    table = page.get_by_test_id("stDataFrame")
    expect(table).to_be_visible()
    wait_idle(page)
    expect(table.locator('td[role="gridcell"]', has_text="The council met")).to_have_count(1)
    # Select the (only) run: the grid draws on a canvas; its first row sits below the header row.
    box = table.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 17)  # the row-selection checkbox
    expect(page.get_by_role("heading", name=re.compile(rf"Run #{run_id}\b"))).to_be_visible()
    wait_idle(page)
    assert_inert(page, dialogs)
    docs = page.get_by_text("Documents and configuration")
    expect(docs).to_be_visible(timeout=WAIT_MS)  # after the evidence (the embedding model loads once)
    assert_inert(page, dialogs)
    docs.click()
    wait_idle(page)
    assert_inert(page, dialogs)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "31-security-history.png"))
