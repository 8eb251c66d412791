"""Home page: database counts, the backend in use, the demo-judge warning."""

from __future__ import annotations

from tests.app.helpers import counts, seed_run, texts


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_embedded_backend_shows_demo_warning_and_empty_counts(open_page):
    at = open_page()
    assert not at.exception
    assert at.title[0].value == "Consistency Studio"
    assert any("Demo judge" in w for w in texts(at.warning)), texts(at.warning)
    assert metrics(at) == {
        "Runs": "0",
        "Documents": "0",
        "Rounds": "0",
        "Sentence verdicts": "0",
        "Cached answers": "0",
        "Model calls": "0",
    }
    assert any("**Embedded demo model (SmolLM2-135M-Instruct, offline)**" in m for m in texts(at.markdown))
    assert any("Embedded demo model" in m for m in texts(at.sidebar.markdown))


def test_endpoint_backend_shows_its_label_and_the_saved_runs(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The Eiffel Tower is in Paris.")
    at = open_page()
    assert not at.exception
    assert not at.warning, "no demo-judge warning for a real endpoint"
    m = metrics(at)
    assert m["Runs"] == "2"
    assert m["Sentence verdicts"] == str(counts()["sentence verdicts"]) == "4"
    assert m["Model calls"] == "2"
    assert any(f"**fake-model at `{judge.base_url}`**" in t for t in texts(at.markdown)), "the URL is code, not a link"
    assert any("fake-model" in t and judge.base_url in t for t in texts(at.sidebar.markdown))


def test_unreadable_database_is_reported_not_raised(open_page, monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}")
    at = open_page()
    assert not at.exception
    assert any("The database cannot be read" in e for e in texts(at.error)), texts(at.error)
    assert any("Backend in use" in s for s in texts(at.subheader)), "the rest of the page still renders"
