"""The real app in headless Chromium: `python serve.py` against the fake OpenAI server (toy judge).

Screenshots of each page of the main path, and of any failing test, go to test-artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from db.engine import make_engine
from services import runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from tests.fakes import FakeOpenAIServer, answers_connection_check, toy_judge
from tests.support.browser import (
    BAD,
    BROWSER_MARKS,
    FIX,
    SAMPLE,
    VIEWPORT,
    LiveApp,
    main,
    metric,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    shot,
    wait_idle,
)
from tests.support.waiting import WAIT_MS, wait_until

pytestmark = BROWSER_MARKS

expect = playwright_expect()


@pytest.fixture(scope="module")
def live_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    """The fake judge in this process and the real app in a subprocess, on free ports, with its own database."""
    tmp = tmp_path_factory.mktemp("e2e")
    database_url = f"sqlite:///{tmp / 'e2e.db'}"
    with FakeOpenAIServer(answers_connection_check(toy_judge(bad=BAD, fix=FIX))) as fake:
        for url in serve(tmp, database_url, fake=fake):
            yield LiveApp(url=url, fake=fake, database_url=database_url)


page = page_fixture(VIEWPORT)


def seed_run(app: LiveApp, candidate: str) -> int:
    """A saved run in the app's database, written from here (as cli.py would)."""
    engine = make_engine(app.database_url)
    try:
        backend = BackendConfig(kind="openai", base_url=app.fake.base_url, model="fake-model", max_retries=1)
        return runs.start_run(engine, backend, SAMPLE.reference, candidate, DCRConfig(), source="cli")
    finally:
        engine.dispose()


def test_evaluate_and_improve_the_bundled_sample(live_app: LiveApp, page):
    pg = page
    pg.goto(live_app.url + "/")
    expect(main(pg).get_by_role("heading", name="Consistency Studio", exact=True)).to_be_visible()
    expect(pg.get_by_text("fake-model at", exact=False).first).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "01-home")

    pg.goto(live_app.url + "/Evaluate")
    expect(pg.get_by_role("heading", name="Evaluate and improve")).to_be_visible()
    wait_idle(pg)
    pg.get_by_test_id("stSelectbox").click()
    pg.get_by_role("option", name=SAMPLE.title).click()
    candidate_box = pg.get_by_label("Summary (candidate)")
    expect(candidate_box).to_have_value(SAMPLE.candidate)
    expect(pg.get_by_label("Article (reference)")).to_have_value(SAMPLE.reference)
    shot(pg, "02-evaluate-sample-loaded")

    pg.get_by_role("button", name=re.compile(r"^\W*(play_arrow)?\s*Evaluate$")).click()
    heading = pg.get_by_role("heading", name=re.compile(r"Run #\d+"))
    expect(heading).to_be_visible()
    run_id = int(re.search(r"Run #(\d+)", heading.inner_text()).group(1))
    expect(pg).to_have_url(re.compile(rf"[?&]run={run_id}\b"))
    expect(pg.locator(".cs-chip.inconsistent")).to_have_count(1)
    expect(pg.locator(".cs-chip.consistent")).to_have_count(3)
    expect(pg.locator(".cs-chip.inconsistent")).to_contain_text("inconsistent")
    expect(metric(pg, "Score Ẑ")).to_have_text("0.750")
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "03-evaluate-round0")

    rounds = pg.get_by_test_id("stButtonGroup").filter(has_text="Round 0").first
    pg.get_by_role("button", name=re.compile(r"^\W*(auto_fix_high)?\s*Improve$")).click()
    expect(rounds.get_by_text("Round 1", exact=True)).to_be_visible()
    expect(pg.locator(".cs-chip.inconsistent")).to_have_count(0)
    expect(pg.get_by_text("Every sentence is judged consistent in round 1: Algorithm 1 stops here.")).to_be_visible()
    # The rewrite is reviewed where Improve lands: accepted by default, with the verdict its text got.
    expect(pg.get_by_text("Round 0 → round 1")).to_be_visible()
    expect(pg.get_by_test_id("stButtonGroup").filter(has_text="Reject")).to_have_count(1)
    expect(metric(pg, "Score Ẑ")).to_have_text("1.000")
    expect(main(pg).get_by_test_id("stPlotlyChart")).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "04-evaluate-improved-round1")

    # step back to round 0 and forward again
    rounds.get_by_text("Round 0", exact=True).click()
    expect(pg.locator(".cs-chip.inconsistent")).to_have_count(1)
    expect(pg.get_by_text("Round 0 → round 1")).to_be_visible()
    expect(metric(pg, "Score Ẑ")).to_have_text("0.750")
    wait_idle(pg)
    shot(pg, "05-evaluate-round0-with-rewrite")
    rounds.get_by_text("Round 1", exact=True).click()
    expect(pg.locator(".cs-chip.inconsistent")).to_have_count(0)
    expect(metric(pg, "Score Ẑ")).to_have_text("1.000")
    wait_idle(pg)

    final = pg.get_by_test_id("stCode")
    expect(final).to_contain_text(FIX)
    expect(final).not_to_contain_text(BAD)
    no_exception(pg)

    # the final text goes back into the form for another run
    pg.get_by_role("button", name=re.compile(r"Evaluate final text$")).click()
    expect(pg.get_by_role("heading", name=re.compile(r"Run #\d+"))).to_have_count(0)
    expect(pg.get_by_label("Summary (candidate)")).to_have_value(re.compile(FIX))
    expect(pg).not_to_have_url(re.compile(r"[?&]run="))
    wait_idle(pg)
    no_exception(pg)


