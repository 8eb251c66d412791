"""Systems compared in headless Chromium: the owner signs in, the Judges page's "Compare systems" shows the
sentences, the table and the forest plot; its report downloads as one HTML file, and its share link opens in a
fresh browser that is not signed in. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from db.engine import make_engine
from services import reports
from tests.support.browser import (
    ARTIFACTS,
    BROWSER_MARKS,
    in_browser,
    main,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    wait_idle,
)
from tests.support.systems import systems_dataset

pytestmark = BROWSER_MARKS
expect = playwright_expect()
VIEWPORT = {"width": 1280, "height": 4200}
PASSWORD = "compare the systems, said the owner"


@dataclass(frozen=True)
class CompareApp:
    url: str
    database_url: str
    batch_id: int


@pytest.fixture(scope="module")
def compare_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CompareApp]:
    tmp = tmp_path_factory.mktemp("e2e-compare")
    database_url = f"sqlite:///{tmp / 'compare.db'}"
    eng = make_engine(database_url)
    try:
        _, batch = systems_dataset(eng, {"old": 0.5, "new": 0.95, "same": 0.5}, n_refs=100, n_labelled=50)
    finally:
        eng.dispose()
    for url in serve(tmp, database_url, STUDIO_PASSWORD=PASSWORD, CONSISTENCY_SPAWN_WORKER="0"):
        yield CompareApp(url=url, database_url=database_url, batch_id=batch)


page = page_fixture(VIEWPORT)


def test_compare_systems_table_plot_report_and_share_link_signed_out(compare_app: CompareApp, page):
    pg = page
    pg.goto(compare_app.url + "/Judges")
    expect(main(pg).get_by_role("heading", name="Sign in")).to_be_visible()
    main(pg).get_by_label("Password", exact=True).fill(PASSWORD)
    main(pg).get_by_role("button", name=re.compile("Sign in")).click()
    expect(main(pg).get_by_role("heading", name="Judges", exact=True)).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    expect(main(pg).get_by_role("heading", name="Compare systems")).to_be_visible()
    expect(main(pg).get_by_text(re.compile(r"new is more consistent than old by \d+ points")).first).to_be_visible()
    expect(main(pg).get_by_text("No difference shown yet between old and same", exact=False).first).to_be_visible()
    # The systems' table and the forest plot
    table = main(pg).get_by_test_id("stTable").filter(has_text=re.compile(r"judge's raw rate"))
    expect(table).to_be_visible()
    for name in ("old", "new", "same"):
        expect(table.get_by_role("cell", name=name, exact=True)).to_be_visible()
    expect(main(pg).get_by_test_id("stTable").filter(has_text="paired on")).to_be_visible()
    plot = main(pg).get_by_test_id("stPlotlyChart").filter(has_text="Difference a − b")
    expect(plot).to_be_visible()
    expect(plot.locator(".point").first).to_be_attached()
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "compare-01-systems.png"), full_page=True)

    # The report is built when asked for, then downloads: the section's buttons are the last ones (the cards' first)
    main(pg).get_by_role("button", name="Build report").last.click()
    expect(main(pg).get_by_role("button", name="Download report").last).to_be_visible()
    with pg.expect_download() as dl:
        main(pg).get_by_role("button", name="Download report").last.click()
    assert dl.value.suggested_filename.startswith("compare-")
    html = Path(dl.value.path()).read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Systems compared" in html and "Plotly.newPlot(" in html
    assert "new is more consistent than old by" in html

    main(pg).get_by_role("button", name="Create share link").last.click()
    code = main(pg).get_by_test_id("stCode").filter(has_text="/Reports?share=")
    expect(code).to_be_visible()
    link = code.inner_text().strip()
    token = link.rsplit("=", 1)[1]
    engine = make_engine(compare_app.database_url)
    try:
        share = reports.find_share(engine, token)
        assert share is not None and share.kind == "compare"
    finally:
        engine.dispose()

    def signed_out(other) -> str:
        other.goto(link)
        m = other.get_by_test_id("stMain")
        other_expect = playwright_expect()
        other_expect(m.get_by_text("A read-only shared report.")).to_be_visible()
        other_expect(m.get_by_role("heading", name=re.compile("Systems compared"))).to_be_visible()
        other_expect(m.get_by_role("heading", name="Sign in")).to_have_count(0)
        other_expect(m.get_by_test_id("stPlotlyChart").first).to_be_visible()
        other.screenshot(path=str(ARTIFACTS / "compare-02-shared.png"), full_page=True)
        return m.inner_text()

    shown = in_browser(signed_out, "compare-shared", viewport=VIEWPORT)
    assert "new is more consistent than old by" in shown
