"""The real app in headless Chromium: compare DCE-AMC, Summ-NLI, Sent-NLI and QG-QA on one document.

The fake server judges every method's prompts (tests/nli_fakes.py); screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from db.engine import make_engine
from services import runs
from tests.fakes import FakeOpenAIServer
from tests.nli_fakes import nli_judge
from tests.support.browser import (
    ARTIFACTS,
    BAD,
    BROWSER_MARKS,
    SAMPLE,
    LiveApp,
    main,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    wait_idle,
)

VIEWPORT = {"width": 1400, "height": 2600}

pytestmark = BROWSER_MARKS

expect = playwright_expect()


@pytest.fixture(scope="module")
def nli_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    tmp = tmp_path_factory.mktemp("e2e-nli")
    database_url = f"sqlite:///{tmp / 'e2e.db'}"
    with FakeOpenAIServer(nli_judge(bad=BAD, fix="40 million")) as fake:
        for url in serve(tmp, database_url, fake=fake):
            yield LiveApp(url=url, fake=fake, database_url=database_url)


page = page_fixture(VIEWPORT)


def test_compare_the_four_methods_on_one_document(nli_app: LiveApp, page):
    pg = page
    pg.goto(nli_app.url + "/Evaluate")
    expect(pg.get_by_role("heading", name="Evaluate and improve")).to_be_visible()
    wait_idle(pg)
    pg.get_by_test_id("stSelectbox").first.click()
    pg.get_by_role("option", name=SAMPLE.title).click()
    expect(pg.get_by_label("Summary (candidate)")).to_have_value(SAMPLE.candidate)

    pg.get_by_role("button", name=re.compile(r"Compare methods$")).click()
    expect(main(pg).get_by_role("heading", name="Methods compared on one document")).to_be_visible()
    expect(pg).to_have_url(re.compile(r"[?&]compare=\w+"))
    group = re.search(r"compare=(\w+)", pg.url).group(1)
    wait_idle(pg)
    no_exception(pg)
    tabs = main(pg).get_by_role("tab")
    for name in ("DCE-AMC", "Summ-NLI", "Sent-NLI (w=1)", "QG-QA (w=1)"):
        expect(tabs.filter(has_text=name)).to_have_count(1)
    expect(main(pg).get_by_test_id("stPlotlyChart")).to_be_visible()
    pg.screenshot(path=str(ARTIFACTS / "nli-01-compare.png"), full_page=True)

    tabs.filter(has_text="QG-QA (w=1)").click()
    wait_idle(pg)
    # overview, sentences, Sent-NLI windows and QG-QA pairs (every tab is drawn, one is shown)
    expect(main(pg).get_by_test_id("stDataFrame")).to_have_count(4)
    pg.screenshot(path=str(ARTIFACTS / "nli-02-qgqa.png"), full_page=True)

    engine = make_engine(nli_app.database_url)
    try:
        found = runs.load_group(engine, group)
    finally:
        engine.dispose()
    assert [m.method for m, _ in found] == ["dce-amc", "summ-nli", "sent-nli", "qg-qa"]
    assert all(m.label == "inconsistent" for m, _ in found), "each method catches the changed amount"
    no_exception(pg)
