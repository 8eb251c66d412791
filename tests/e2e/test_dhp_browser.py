"""The DHP page in headless Chromium: a benchmark run in the background worker, results with the line at D = 1,
and the expert survey with an expert voting from a second browser context through their personal link.

The pattern of test_annotate_browser.py: the real app in a subprocess (with its worker) against the fake server
in this process, on a database seeded before it starts; the suite's shared browser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from db.engine import get_session, make_engine
from services import dhp
from services.dhp import survey as sv
from services.dhp.catalogue import TASKS
from services.dhp.perturb import Item
from tests.fakes import FakeOpenAIServer, last_user
from tests.support.browser import (
    BROWSER_MARKS,
    TIMEOUT_MS,
    VIEWPORT,
    main,
    metric,
    no_exception,
    page_fixture,
    playwright_expect,
    serve,
    shot,
    wait_idle,
)
from tests.support.dhp import rated_text
from tests.support.waiting import WAIT_MS

pytestmark = BROWSER_MARKS

expect = playwright_expect()

ITEMS = [
    Item(f"n{i}", f"The council met on day {i}. It approved {40 + i} million pounds. Work starts in week {i}.", "a")
    for i in range(8)
]
ORIGINALS = {it.text for it in ITEMS}


def judge(body: dict) -> dict | str:
    """A discerning evaluator: 5 for an original summary, 2 for anything else."""
    content = last_user(body)
    if content.startswith("Reply with the word OK"):
        return "OK"
    text = rated_text(content)  # Appendix E's prompt: the text, then the "Evaluation Score" line
    return "5" if text in ORIGINALS else "2"


@dataclass
class DhpApp:
    url: str
    database_url: str
    set_id: int


@pytest.fixture(scope="module")
def dhp_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DhpApp]:
    tmp = tmp_path_factory.mktemp("e2e-dhp")
    database_url = f"sqlite:///{tmp / 'dhp.db'}"
    engine = make_engine(database_url)
    try:
        with get_session(engine) as s:
            sid = dhp.create_set(
                TASKS["summarization"], ITEMS, name="e2e set", seed=0, session=s, only=["typo:minor", "reorder:major"]
            )
    finally:
        engine.dispose()
    with FakeOpenAIServer(judge) as fake:
        for url in serve(tmp, database_url, fake=fake, LLM_MODEL="judge-a", CONSISTENCY_SPAWN_WORKER="1"):
            yield DhpApp(url=url, database_url=database_url, set_id=sid)


pg = page_fixture(VIEWPORT, name="pg")


def test_benchmark_in_the_worker_then_results_with_the_threshold(dhp_app: DhpApp, pg):
    pg.goto(f"{dhp_app.url}/DHP?view=Texts")
    expect(main(pg).get_by_role("heading", name="DHP: discernment of LLM evaluators")).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    expect(main(pg).get_by_text("Perturbed text, as a diff of its original")).to_be_visible()
    expect(pg.locator(".cs-ins").first).to_be_visible()
    shot(pg, "40-dhp-texts")

    pg.goto(f"{dhp_app.url}/DHP?view=Benchmark")  # a deep link to the section
    wait_idle(pg)
    main(pg).get_by_role("textbox", name="Evaluator models").fill("judge-a, judge-b")
    main(pg).get_by_role("spinbutton", name="Repeats r").fill("1")
    main(pg).get_by_role("button", name="Run").click()
    expect(main(pg).get_by_text("2 run(s) handed to the background worker")).to_be_visible()
    # The worker scores 24 texts x 4 metrics per model; the fragment polls until both are done.
    expect(main(pg).get_by_text("status done")).to_have_count(2, timeout=WAIT_MS)
    no_exception(pg)
    shot(pg, "41-dhp-benchmark")

    pg.goto(f"{dhp_app.url}/DHP?view=Results")
    # wait_idle alone can pass before the run has drawn anything, and the page's text is read below: judge-a's
    # results are drawn first, then the run goes on to judge-b's.
    expect(metric(pg, "judge-a: D_avg")).to_be_visible()
    wait_idle(pg)
    # character and sentence levels only: D_avg is left empty with the reason; D_min and D_wilson_min are given
    assert metric(pg, "judge-a: D_avg").inner_text().strip() == "—"
    expect(main(pg).get_by_text("not comparable").first).to_be_visible()
    lows = [float(x) for x in re.findall(r"D_min ([\d.]+)", main(pg).inner_text())]
    assert len(lows) == 2 and all(d > 1 for d in lows)
    expect(main(pg).get_by_text("D = 1 (p = 0.05)").first).to_be_visible()  # the threshold line's label
    no_exception(pg)
    shot(pg, "42-dhp-results")


def answer(page, key: str, metric_name: str) -> None:
    """Pick an option of one survey question, once a rerun's transient copy of the question has gone."""
    option = main(page).locator(f".st-key-{key}").get_by_text(metric_name, exact=True)
    expect(option).to_have_count(1)
    option.click()


def test_an_expert_votes_from_a_second_browser_context(dhp_app: DhpApp, pg, chromium):
    pg.goto(f"{dhp_app.url}/DHP?view=Expert+survey")
    wait_idle(pg)
    main(pg).get_by_role("button", name="Create survey").click()
    expect(main(pg).get_by_text("Status: open")).to_be_visible()
    main(pg).get_by_placeholder("Name").fill("Grace Hopper")
    main(pg).get_by_role("button", name="Invite").click()
    link_box = main(pg).get_by_test_id("stCode").filter(has_text="Survey?token=")
    expect(link_box).to_have_count(1)
    link = link_box.inner_text().strip()
    assert link.startswith(f"{dhp_app.url}/Survey?token=")
    wait_idle(pg)

    # The expert opens their personal link in another browser (a separate session) and answers two questions.
    ctx = chromium.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(TIMEOUT_MS)
    expert = ctx.new_page()
    try:
        expert.goto(link)
        expect(main(expert).get_by_text("You are Grace Hopper (from your personal link).")).to_be_visible()
        wait_idle(expert)
        answer(expert, "sv_q_typo", "Fluency")
        expect(main(expert).get_by_text("Saved: Fluency.")).to_be_visible()
        wait_idle(expert)
        answer(expert, "sv_q_reorder", "Coherence")
        expect(main(expert).get_by_text("Saved: Coherence.")).to_be_visible()
        expect(main(expert).get_by_text("2 of 6 answered")).to_be_visible()
        no_exception(expert)
        shot(expert, "43-dhp-expert")
    finally:
        ctx.close()

    engine = make_engine(dhp_app.database_url)
    try:
        with get_session(engine) as s:
            (survey,) = sv.list_surveys(session=s)
            assert sv.weights(survey.id, session=s).weights == {
                "typo": {"Coherence": 0.0, "Consistency": 0.0, "Fluency": 1.0, "Relevance": 0.0},
                "reorder": {"Coherence": 1.0, "Consistency": 0.0, "Fluency": 0.0, "Relevance": 0.0},
            }
    finally:
        engine.dispose()
    # The organiser's view follows (it polls) and shows who answered what; closing makes the weights final.
    expect(main(pg).get_by_text("answered 2/6")).to_be_visible(timeout=WAIT_MS)
    wait_idle(pg)
    main(pg).get_by_role("button", name="Close the survey").click()
    expect(main(pg).get_by_text("its weights feed D_EW")).to_be_visible()
    no_exception(pg)
    shot(pg, "44-dhp-survey-organiser")
