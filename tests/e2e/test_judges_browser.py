"""The real app in headless Chromium: two judges on the QAGS-CNN sample (the offline evidence checker and a
scripted Summ-NLI endpoint), side by side; Label next feeds an annotator's queue; the card updates after labels.
Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from db.engine import make_engine
from services import annotations, datasets
from services.annotations import Target
from services.dcr import DCRConfig
from services.jobs import batches
from tests.fakes import FakeOpenAIServer
from tests.nli_fakes import nli_judge
from tests.support.batches import judge_backend
from tests.support.browser import (
    ARTIFACTS,
    BROWSER_MARKS,
    LiveApp,
    main,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    wait_idle,
)
from tests.support.judges import QAGS_FILE

pytestmark = [*BROWSER_MARKS, pytest.mark.skipif(not QAGS_FILE.is_file(), reason="the QAGS file is absent")]
expect = playwright_expect()
VIEWPORT = {"width": 1280, "height": 3400}
N_ITEMS = 60


@pytest.fixture(scope="module")
def judges_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    tmp = tmp_path_factory.mktemp("e2e-judges")
    fake = FakeOpenAIServer(nli_judge(bad=" said")).start()  # a scripted endpoint: "said" makes a summary inconsistent
    database_url = f"sqlite:///{tmp / 'e2e.db'}"
    eng = make_engine(database_url)
    try:
        saved, _ = datasets.import_file(eng, name="QAGS-CNN", data=QAGS_FILE.read_bytes(), fmt="qags")
        for cfg, backend in (
            (DCRConfig(method="evidence", max_rounds=0), judge_backend(fake)),
            (DCRConfig(method="summ-nli", max_rounds=0), judge_backend(fake)),
        ):
            bid = batches.create_batch(eng, dataset_id=saved.id, backend=backend, cfg=cfg, item_limit=N_ITEMS)
            batches.process_batch(eng, bid, backend=backend)
        annotations.create_annotator(eng, "rita")
    finally:
        eng.dispose()
    try:
        for url in serve(tmp, database_url, fake=fake):
            yield LiveApp(url=url, fake=fake, database_url=database_url)
    finally:
        fake.stop()


page = page_fixture(VIEWPORT)


def test_two_judges_label_next_and_the_card_updating(judges_app: LiveApp, page):
    pg = page
    pg.goto(judges_app.url + "/Judges")
    expect(pg.get_by_role("heading", name="Judges", exact=True)).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    expect(main(pg).get_by_text("evidence checker").first).to_be_visible()
    expect(main(pg).get_by_text(re.compile(r"summ-nli · fake-model")).first).to_be_visible()
    expect(main(pg).get_by_test_id("stPlotlyChart")).to_be_visible()
    pg.screenshot(path=str(ARTIFACTS / "judges-01-cards.png"), full_page=True)
    # The sortable grid fits the main column at 1280 px: no sideways scroll bar (18 columns needed 2,300 px).
    grid = main(pg).get_by_test_id("stDataFrame").first
    widths = grid.evaluate(
        "e => [e.querySelector('.dvn-scroller').scrollWidth, e.querySelector('.dvn-scroller').clientWidth]"
    )
    assert widths[0] <= widths[1], f"the grid scrolls sideways: {widths[0]} px of content in {widths[1]} px"

    # Imported labels off: the annotators' labels only, so every item is waiting for a label.
    main(pg).get_by_text("Labels, interval level and prices").click()
    main(pg).get_by_text("Annotators' labels only").click()
    wait_idle(pg)
    expect(main(pg).get_by_text(re.compile(r"0 of \d+ items have a human judgment"))).to_be_visible()
    ann = main(pg).get_by_test_id("stMultiSelect").filter(has_text="Annotators")
    ann.click()
    pg.get_by_role("option", name="rita").click()
    pg.keyboard.press("Escape")
    main(pg).get_by_role("button", name=re.compile(r"^Send \d+ item\(s\)")).click()
    expect(main(pg).get_by_text(re.compile(r"Sent: 10 item\(s\) to rita"))).to_be_visible()
    pg.screenshot(path=str(ARTIFACTS / "judges-02-label-next.png"), full_page=True)

    eng = make_engine(judges_app.database_url)
    try:
        rita = annotations.annotator_by_name(eng, "rita")
        queue = annotations.queue(eng, 1, rita.id)
        assert len(queue) == 10
        for entry in queue:  # rita labels every sentence consistent
            item = annotations.get_item(eng, entry.item_id)
            for k in range(len(item.sentences)):
                annotations.label_sentence(
                    eng, annotator_id=rita.id, target=Target.item(entry.item_id), sentence_idx=k, label=1
                )
    finally:
        eng.dispose()
    pg.reload()
    wait_idle(pg)
    main(pg).get_by_text("Labels, interval level and prices").click()
    main(pg).get_by_text("Annotators' labels only").click()
    wait_idle(pg)
    expect(main(pg).get_by_text(re.compile(r"10 human label\(s\)")).first).to_be_visible()
    no_exception(pg)
    pg.screenshot(path=str(ARTIFACTS / "judges-03-after-labels.png"), full_page=True)
