"""The Annotate page in headless Chromium: blind mode never shows a verdict before the answer; shortcuts work.

The pattern of test_browser.py: the real app (`python serve.py`) in a subprocess on a free port, with its
own SQLite file, seeded from here before it starts (as cli.py would write it). The app is module-scoped; the
browser is the suite's shared one (tests/e2e/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from db.engine import make_engine
from services import annotations as an
from services.annotations import Target
from tests.annotation_seed import add_batch, make_dataset
from tests.support.browser import (
    BROWSER_MARKS,
    VIEWPORT,
    main,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    shot,
    wait_idle,
)

pytestmark = BROWSER_MARKS

expect = playwright_expect()

SENTS = [
    ["The council met on Tuesday.", "It approved 47 million dollars for the bridge."],
    ["Work on the harbour bridge starts in March."],
]
REASONS = [
    ["Zebra-reason: the article dates the meeting to Tuesday", "Quokka-reason: the article says 40 million, not 47"],
    ["Narwhal-reason: March is the start month in the article"],
]


@dataclass
class AnnotateApp:
    url: str
    database_url: str
    dataset_id: int
    items: list[int]
    tokens: dict[str, str]  # annotator name -> personal token


def seed(database_url: str) -> tuple[int, list[int], dict[str, str]]:
    """A dataset with a finished batch; two annotators, each holding every item (one per test)."""
    engine = make_engine(database_url)
    try:
        ds, items = make_dataset(engine, SENTS, name="annotate e2e")
        add_batch(engine, ds, [["consistent", "inconsistent"], ["consistent"]], reasons=REASONS, name="e2e batch")
        tokens = {}
        for name in ("blind-ada", "keys-bob", "picked-cy"):
            who = an.create_annotator(engine, name)
            tokens[name] = an.annotator_token(engine, who.id)
        an.assign(engine, ds, annotators=[an.annotator_by_name(engine, n).id for n in tokens], per_item=3)
        return ds, items, tokens
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def annotate_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnnotateApp]:
    """The real app in a subprocess on a free port, on a database seeded before it starts."""
    tmp = tmp_path_factory.mktemp("e2e-annotate")
    database_url = f"sqlite:///{tmp / 'annotate.db'}"
    ds, items, tokens = seed(database_url)
    for url in serve(tmp, database_url, CONSISTENCY_SPAWN_WORKER="0"):  # no batch runs here
        yield AnnotateApp(url=url, database_url=database_url, dataset_id=ds, items=items, tokens=tokens)


pg = page_fixture(VIEWPORT, name="pg")


def labels(app: AnnotateApp, name: str, item_id: int, *, notes: bool = False) -> list[tuple]:
    """One annotator's labels of an item, read from the app's database."""
    engine = make_engine(app.database_url)
    try:
        who = an.annotator_by_name(engine, name)
        found = an.labels_for(engine, Target.item(item_id), annotator_id=who.id)
        return [(x.sentence_idx, x.label, x.note) if notes else (x.sentence_idx, x.label) for x in found]
    finally:
        engine.dispose()


def open_queue(pg, app: AnnotateApp, name: str) -> None:
    pg.goto(f"{app.url}/Annotate?token={app.tokens[name]}&dataset={app.dataset_id}")
    expect(main(pg).get_by_role("heading", name="Annotate", exact=True)).to_be_visible()
    expect(main(pg).get_by_text(SENTS[0][1])).to_be_visible()
    wait_idle(pg)
    no_exception(pg)


def verdicts_absent(pg) -> None:
    """No reason and no verdict chip anywhere in the document (not merely hidden)."""
    html = pg.content()
    for r in (*REASONS[0], *REASONS[1]):
        assert r.split(":")[0] not in html
    expect(pg.locator(".cs-chip.inconsistent")).to_have_count(0)
    expect(pg.locator(".cs-chip.consistent")).to_have_count(0)


def test_blind_mode_never_shows_the_verdict_before_the_answer(annotate_app: AnnotateApp, pg):
    app, items = annotate_app, annotate_app.items
    open_queue(pg, app, "blind-ada")
    expect(main(pg).get_by_text("You are blind-ada (from your personal link).")).to_be_visible()
    expect(main(pg).get_by_text("Model verdict hidden until you answer.")).to_have_count(2)
    verdicts_absent(pg)
    shot(pg, "20-annotate-blind-before")

    main(pg).locator(f".st-key-an_item{items[0]}_1_0").get_by_role("button").click()
    expect(main(pg).get_by_text("Quokka-reason", exact=False)).to_be_visible()
    expect(pg.locator(".cs-chip.inconsistent")).to_have_count(1)
    expect(main(pg).get_by_text("you agree")).to_be_visible()
    assert "Zebra-reason" not in pg.content(), "the unanswered sentence keeps its verdict hidden"
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "21-annotate-blind-after")
    assert labels(app, "blind-ada", items[0]) == [(1, 0)]

    # The personal link shown on the page is a deep link that opens the page as this annotator.
    main(pg).get_by_text("Your personal link", exact=True).click()
    link = main(pg).get_by_test_id("stCode")
    expect(link).to_contain_text(f"{app.url}/Annotate?token={app.tokens['blind-ada']}&dataset={app.dataset_id}")


def ready_for(pg, key: str) -> None:
    """Wait until the page takes `key`: its last script run is over and has drawn the button the key presses.

    Right after a key press, the label may already show while the page runs its script again: then the elements
    are stale and no button carries a shortcut, and a key pressed then is lost.
    """
    wait_idle(pg)
    expect(pg.locator('[data-stale="true"]')).to_have_count(0)
    expect(main(pg).locator(f'[aria-label="Shortcut {key}"]')).not_to_have_count(0)
    wait_idle(pg)


def settle(pg, key: str) -> None:
    """Let the rerun a shortcut started finish, until the page takes `key`, and give the page the focus."""
    ready_for(pg, key)
    main(pg).get_by_role("heading", name="Annotate", exact=True).click()


def test_keyboard_shortcuts_label_and_move_between_items(annotate_app: AnnotateApp, pg):
    app, items = annotate_app, annotate_app.items
    open_queue(pg, app, "keys-bob")
    verdicts_absent(pg)

    # Typing into a note never triggers a shortcut.
    note = main(pg).locator(f".st-key-an_item{items[0]}_0_note input")
    note.click()
    note.type("12 np")
    expect(note).to_have_value("12 np")
    note.press("Tab")
    wait_idle(pg)
    assert labels(app, "keys-bob", items[0]) == []
    verdicts_absent(pg)

    # "1" labels the first unlabelled sentence consistent (with the note typed before), then "2" the next one.
    main(pg).get_by_role("heading", name="Annotate", exact=True).click()
    pg.keyboard.press("1")
    expect(main(pg).get_by_text("Zebra-reason", exact=False)).to_be_visible()
    assert "Quokka-reason" not in pg.content()
    settle(pg, "2")
    pg.keyboard.press("2")
    expect(main(pg).get_by_text("Quokka-reason", exact=False)).to_be_visible()
    wait_idle(pg)
    assert labels(app, "keys-bob", items[0], notes=True) == [(0, 1, "12 np"), (1, 0, "")]
    expect(main(pg).get_by_text(re.compile(r"^1 of 2 items done"))).to_be_visible()
    shot(pg, "22-annotate-keyboard")

    # "N" goes to the next item, where the verdict is hidden again; "P" comes back.
    settle(pg, "N")
    pg.keyboard.press("n")
    expect(main(pg).get_by_text(SENTS[1][0])).to_be_visible()
    expect(main(pg).get_by_text("Item 2 of 2", exact=False)).to_be_visible()
    assert "Narwhal-reason" not in pg.content()
    settle(pg, "P")
    pg.keyboard.press("p")
    expect(main(pg).get_by_text("Item 1 of 2", exact=False)).to_be_visible()
    expect(main(pg).get_by_text("Quokka-reason", exact=False)).to_be_visible()
    wait_idle(pg)
    no_exception(pg)


def test_shortcuts_work_right_after_picking_a_name(annotate_app: AnnotateApp, pg):
    """The owner picks a name in "Who are you?": the picker held the keys, so 1 did nothing until the page was
    clicked. The focus leaves it once a name is picked."""
    app, items = annotate_app, annotate_app.items
    pg.goto(f"{app.url}/Annotate?dataset={app.dataset_id}")
    expect(main(pg).get_by_role("heading", name="Annotate", exact=True)).to_be_visible()
    wait_idle(pg)
    picker = main(pg).get_by_test_id("stSelectbox").filter(has_text="Who are you?")
    picker.click()
    pg.get_by_role("option", name="picked-cy").click()
    expect(main(pg).get_by_text(SENTS[0][1])).to_be_visible()
    ready_for(pg, "1")
    # the page takes the focus off the picker (components/annotate.py release_focus): no text field holds it
    pg.wait_for_function(
        "() => { const e = document.activeElement;"
        " return !e || !(e.tagName === 'INPUT' || e.tagName === 'TEXTAREA' || e.isContentEditable); }"
    )
    pg.keyboard.press("1")  # no click on the page first
    expect(main(pg).get_by_text("Zebra-reason", exact=False)).to_be_visible()
    wait_idle(pg)
    assert labels(app, "picked-cy", items[0]) == [(0, 1)]
    no_exception(pg)
    shot(pg, "23-annotate-picked-then-keys")
