"""The demo workspace in the app: Home offers it, one click opens it, every page then shows the banner and the
tour, one click leaves it, and a deployment can turn it off."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.demo import workspace
from services.demo.build import SMALL
from tests.app.helpers import click, texts

PAGES = [
    "pages/1_Evaluate.py",
    "pages/2_History.py",
    "pages/4_Datasets.py",
    "pages/5_Batches.py",
    "pages/7_Annotate.py",
    "pages/6_Meta-evaluation.py",
    "pages/13_Judges.py",
    "pages/8_ConsEval.py",
    "pages/10_DHP.py",
    "pages/12_Reports.py",
]
OPEN = "Open the demo workspace"


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("demo-data")


@pytest.fixture
def small_demo(demo_dir, monkeypatch) -> Path:
    """The demo's data folder (one per module: the workspace is built by the first test that opens it, small)."""
    monkeypatch.setenv("DATA_DIR", str(demo_dir))
    monkeypatch.setattr(workspace, "FULL", SMALL)
    return demo_dir


def banner(at) -> str:
    return next((t for t in texts(at.markdown) if workspace.BANNER in t), "")


def test_home_offers_the_demo_and_a_deployment_can_turn_it_off(open_page, monkeypatch):
    at = open_page()
    assert not at.exception
    assert any(b.label == OPEN for b in at.button)
    assert not banner(at), "no banner before the demo is opened"
    monkeypatch.setenv("DEMO_WORKSPACE", "0")
    at = open_page()
    assert not at.exception
    assert not any(b.label == OPEN for b in at.button)


def test_one_click_opens_the_demo_and_every_page_shows_the_banner_and_the_tour(open_page, small_demo):
    at = click(open_page(), OPEN)
    assert not at.exception
    assert workspace.is_built()
    assert banner(at).startswith(f":material/science: **{workspace.BANNER}.**")
    tour = next(t for t in texts(at.markdown) if t.startswith("Tour:"))
    for label, _page, _anchor in workspace.TOUR:
        assert label in tour
    assert tour.count("demo=1") == len(workspace.TOUR), "each step opens the demo in the session it starts"
    assert "Judges?demo=1#compare-systems" in tour and "Judges?demo=1#label-next" in tour
    assert "Evaluate?demo=1&amp;run=" in tour and "Reports?demo=1&amp;share=" in tour
    counts = {m.label: m.value for m in at.metric}
    assert counts["Documents"] != "0", "Home counts the workspace's rows"
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, page
        assert banner(at), f"{page} shows no banner"


def test_leaving_the_demo_shows_the_users_own_database_again(open_page, small_demo):
    at = click(open_page(), OPEN)
    assert banner(at)
    at = click(at, "Leave the demo")
    assert not at.exception
    assert not banner(at)
    assert {m.label: m.value for m in at.metric}["Documents"] == "0", "the user's database, empty as it was"
    at.switch_page("pages/13_Judges.py").run()
    assert not banner(at) and any("No dataset yet" in t for t in texts(at.info))


def test_a_link_with_demo_1_opens_the_built_demo(open_page, small_demo):
    workspace.ensure()
    at = open_page("pages/13_Judges.py", query={"demo": "1"})
    assert not at.exception
    assert banner(at)
    assert not any("No dataset yet" in t for t in texts(at.info))
