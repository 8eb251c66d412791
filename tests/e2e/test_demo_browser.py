"""The demo workspace in headless Chromium: Home's button builds and opens it (offline), the banner's tour is
walked link by link to the place on each page, every other page shows its data, and leaving it brings back the
user's own, empty, database. No page is empty, shows a traceback or prints "None". Screenshots go to
test-artifacts/demo-*.png."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from db.engine import make_engine
from services import datasets, runs
from services.demo import workspace
from tests.support.browser import (
    ARTIFACTS,
    BROWSER_MARKS,
    main,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    wait_idle,
)

pytestmark = BROWSER_MARKS
expect = playwright_expect()
VIEWPORT = {"width": 1400, "height": 1100}  # short enough that a step's place on a long page must be scrolled to
EMPTY = ("No dataset yet", "No batch yet", "No study yet", "No run yet", "Nothing to show", "No DHP run")
NONE = re.compile(r"\bNone\b")
# Each step of the tour: what must be in view once its link has been followed.
STEPS = {
    "1. Judges: which judge to trust": ("heading", "Judges"),
    "2. Compare systems": ("heading", "Compare systems"),
    "3. Label next": ("heading", "Label next"),
    "4. Evaluate one document": ("text", "offline evidence checker"),
    "5. Share the report": ("text", "A read-only shared report."),
}
# The other pages, by their sidebar link, and a text each shows only with the workspace's data (in a data grid:
# the grid draws on a canvas, and a hidden accessible table mirrors its cells).
PAGES = {
    "Datasets": ("grid", "Demo: summaries of invented town news"),
    "Batches": ("grid", "Evidence checker"),
    "Annotate": "Blind mode",  # beside the workspace's batch, as the source of the model's verdicts
    "Meta-evaluation": "Binary: consistent when the score is at least 0.5",
    "ConsEval": "Finished · ",  # the study, run to its end
    "DHP": "Texts made per perturbation",
    "History": ("grid", "Evidence checker"),
}


@dataclass(frozen=True)
class DemoApp:
    url: str
    database_url: str


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoApp]:
    tmp = tmp_path_factory.mktemp("e2e-demo")
    database_url = f"sqlite:///{tmp / 'user.db'}"
    make_engine(database_url).dispose()  # the user's database: migrated and empty
    for url in serve(tmp, database_url, CONSISTENCY_SPAWN_WORKER="0"):
        yield DemoApp(url=url, database_url=database_url)


page = page_fixture(VIEWPORT)


def shot(pg, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"demo-{name}.png"), full_page=True)


def banner(pg):
    return pg.locator(".st-key-demo_banner")


def check_page(pg, what: str) -> None:
    """The page has drawn, in the demo, with no traceback, no empty-state message and no "None"."""
    wait_idle(pg)
    no_exception(pg)
    expect(banner(pg).get_by_text(workspace.BANNER)).to_be_visible()
    text = main(pg).inner_text()
    assert "Traceback" not in text, what
    assert not NONE.search(text), f"{what} shows None: {NONE.search(text)}"
    assert not [e for e in EMPTY if e in text], f"{what} is empty: {[e for e in EMPTY if e in text]}"


def test_open_the_demo_workspace_and_walk_the_tour(demo_app: DemoApp, page):
    pg = page
    pg.goto(demo_app.url)
    wait_idle(pg)
    expect(banner(pg)).to_have_count(0)
    main(pg).get_by_role("button", name="Open the demo workspace").click()
    expect(banner(pg).get_by_text(workspace.BANNER)).to_be_visible()  # built here, offline: the suite's long wait
    check_page(pg, "Home")
    shot(pg, "0-home")
    links = banner(pg).locator("a")
    expect(links).to_have_count(len(STEPS))
    assert [links.nth(i).inner_text() for i in range(len(STEPS))] == list(STEPS)

    for i, (label, (kind, name)) in enumerate(STEPS.items(), start=1):
        banner(pg).get_by_role("link", name=label).click()
        wait_idle(pg)
        target = (
            main(pg).get_by_role("heading", name=name, exact=True)
            if kind == "heading"
            else main(pg).get_by_text(name, exact=False).first
        )
        expect(target).to_be_in_viewport()
        check_page(pg, label)
        shot(pg, f"{i}-{name.split('.')[0].lower().replace(' ', '-')}")
    # The last step is the share link's view: a report of the systems compared, from the workspace; it has no
    # sidebar (a link holder's view), so the walk goes on from Home, with the link's ?demo=1.
    expect(main(pg).get_by_text("system-A").first).to_be_visible()
    pg.goto(demo_app.url + "/?demo=1")
    check_page(pg, "Home by a link")

    for name, expected in PAGES.items():
        pg.get_by_test_id("stSidebar").get_by_role("link", name=name, exact=True).click()
        wait_idle(pg)
        if isinstance(expected, tuple):
            grid = main(pg).get_by_test_id("stDataFrame").first
            expect(grid.locator('td[role="gridcell"]', has_text=expected[1]).first).to_be_attached()
        else:
            expect(main(pg).get_by_text(expected).first).to_be_visible()
        check_page(pg, name)
        shot(pg, f"page-{name.lower()}")

    pg.get_by_test_id("stSidebar").get_by_role("link", name="Home", exact=True).click()
    wait_idle(pg)
    banner(pg).get_by_role("button", name="Leave the demo").click()
    wait_idle(pg)
    expect(banner(pg)).to_have_count(0)
    expect(main(pg).get_by_role("button", name="Open the demo workspace")).to_be_visible()
    eng = make_engine(demo_app.database_url)
    try:
        assert datasets.list_datasets(eng) == [] and runs.db_counts(eng)["runs"] == 0, "the user's data untouched"
    finally:
        eng.dispose()