def test_deep_link_opens_a_run_in_a_new_page(live_app: LiveApp, page):
    run_id = seed_run(live_app, "The repair plan will cost 47 million dollars.")
    page.goto(f"{live_app.url}/Evaluate?run={run_id}")
    expect(page.get_by_role("heading", name=re.compile(rf"Run #{run_id}\b"))).to_be_visible()
    expect(page.locator(".cs-chip.inconsistent")).to_have_count(1)
    expect(page.get_by_text("source: cli", exact=False)).to_be_visible()
    expect(metric(page, "Score Ẑ")).to_have_text("0.000")
    wait_idle(page)
    no_exception(page)
    shot(page, "06-deep-link")

    page.goto(f"{live_app.url}/Evaluate?run=987654")
    expect(page.get_by_text("There is no run #987654")).to_be_visible()
    wait_idle(page)
    no_exception(page)


def test_history_lists_runs_and_settings_loads(live_app: LiveApp, page):
    run_id = seed_run(live_app, "Work will start in March.")
    page.goto(live_app.url + "/History")
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    table = page.get_by_test_id("stDataFrame")
    expect(table).to_be_visible()
    wait_idle(page)
    no_exception(page)
    shot(page, "07-history")
    # the grid draws on a canvas; a hidden accessible table mirrors the cells
    expect(table.locator('td[role="gridcell"]', has_text="Work will start in March.")).to_have_count(1)
    expect(table.locator('td[aria-colindex="1"]').filter(has_text=re.compile(rf"^{run_id}$"))).to_have_count(1)

    page.goto(live_app.url + "/Settings")
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    expect(page.get_by_role("textbox", name="Base URL")).to_have_value(live_app.fake.base_url)
    page.get_by_role("button", name=re.compile(r"Test connection$")).click()
    expect(page.get_by_text(re.compile(r"Connected to .*answered 'OK'"))).to_be_visible()
    wait_idle(page)
    no_exception(page)
    shot(page, "08-settings")


def run_exists(app: LiveApp, run_id: int) -> bool:
    engine = make_engine(app.database_url)
    try:
        return runs.load(engine, run_id) is not None
    finally:
        engine.dispose()


def tick_row(pg, table, row: int) -> None:
    """Tick a row's selection checkbox: the grid draws on a canvas, rows 35 px high below a 35 px header."""
    box = table.bounding_box()
    pg.mouse.click(box["x"] + 16, box["y"] + 35 + 35 * row + 17)


