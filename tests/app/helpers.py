"""Constants and helpers for the AppTest tests (fixtures are in conftest.py)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

import services.database
from services import runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from tests.fakes import FakeOpenAIServer
from tests.support.waiting import HEALTHY_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
HOME = None
EVALUATE = "pages/1_Evaluate.py"
HISTORY = "pages/2_History.py"
SETTINGS = "pages/3_Settings.py"

# Three sentences, one wrong (1999): the toy judge flags it and the improver writes 1889.
REF = (
    "The Eiffel Tower stands in Paris. It was completed in 1889 for the World's Fair. "
    "The tower is made of wrought iron."
)
CAND = "The Eiffel Tower is in Paris. It was completed in 1999. It is made of wrought iron."
FIXED = "The Eiffel Tower is in Paris. It was completed in 1889. It is made of wrought iron."


def counts() -> dict[str, int]:
    """What the test's database holds (the same engine the app uses)."""
    return runs.db_counts(services.database.get_engine())


def seed_run(fake: FakeOpenAIServer, candidate: str = CAND, **kw) -> int:
    """A finished round-0 run in the test's database, judged by the fake (as cli.py would save it)."""
    backend = BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
    )
    return runs.start_run(services.database.get_engine(), backend, REF, candidate, DCRConfig(), **kw)


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def click(at: AppTest, label: str) -> AppTest:
    """Click the (first) button with this exact label and rerun."""
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; buttons: {[b.label for b in at.button]}"
    return matches[0].click().run()


def fragment_intervals(monkeypatch) -> dict:
    """Record the run_every of each st.fragment the page makes, by its function's name (the last one made)."""
    import streamlit

    seen: dict = {}
    real = streamlit.fragment

    def recording(func=None, *, run_every=None):
        if func is None:  # @st.fragment(run_every=...)
            return lambda f: recording(f, run_every=run_every)
        seen[func.__name__] = run_every
        return real(func, run_every=run_every)

    monkeypatch.setattr(streamlit, "fragment", recording)
    return seen
