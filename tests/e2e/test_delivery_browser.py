"""What a user is told, in headless Chromium: a run with a rejected rewrite reports the text it delivers and that
text's score (History, its share link and its report file); "Re-run failed" on a cancelled batch asks only the
failed item again and shows its raw answer; the judge and the evidence disagreeing is flagged and filterable.

The fake judge is the toy judge of the bundled sample ("47 million" is wrong, the improver writes "40 million");
it says nothing about "Tom Becker", whom the article does not name as the committee's chair.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from db.engine import make_engine
from services import runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, answers_connection_check, last_user, toy_judge
from tests.support.batches import EVAL, judge_backend, make_dataset
from tests.support.browser import (
    ARTIFACTS,
    BAD,
    BROWSER_MARKS,
    FIX,
    SAMPLE,
    assert_clean_log,
    main,
    metric,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    wait_idle,
)

pytestmark = BROWSER_MARKS
expect = playwright_expect()
SMALL = {"width": 1280, "height": 800}


@dataclass
class App:
    url: str
    fake: FakeOpenAIServer
    database_url: str
    rejected_run: int  # improved, then its one rewrite rejected
    plain_run: int  # judged only
    batch_id: int  # cancelled while item 1 failed
    state: dict


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    tmp = tmp_path_factory.mktemp("e2e-delivery")
    judge = answers_connection_check(toy_judge(bad=BAD, fix=FIX))
    state = {"bad_item_1": True}
    stop = threading.Event()
    database_url = f"sqlite:///{tmp / 'delivery.db'}"
    engine = make_engine(database_url)
    batch: list[int] = []

    def respond(body: dict):
        if state["bad_item_1"] and "Item 1:" in last_user(body):
            batches.request_cancel(engine, batch[0])  # "Cancel" pressed while the model answers item 1
            stop.set()
            return {"reason": [], "is_consistent": True}  # reads as JSON, judges no sentence: item 1 fails
        return judge(body)

    fake = FakeOpenAIServer(respond).start()
    try:
        backend = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1)
        rejected = runs.start_run(engine, backend, SAMPLE.reference, SAMPLE.candidate, DCRConfig(max_rounds=1))
        runs.improve_run(engine, backend, rejected)
        assert runs.set_rewrite(engine, rejected, 0, 0, False)
        plain = runs.start_run(engine, backend, SAMPLE.reference, SAMPLE.candidate, DCRConfig(max_rounds=0))
        ds = make_dataset(engine, 8)
        batch.append(batches.create_batch(engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL, concurrency=1))
        batches.process_batch(engine, batch[0], stop=stop)
        assert batches.progress(engine, batch[0]).batch.status == "cancelled"
        engine.dispose()
        for url in serve(tmp, database_url, fake=fake):
            yield App(url, fake, database_url, rejected, plain, batch[0], state)
    finally:
        fake.stop()
    assert_clean_log(tmp, "MediaFileStorageError")


page = page_fixture(SMALL)


def shot(pg, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_a_rejected_rewrite_is_reported_with_the_delivered_text_and_its_score(app: App, page, tmp_path: Path):
    pg = page
    pg.goto(f"{app.url}/History?run={app.rejected_run}")
    # Round 0 judged the candidate as given (sentence 1 inconsistent: 0.750); round 1 (1.000) judged the rewrite
    # that was rejected, so it is not the delivered text's score.
    expect(metric(pg, "Score Ẑ of the delivered text")).to_have_text(
        "0.750",
    )
    expect(main(pg).get_by_text(re.compile("Rejected by the reviewer")).first).to_be_visible()
    expect(main(pg).get_by_test_id("stCode").filter(has_text=BAD).first).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "delivery-history")

    main(pg).get_by_role("button", name="Build report").click()  # built when asked for, then downloaded
    expect(main(pg).get_by_role("button", name="Download report")).to_be_visible()
    with pg.expect_download() as dl:
        main(pg).get_by_role("button", name="Download report").click()
    html = Path(dl.value.path()).read_text(encoding="utf-8")
    assert "Score Ẑ of the delivered text" in html and "after the last round" not in html
    assert "Not in the delivered text" in html and "Rejected by the reviewer" in html

    main(pg).get_by_role("button", name="Create share link").click()
    link = main(pg).get_by_test_id("stCode").filter(has_text="/Reports?share=")
    expect(link).to_be_visible()
    pg.goto(link.inner_text().strip())
    expect(metric(pg, "Score Ẑ of the delivered text")).to_have_text(
        "0.750",
    )
    expect(main(pg).get_by_text("after the last round")).to_have_count(0)
    expect(main(pg).get_by_text(re.compile("rejected or left out"))).to_be_visible()
    main(pg).get_by_test_id("stExpander").filter(has_text="The document, its sentence verdicts").locator(
        "summary"
    ).click()
    expect(main(pg).get_by_text(re.compile("Not in the delivered text")).first).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "delivery-share")


def test_rerun_failed_on_a_cancelled_batch_asks_only_the_failed_item_again(app: App, page):
    pg = page
    pg.goto(f"{app.url}/Batches?batch={app.batch_id}")
    expect(main(pg).get_by_text(re.compile(r"status\s+cancelled"))).to_be_visible()
    expect(metric(pg, "Failed")).to_have_text(
        "1",
    )
    pending = metric(pg, "Pending").inner_text()
    main(pg).get_by_test_id("stExpander").filter(has_text="Failed items").locator("summary").click()
    raw = main(pg).get_by_test_id("stCode").filter(has_text='"reason": []')
    expect(raw).to_be_visible()  # the model's answer as written
    wait_idle(pg)
    shot(pg, "delivery-batch-failed")

    app.state["bad_item_1"] = False
    sent = len(app.fake.requests)
    main(pg).get_by_role("button", name="Re-run 1 failed").click()
    expect(metric(pg, "Failed")).to_have_text(
        "0",
    )  # the app's worker re-asked item 1
    expect(main(pg).get_by_text(re.compile(r"status\s+cancelled"))).to_be_visible()
    expect(metric(pg, "Pending")).to_have_text(pending)  # the cancelled batch's other items did not run
    assert len(app.fake.requests) == sent + 1, "one request: the failed item, past its cached answer"
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "delivery-batch-rerun")


def test_the_judge_and_the_evidence_disagreeing_is_flagged_and_filterable(app: App, page):
    pg = page
    pg.goto(f"{app.url}/Evaluate?run={app.plain_run}")
    flag = main(pg).locator(".cs-flag")
    expect(flag).to_have_count(
        1,
    )  # "Tom Becker" chairs nothing in the article
    expect(flag).to_contain_text("'Tom Becker' where it says 'Ana Ruiz'")
    expect(main(pg).locator(".cs-card")).to_have_count(4)
    main(pg).get_by_text(re.compile(r"Only the 1 sentence\(s\) where the judge and the evidence disagree")).click()
    expect(main(pg).locator(".cs-card")).to_have_count(1)
    expect(main(pg).locator(".cs-card").first).to_contain_text("Tom Becker")
    wait_idle(pg)
    no_exception(pg)
    shot(pg, "delivery-disagreement")
