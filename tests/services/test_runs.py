"""Runs end to end: the fake server as the model, an in-memory database."""

from __future__ import annotations

import socket

import pytest

import services.embedded
from db import runs as db_runs
from db.engine import get_session
from services import runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from services.text import InputError
from tests.fakes import toy_judge

REF = (
    "The Eiffel Tower stands in Paris. It was completed in 1889 for the World's Fair. "
    "The tower is made of wrought iron."
)
CAND = "The Eiffel Tower is in Paris. It was completed in 1999. It is made of wrought iron."
FIXED = "The Eiffel Tower is in Paris. It was completed in 1889. It is made of wrought iron."


@pytest.fixture
def judge(fake):
    fake.responder = toy_judge(bad="1999", fix="1889")
    return fake


def counts(engine) -> dict[str, int]:
    with get_session(engine) as session:
        return db_runs.counts(session=session)


@pytest.fixture
def no_embedded_server(monkeypatch):
    def refuse():
        raise AssertionError("the embedded server must not be started")

    monkeypatch.setattr(services.embedded, "get_embedded_server", refuse)


def test_start_and_improve_end_to_end(engine, backend, judge):
    messages: list[str] = []
    run_id = runs.start_run(engine, backend, REF, CAND, DCRConfig(), title="Eiffel", progress=messages.append)
    d = runs.load(engine, run_id)
    assert d.run.status == "done" and d.run.error is None
    assert d.run.title == "Eiffel" and d.run.model == "fake-model" and d.run.base_url == backend.base_url
    assert d.run.prompt_versions == {"evaluator": "dce-summarization@1", "improver": "rai@1", "converter": "rule@1"}
    assert "api_key" not in d.run.params and d.run.params["max_retries"] == 2
    assert len(d.rounds) == 1 and d.run.initial_score == pytest.approx(2 / 3)
    assert [v.verdict for v in d.rounds[0].evaluation.sentences] == ["consistent", "inconsistent", "consistent"]
    assert d.usage["calls"] == 1 and len(judge.requests) == 1
    assert messages and "3 sentence" in messages[0]

    messages.clear()
    d = runs.improve_run(engine, backend, run_id, progress=messages.append)
    assert d.run.status == "done"
    assert [r.index for r in d.rounds] == [0, 1]
    assert d.rounds[1].evaluation.all_consistent
    assert d.run.n_rounds == 2 and d.run.final_score == 1.0 and d.run.initial_score == pytest.approx(2 / 3)
    assert runs.final_text(d) == FIXED
    assert d.usage["calls"] == 3 and len(judge.requests) == 3
    assert {s["stage"]: s["calls"] for s in d.usage_by_stage} == {"dce": 2, "rai": 1}
    assert any("score 1.00" in m for m in messages)

    # rejecting the rewrite brings the original sentence back
    assert runs.set_rewrite(engine, run_id, 0, 1, False)
    assert runs.final_text(runs.load(engine, run_id)) == CAND


def test_same_inputs_again_are_served_from_the_cache(engine, backend, judge):
    first = runs.start_run(engine, backend, REF, CAND, DCRConfig())
    assert len(judge.requests) == 1
    second = runs.start_run(engine, backend, REF, CAND, DCRConfig())
    assert second != first
    assert len(judge.requests) == 1  # no request for the second run
    d1, d2 = runs.load(engine, first), runs.load(engine, second)
    assert d2.run.status == "done" and d2.run.initial_score == d1.run.initial_score
    assert d2.usage["calls"] == 0 and d2.usage["cache_hits"] == 1
    assert counts(engine)["cached answers"] == 1 and counts(engine)["documents"] == 2


