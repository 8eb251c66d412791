"""Layout at 1280 × 800 in headless Chromium: no button label cut short on History, DHP's table toolbar clear of
the set dropdown, and Reports keeping its choice when the chosen "Report on" option is clicked again.

The real app (`python serve.py`), open on loopback, on a SQLite file seeded with a run, a batch and a DHP
perturbation set before it starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from db.engine import get_session, make_engine
from services import dhp, runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from services.dhp.catalogue import TASKS
from services.jobs import batches
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
from tests.support.dhp import council_items

pytestmark = BROWSER_MARKS

expect = playwright_expect()

VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def layout_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("e2e-layout")
    database_url = f"sqlite:///{tmp / 'layout.db'}"
    with FakeOpenAIServer(toy_judge(bad="47 million", fix="40 million")) as fake:
        engine = make_engine(database_url)
        try:
            backend = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1)
            runs.start_run(
                engine,
                backend,
                "The council approved 40 million dollars for the bridge.",
                "The council approved 47 million dollars for the bridge.",
                DCRConfig(max_rounds=1),
            )
            ds, _ = make_dataset(engine, [["The council met on Tuesday."]], name="layout dataset")
            batches.create_repeats(engine, repeats=1, dataset_id=ds, backend=backend, cfg=DCRConfig(), concurrency=1)
            with get_session(engine) as s:
                dhp.create_set(
                    TASKS["summarization"], council_items(3), name="layout set", seed=0, session=s, only=["typo:minor"]
                )
        finally:
            engine.dispose()
        yield from serve(tmp, database_url, CONSISTENCY_SPAWN_WORKER="0")


pg = page_fixture(VIEWPORT, name="pg")


def cut_short(pg, locator) -> list[str]:
    """Labels of these buttons whose text does not fit (an ellipsis or a clipped line)."""
    return [
        el.inner_text()
        for el in locator.all()
        if el.evaluate("e => [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1)")
    ]


def overlaps(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_history_buttons_keep_their_whole_labels(layout_app: str, pg):
    pg.goto(f"{layout_app}/History?run=1")
    expect(main(pg).get_by_role("button", name=re.compile("Reopen in Evaluate"))).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "layout-history-1280")
    buttons = main(pg).get_by_role("button", name=re.compile("Reopen in Evaluate|Delete 1 run"))
    assert buttons.count() == 2
    assert not cut_short(pg, buttons)


def test_the_dhp_table_toolbar_leaves_the_set_dropdown_clear(layout_app: str, pg):
    pg.goto(f"{layout_app}/DHP?view=Texts")
    expect(main(pg).get_by_text("Perturbed text, as a diff of its original")).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    dropdown = main(pg).get_by_test_id("stSelectbox").filter(has_text="Perturbation set").first
    table = main(pg).get_by_test_id("stDataFrame").first
    table.hover()
    toolbar = main(pg).get_by_test_id("stElementToolbar").first
    expect(toolbar).to_be_visible()
    shot(pg, "layout-dhp-toolbar-1280")
    assert not overlaps(toolbar.bounding_box(), dropdown.bounding_box())


def test_clicking_the_chosen_report_on_option_again_keeps_the_page(layout_app: str, pg):
    pg.goto(f"{layout_app}/Reports")
    wait_idle(pg)
    no_exception(pg)
    control = main(pg).get_by_test_id("stButtonGroup").first
    chosen = control.locator("button[aria-checked='true']")
    expect(chosen).to_have_count(1)
    label = chosen.inner_text()
    expect(main(pg).get_by_text("Batch", exact=True)).to_be_visible()
    chosen.click()
    wait_idle(pg)
    expect(control.locator("button[aria-checked='true']")).to_have_text(label)
    expect(main(pg).get_by_text("Batch", exact=True)).to_be_visible()
    no_exception(pg)
