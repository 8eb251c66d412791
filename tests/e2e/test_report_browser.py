"""Reports in headless Chromium: the downloaded HTML file opens with every request aborted and draws its
charts; a share link shows the report read-only in the running app, and a revoked link says so.

Playwright runs in a thread of its own here: test_browser.py keeps a session-wide Playwright open in the
main thread, and a second sync Playwright cannot start in the same thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from db.engine import make_engine
from services import reports
from services.reports import build
from tests.metaeval_seed import Item, seed
from tests.support.browser import ARTIFACTS, BROWSER_MARKS, TIMEOUT_MS, in_browser, serve

VIEWPORT = {"width": 1300, "height": 2200}

pytestmark = BROWSER_MARKS
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
sync_api.expect.set_options(timeout=TIMEOUT_MS)

C, X = "consistent", "inconsistent"
ITEMS = [
    Item([[C, X], [C, C]], human_score=0.5, human_label=0),
    Item([[C, C]], human_score=1.0, human_label=1),
    Item([[X]], human_score=0.0, human_label=0),
    Item([[C, X, C], [C, C, C]], human_score=0.6, human_label=0),
    Item([[C, C, C]], human_score=1.0, human_label=1),
]


@dataclass
class Seeded:
    database_url: str
    batch_id: int
    token: str
    revoked_token: str
    html: Path
    n_figures: int


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    tmp = tmp_path_factory.mktemp("e2e-report")
    database_url = f"sqlite:///{tmp / 'report.db'}"
    engine = make_engine(database_url)
    try:
        _, bid = seed(engine, ITEMS)
        report = build(engine, "batch", bid, n_boot=200)
        html = tmp / "batch-report.html"
        html.write_text(reports.to_html(report), encoding="utf-8")
        token = reports.new_share(engine, "batch", bid, title=f"Batch #{bid}").token
        old = reports.new_share(engine, "batch", bid, title="old link")
        reports.revoke(engine, old.id)
        return Seeded(database_url, bid, token, old.token, html, len(report.figures))
    finally:
        engine.dispose()


def test_the_report_file_opens_without_a_network_and_draws_its_charts(seeded: Seeded):
    def check(page) -> dict:
        attempted: list[str] = []
        errors: list[str] = []

        def route(r) -> None:
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                attempted.append(r.request.url)
                r.abort()

        page.context.route("**/*", route)
        page.context.set_offline(True)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(seeded.html.as_uri())
        plots = page.locator(".js-plotly-plot")
        sync_api.expect(plots).to_have_count(seeded.n_figures)
        for i in range(seeded.n_figures):
            sync_api.expect(plots.nth(i).locator(".main-svg").first).to_be_visible()
        bars = page.locator(".js-plotly-plot .bars path, .js-plotly-plot .scatterlayer path").count()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-offline.png"), full_page=True)
        return {
            "attempted": attempted,
            "errors": errors,
            "plotly": page.evaluate("typeof window.Plotly"),
            "title": page.locator("h1").inner_text(),
            "marks": bars,
            "kpis": page.locator(".kpi").count(),
        }

    got = in_browser(check, "report-offline", viewport=VIEWPORT)
    assert got["plotly"] == "object" and not got["errors"], got["errors"]
    assert got["attempted"] == []  # nothing was even requested from outside the file
    assert f"Batch #{seeded.batch_id}" in got["title"]
    assert got["marks"] > 0 and got["kpis"] >= 6


@pytest.fixture(scope="module")
def app_url(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("e2e-report-app")
    yield from serve(tmp, seeded.database_url, CONSISTENCY_SPAWN_WORKER="0")


def test_a_share_link_shows_the_report_read_only_and_a_revoked_one_says_so(seeded: Seeded, app_url: str):
    def check(page) -> None:
        expect = sync_api.expect
        main = page.get_by_test_id("stMain")
        page.goto(f"{app_url}/Reports?share={seeded.token}")
        expect(main.get_by_role("heading", name=f"Batch #{seeded.batch_id}")).to_be_visible()
        expect(main.get_by_test_id("stMetric").filter(has_text="Pearson r")).to_be_visible()
        expect(main.locator(".js-plotly-plot").first).to_be_visible()
        expect(main.get_by_text("A read-only shared report.")).to_be_visible()
        expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-shared.png"), full_page=True)

        page.goto(f"{app_url}/Reports?share={seeded.revoked_token}")
        expect(main.get_by_text("This share link was revoked")).to_be_visible()
        expect(main.get_by_test_id("stMetric")).to_have_count(0)

    in_browser(check, "report-shared", viewport=VIEWPORT)


def test_download_a_report_and_create_a_share_link_from_the_reports_page(seeded: Seeded, app_url: str):
    def check(page) -> tuple[str, str]:
        expect = sync_api.expect
        main = page.get_by_test_id("stMain")
        page.goto(f"{app_url}/Reports")
        expect(main.get_by_role("heading", name="Reports")).to_be_visible()
        expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)
        main.get_by_role("button", name="Build report").click()  # built when asked for, then downloaded
        expect(main.get_by_role("button", name="Download report")).to_be_visible()
        with page.expect_download() as dl:
            main.get_by_role("button", name="Download report").click()
        html = Path(dl.value.path()).read_text(encoding="utf-8")
        main.get_by_role("button", name="Create share link").click()
        code = main.get_by_test_id("stCode").filter(has_text="/Reports?share=")
        expect(code).to_be_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-page.png"), full_page=True)
        return html, code.inner_text()

    html, link = in_browser(check, "report-page", viewport=VIEWPORT)
    assert html.startswith("<!DOCTYPE html>") and f"Batch #{seeded.batch_id}" in html and "Plotly.newPlot(" in html
    assert link.startswith(app_url + "/Reports?share=")
    token = link.rsplit("=", 1)[1]
    engine = make_engine(seeded.database_url)
    try:
        share = reports.find_share(engine, token)
        assert share is not None and (share.kind, share.ref_id) == ("batch", seeded.batch_id)
    finally:
        engine.dispose()


@pytest.mark.parametrize("where", ["Reports", "Batches"])
def test_two_quick_clicks_on_download_report_give_two_files(seeded: Seeded, app_url: str, tmp_path: Path, where: str):
    """A second click within a second used to log "Deferred file ... not found" and deliver nothing (the Batches
    page redraws its progress every 1.5 s while the file is made)."""

    def check(page) -> list[str]:
        expect = sync_api.expect
        main = page.get_by_test_id("stMain")
        page.goto(f"{app_url}/{where}" + (f"?batch={seeded.batch_id}" if where == "Batches" else ""))
        main.get_by_role("button", name="Build report").click()  # built when asked for, then downloaded
        expect(main.get_by_role("button", name="Download report")).to_be_visible()
        button = main.get_by_role("button", name="Download report")
        got: list = []
        page.on("download", lambda d: got.append(d))
        button.click()
        button.click()
        waited = 0
        while len(got) < 2 and waited < TIMEOUT_MS:  # downloads are events: pump them until both or the timeout
            page.wait_for_timeout(100)
            waited += 100
        texts = []
        for d in got[:2]:
            target = tmp_path / f"{len(texts)}.html"
            d.save_as(target)
            texts.append(target.read_text(encoding="utf-8"))
        return texts

    texts = in_browser(check, f"report-double-download-{where}", viewport=VIEWPORT)
    assert len(texts) == 2
    assert all(t.startswith("<!DOCTYPE html>") and f"Batch #{seeded.batch_id}" in t for t in texts)