def test_unreachable_backend_gives_a_failed_run(engine):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = BackendConfig(kind="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0)
    run_id = runs.start_run(engine, backend, REF, CAND, DCRConfig())
    d = runs.load(engine, run_id)
    assert d.run.status == "failed"
    assert "Cannot reach" in d.run.error
    assert d.run.initial_score is None
    assert all(v.verdict == "unknown" for v in d.rounds[0].evaluation.sentences)
    assert d.usage["errors"] == 1
    # improving a failed run does nothing and does not raise
    d = runs.improve_run(engine, backend, run_id)
    assert len(d.rounds) == 1


def test_improver_failure_is_kept_on_the_round(engine, backend, judge):
    run_id = runs.start_run(engine, backend, REF, CAND, DCRConfig())
    judge.stop()
    d = runs.improve_run(engine, backend.with_changes(max_retries=0), run_id)
    assert len(d.rounds) == 1
    assert "Cannot reach" in d.rounds[0].improve_error
    assert d.usage["errors"] == 1
    assert "The improver failed in round 0" in runs.stop_reason(d)


def test_stop_reason_is_none_while_improve_can_go_on_and_names_each_stop(engine, backend, judge):
    run_id = runs.start_run(engine, backend, REF, CAND, DCRConfig())
    assert runs.stop_reason(runs.load(engine, run_id)) is None, "round 0 with an inconsistent sentence"
    d = runs.improve_run(engine, backend, run_id, max_rounds=2)
    assert d.run.max_rounds == 2, "the m asked for is the run's m"
    assert runs.stop_reason(d) == "Every sentence is judged consistent in round 1: Algorithm 1 stops here."


@pytest.mark.parametrize(
    ("reference", "candidate", "message"),
    [("A reference.", "   ", "candidate is empty"), ("", CAND, "reference is empty"), (REF, "?!", "no sentence")],
)
def test_input_errors_save_nothing(engine, backend, judge, reference, candidate, message):
    with pytest.raises(InputError, match=message):
        runs.start_run(engine, backend, reference, candidate, DCRConfig())
    assert counts(engine)["runs"] == 0 and counts(engine)["documents"] == 0
    assert judge.requests == []


def test_max_input_chars_comes_from_the_environment(engine, backend, judge, monkeypatch):
    monkeypatch.setenv("MAX_INPUT_CHARS", "50")
    with pytest.raises(InputError, match="limit is 50"):
        runs.start_run(engine, backend, REF, CAND, DCRConfig())
    assert counts(engine)["runs"] == 0


def test_improve_unknown_run_is_an_input_error(engine, backend):
    with pytest.raises(InputError, match="does not exist"):
        runs.improve_run(engine, backend, 999)


def test_check_context_refuses_long_pair_for_embedded(engine, no_embedded_server):
    embedded = BackendConfig(kind="embedded", max_retries=0, timeout=1.0)
    long_ref = "The tower is tall. " * 2000  # ~38,000 characters, ~9,500 tokens
    with pytest.raises(InputError, match="8,192-token context") as exc:
        runs.check_context(embedded, long_ref, CAND)
    assert "Shorten the reference" in str(exc.value)
    with pytest.raises(InputError, match="context"):
        runs.start_run(engine, embedded, long_ref, CAND, DCRConfig())
    assert counts(engine)["runs"] == 0


def test_check_context_accepts_short_pairs_and_remote_backends(backend, no_embedded_server, monkeypatch):
    embedded = BackendConfig(kind="embedded")
    runs.check_context(embedded, REF, CAND)
    long_ref = "The tower is tall. " * 2000
    runs.check_context(backend, long_ref, CAND)  # a remote model's context is its own business
    monkeypatch.setenv("EMBEDDED_CTX", "32768")
    runs.check_context(embedded, long_ref, CAND)


def test_delete_and_list(engine, backend, judge):
    a = runs.start_run(engine, backend, REF, CAND, DCRConfig())
    b = runs.start_run(engine, backend, REF, FIXED, DCRConfig())
    assert [r.id for r, _ in runs.list_all(engine)] == [b, a]
    assert {r.status for r, _ in runs.list_all(engine)} == {"done"}
    assert runs.delete(engine, a) and not runs.delete(engine, a)
    assert [r.id for r, _ in runs.list_all(engine)] == [b]
    assert runs.db_counts(engine)["documents"] == 3