def test_history_link_selects_a_run_and_a_delete_leaves_nothing_selected(live_app: LiveApp, page):
    first, chosen, last = (seed_run(live_app, f"History row {i} of the delete test.") for i in range(3))
    page.goto(f"{live_app.url}/History?run={chosen}")
    expect(page.get_by_role("heading", name=re.compile(rf"^Run #{chosen}$"))).to_be_visible()
    wait_idle(page)
    no_exception(page)
    shot(page, "09-history-deep-link")

    page.get_by_role("button", name=re.compile(r"Delete 1 run\(s\)$")).click()
    expect(page.get_by_text(f"Delete run(s) {chosen} with their rounds")).to_be_visible()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile(r"^Run #\d+$"))).to_have_count(0)
    wait_idle(page)
    no_exception(page)
    # The page may still be finishing its rerun when it first looks idle: wait for the delete to land.
    wait_until(lambda: not run_exists(live_app, chosen), "the deleted run is gone")
    # Nothing is selected now: no run moved into the deleted one's place, so a second click deletes nothing.
    expect(page.get_by_role("button", name=re.compile(r"Delete \d+ run\(s\)$"))).to_have_count(0)
    expect(page).not_to_have_url(re.compile(r"[?&]run="))
    assert run_exists(live_app, first) and run_exists(live_app, last)
    shot(page, "10-history-after-delete")

    # Ticking a row puts the run in the URL: the page is a link to it.
    tick_row(page, page.get_by_test_id("stDataFrame"), 0)  # the newest run
    expect(page.get_by_role("heading", name=re.compile(rf"^Run #{last}$"))).to_be_visible()
    expect(page).to_have_url(re.compile(rf"[?&]run={last}\b"))
    wait_idle(page)
    no_exception(page)


def test_meta_evaluation_deep_link_to_a_tab(live_app: LiveApp, page):
    from tests.metaeval_seed import seed
    from tests.support.metaeval import HAND, LABELLED

    engine = make_engine(live_app.database_url)
    try:
        _, bid = seed(engine, LABELLED + HAND, name="e2e-meta")
    finally:
        engine.dispose()
    pg = page
    pg.goto(f"{live_app.url}/Meta-evaluation?batch={bid}&me_tab=Human+agreement")
    wait_idle(pg)
    no_exception(pg)
    expect(metric(pg, "Workers")).to_have_text("4")
    expect(metric(pg, "Sentences")).to_have_text("8")
    main(pg).get_by_role("tab", name="RAI").click()
    wait_idle(pg)
    expect(main(pg).get_by_role("heading", name="Consistency improvement with RAI (Table 4)")).to_be_visible()
    # The chart toolbar (with the PNG camera) is always shown, not only on hover.
    expect(main(pg).get_by_role("button", name="Download plot as a PNG").first).to_be_visible()
    assert f"batch={bid}" in pg.url and "me_tab=RAI" in pg.url
    no_exception(pg)
    shot(pg, "meta-evaluation")


def test_a_batch_runs_in_the_worker_then_opens_in_meta_evaluation(live_app: LiveApp, page):
    from tests.metaeval_seed import make_dataset
    from tests.support.metaeval import HAND

    engine = make_engine(live_app.database_url)
    try:
        make_dataset(engine, HAND, name="e2e-batch")
    finally:
        engine.dispose()
    pg = page
    pg.goto(f"{live_app.url}/Batches")
    # wait_idle alone can pass before the first script run has drawn anything (no status widget yet).
    expect(main(pg).get_by_role("heading", name="Batches", exact=True)).to_be_visible()
    wait_idle(pg)
    panel = main(pg).get_by_test_id("stExpander").filter(has_text="Start a batch")
    # The panel starts open only while there are no batches (the Meta-evaluation test seeds one). Read its
    # state from <details open>, set on its first draw; the form inside draws a moment later, so a click
    # made because the form is not visible yet would close an open panel.
    if panel.locator("details").get_attribute("open") is None:
        panel.locator("summary").click()
    form = panel.locator(".st-key-ba_new")
    expect(form).to_be_visible()
    form.get_by_test_id("stSelectbox").filter(has_text="Dataset").click()
    pg.get_by_role("option", name=re.compile(r"^e2e-batch")).click()
    form.get_by_role("button", name=re.compile("Start batch")).click()
    # The worker (spawned by the app) judges each item with the fake model; the page polls its progress.
    expect(main(pg).get_by_text(re.compile(r"status\s+done"))).to_be_visible(timeout=WAIT_MS)
    expect(metric(pg, "Done")).to_have_text(str(len(HAND)))
    expect(metric(pg, "Failed")).to_have_text("0")
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "09-batch-done")
    main(pg).get_by_role("link", name="Meta-evaluation").click()
    expect(pg.get_by_role("heading", name="Meta-evaluation")).to_be_visible()
    expect(pg).to_have_url(re.compile(r"batch=\d+"))
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "10-batch-meta")
