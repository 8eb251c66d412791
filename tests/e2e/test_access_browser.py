"""Access in headless Chromium: the owner signs in with the studio password; each kind of personal link (a
report share, an expert's survey, a ConsEval rater, an annotator) shows its own page with no sidebar, and
History, Settings, Datasets and another study's URL are refused to it.

The real app (`python serve.py`) with STUDIO_PASSWORD set, on its own SQLite file seeded from here
before it starts; the browser is the suite's shared one (tests/e2e/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from db.engine import get_session, make_engine
from db.models import ReportShareCreate
from services import annotations as an
from services import conseval as ce
from services import reports, runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from services.dhp import survey as sv
from services.dhp.catalogue import TASKS
from tests.annotation_seed import make_dataset
from tests.fakes import FakeOpenAIServer, toy_judge
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

PASSWORD = "open sesame, said the owner"
REFERENCE = "The council met on Tuesday. It approved 40 million dollars for the bridge. Work starts in March."
CANDIDATE = "The council met on Tuesday. It approved 47 million dollars for the bridge."


@dataclass
class AccessApp:
    url: str
    database_url: str
    run_id: int
    study_id: int  # the rater's study
    other_study_id: int
    dataset_id: int
    other_dataset_id: int
    links: dict[str, str]  # kind -> the path and query of that personal link


def seed(database_url: str, fake_url: str) -> dict:
    engine = make_engine(database_url)
    try:
        backend = BackendConfig(kind="openai", base_url=fake_url, model="fake-model", max_retries=1)
        run_id = runs.start_run(engine, backend, REFERENCE, CANDIDATE, DCRConfig(max_rounds=1), source="cli")
        cfg = ce.StudyConfig(
            criteria=["Conciseness"],
            scales=["5-P"],
            granularities=["none"],
            models=[ce.ModelSpec.of(backend)],
            n_samples=2,
            n_boot=10,
        )
        study_id = ce.create_study(engine, cfg, ce.sample_items(["Conciseness"], 2), name="rita's study")
        other_study_id = ce.create_study(engine, cfg, ce.sample_items(["Conciseness"], 2), name="another study")
        rater = ce.add_rater(engine, study_id, "Rita Rater")
        ds, _ = make_dataset(engine, [["The council met on Tuesday."]], name="ada's dataset")
        other_ds, _ = make_dataset(engine, [["Nobody is assigned this sentence."]], name="other dataset")
        ada = an.create_annotator(engine, "Ada Annotator")
        an.assign(engine, ds, annotators=[ada.id], per_item=1)
        with get_session(engine) as s:
            survey_id = sv.create_survey(TASKS["summarization"], title="Access survey", session=s)
            expert = sv.invite(survey_id, "Grace Expert", session=s)
            expert_token = sv.expert_token(expert.id, session=s)
            share = reports.create_share(session=s, data=ReportShareCreate(kind="run", ref_id=run_id, title="Run"))
            s.commit()
        return {
            "run_id": run_id,
            "study_id": study_id,
            "other_study_id": other_study_id,
            "dataset_id": ds,
            "other_dataset_id": other_ds,
            "links": {
                "share": f"/Reports?share={share.token}",
                "expert": f"/Survey?token={expert_token}",
                "rater": f"/Rate?token={rater.token}",
                "annotator": f"/Annotate?token={an.annotator_token(engine, ada.id)}",
            },
        }
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def access_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AccessApp]:
    tmp = tmp_path_factory.mktemp("e2e-access")
    database_url = f"sqlite:///{tmp / 'access.db'}"
    with FakeOpenAIServer(toy_judge(bad="47 million", fix="40 million")) as fake:
        seeded = seed(database_url, fake.base_url)
        for url in serve(tmp, database_url, fake=fake, STUDIO_PASSWORD=PASSWORD, CONSISTENCY_SPAWN_WORKER="0"):
            yield AccessApp(url=url, database_url=database_url, **seeded)


pg = page_fixture(VIEWPORT, name="pg")


def no_sidebar(pg) -> None:
    """No sidebar, no navigation and no way to open either."""
    for test_id in ("stSidebar", "stSidebarNav", "stExpandSidebarButton", "stSidebarCollapsedControl"):
        expect(pg.get_by_test_id(test_id)).to_be_hidden()
    expect(pg.get_by_role("link", name=re.compile(r"History|Settings|Datasets"))).to_have_count(0)


def refused(pg) -> None:
    """The page shows none of its own content: the sign-in form or the link-holder refusal, no sidebar."""
    expect(main(pg).get_by_role("heading", name=re.compile(r"^(Sign in|Not part of your link)$"))).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    no_sidebar(pg)
    for title in ("History", "Settings", "Datasets", "ConsEval", "Reports"):
        expect(main(pg).get_by_role("heading", name=title, exact=True)).to_have_count(0)


LINK_PAGES = {  # kind -> what the holder sees on their page
    "share": "A read-only shared report.",
    "expert": "You are Grace Expert (from your personal link).",
    "rater": "You are Rita Rater, rating for the study rita's study.",
    "annotator": "You are Ada Annotator (from your personal link).",
}


@pytest.mark.parametrize("kind", list(LINK_PAGES))
def test_a_link_shows_its_page_only(access_app: AccessApp, pg, kind: str):
    app = access_app
    pg.goto(app.url + app.links[kind])
    expect(main(pg).get_by_text(LINK_PAGES[kind])).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    no_sidebar(pg)
    shot(pg, f"50-access-{kind}")
    if kind == "annotator":
        expect(main(pg).get_by_text("The council met on Tuesday.")).to_be_visible()
        expect(main(pg).get_by_text("Who are you?")).to_have_count(0)
        expect(main(pg).get_by_text("Assign items")).to_have_count(0)
        expect(main(pg).get_by_text("Blind mode", exact=True)).to_have_count(0)
        # Another dataset's URL with the same token shows only the annotator's own dataset.
        pg.goto(f"{app.url}{app.links[kind]}&dataset={app.other_dataset_id}")
        expect(main(pg).get_by_text("The council met on Tuesday.")).to_be_visible()
        wait_idle(pg)
        assert "Nobody is assigned this sentence." not in pg.content()
        no_sidebar(pg)
    # Edited URLs: History, Settings, Datasets and another study open nothing for the link holder.
    for path in (
        "/History",
        "/Settings",
        "/Datasets",
        f"/ConsEval?study={app.other_study_id}",
        f"/ConsEval?study={app.study_id}",
        f"/Evaluate?run={app.run_id}",
        "/",
    ):
        pg.goto(app.url + path)
        refused(pg)
        assert CANDIDATE not in pg.content() and "another study" not in pg.content()


def test_a_revoked_share_link_stops_working(access_app: AccessApp, pg):
    app = access_app
    engine = make_engine(app.database_url)
    try:
        token = app.links["share"].split("=", 1)[1]
        share = reports.find_share(engine, token)
        pg.goto(app.url + app.links["share"])
        expect(main(pg).get_by_text(LINK_PAGES["share"])).to_be_visible()
        wait_idle(pg)
        reports.revoke(engine, share.id)
        pg.goto(app.url + app.links["share"])
        expect(main(pg).get_by_role("heading", name="Shared report")).to_be_visible()
        expect(main(pg).get_by_text(re.compile("revoked", re.IGNORECASE))).to_be_visible()
        no_sidebar(pg)
    finally:
        engine.dispose()


def test_the_owner_signs_in_with_the_password(access_app: AccessApp, pg):
    app = access_app
    pg.goto(f"{app.url}/History")
    expect(main(pg).get_by_role("heading", name="Sign in")).to_be_visible()
    wait_idle(pg)
    no_sidebar(pg)
    assert CANDIDATE not in pg.content()
    field = main(pg).get_by_label("Password", exact=True)
    field.fill("not the password")
    main(pg).get_by_role("button", name=re.compile("Sign in")).click()
    expect(main(pg).get_by_text("Wrong password.")).to_be_visible()
    field.fill(PASSWORD)
    main(pg).get_by_role("button", name=re.compile("Sign in")).click()
    expect(main(pg).get_by_role("heading", name="History", exact=True)).to_be_visible()
    wait_idle(pg)
    no_exception(pg)
    sidebar = pg.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text("Signed in with the studio password.")).to_be_visible()
    shot(pg, "54-access-owner")
    # Signed in for the session: the sidebar leads to the owner's pages.
    sidebar.get_by_role("link", name="Settings").click()
    expect(main(pg).get_by_role("heading", name="Settings", exact=True)).to_be_visible()
    sidebar.get_by_role("button", name=re.compile("Sign out")).click()
    expect(main(pg).get_by_role("heading", name="Sign in")).to_be_visible()
