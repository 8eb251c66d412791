"""Batches of Summ-NLI, Sent-NLI and QG-QA: windows, per-sentence verdicts, repeats with their own samples."""

from __future__ import annotations

import pytest

from services import dcr, metaeval
from services.config import BackendConfig
from services.jobs import batches
from services.text import InputError
from tests.fakes import FakeOpenAIServer
from tests.nli_fakes import nli_judge
from tests.support.batches import BAD, make_dataset
from tests.support.waiting import HEALTHY_TIMEOUT


@pytest.fixture
def nli_server():
    with FakeOpenAIServer(responder=nli_judge(bad=BAD)) as fake:
        yield fake


def backend_of(fake) -> BackendConfig:
    return BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
    )


@pytest.mark.parametrize(("method", "calls_per_item"), [("summ-nli", 1), ("sent-nli", 2), ("qg-qa", 4)])
def test_each_method_runs_over_a_dataset(engine, nli_server, method, calls_per_item):
    ds = make_dataset(engine, 4)  # items 0 and 2 carry the wrong amount
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend_of(nli_server), cfg=dcr.DCRConfig(method=method))
    batches.process_batch(engine, bid)
    items = batches.items_frame(engine, bid)
    assert list(items["status"]) == ["done"] * 4
    with engine.connect() as conn:
        hits = [
            r[0] for r in conn.exec_driver_sql(f"SELECT cache_hits FROM batch_item WHERE batch_id = {bid} ORDER BY id")
        ]
    # identical QA prompts (the same question on the same article) are asked once, then served by the cache
    assert [c + h for c, h in zip(items["calls"], hits, strict=True)] == [calls_per_item] * 4
    flagged = [s < 1.0 for s in items["score"]]
    assert flagged == [True, False, True, False]
    data = metaeval.load_batch(engine, bid)
    if method != "summ-nli":  # per-sentence verdicts, read by the sentence-level tables like DCE's
        assert set(data.sentences["verdict"]) == {"consistent", "inconsistent"}
    assert list(data.items["model_is_consistent"]) == [False, True, False, True]


def test_window_is_recorded_and_used(engine, nli_server):
    ds = make_dataset(engine, 2)
    bid = batches.create_batch(
        engine, dataset_id=ds, backend=backend_of(nli_server), cfg=dcr.DCRConfig(method="sent-nli"), window=2
    )
    batches.process_batch(engine, bid)
    assert batches.options(engine, bid).window == 2
    assert list(batches.items_frame(engine, bid)["calls"]) == [1, 1]  # two sentences, one window
    assert "w=2" in batches.list_batches(engine)[0].name


def test_repeats_ask_the_model_again_instead_of_reading_the_cache(engine, nli_server):
    ds = make_dataset(engine, 2)
    ids = batches.create_repeats(
        engine, repeats=3, dataset_id=ds, backend=backend_of(nli_server), cfg=dcr.DCRConfig(method="summ-nli")
    )
    for bid in ids:
        batches.process_batch(engine, bid)
    opts = [batches.options(engine, b) for b in ids]
    assert [o.sample for o in opts] == [0, 1, 2] and len({o.repeat_group for o in opts}) == 1
    assert [int(batches.items_frame(engine, b)["calls"].sum()) for b in ids] == [2, 2, 2]
    assert len(nli_server.requests) == 6
    # the same configuration again without a new sample index is served by the cache
    again = batches.create_batch(
        engine, dataset_id=ds, backend=backend_of(nli_server), cfg=dcr.DCRConfig(method="summ-nli")
    )
    batches.process_batch(engine, again)
    p = batches.progress(engine, again)
    assert (p.cache_hits, p.calls) == (2, 0)


def test_bad_window_or_repeats_are_refused(engine, nli_server):
    ds = make_dataset(engine, 1)
    with pytest.raises(InputError):
        batches.create_batch(engine, dataset_id=ds, backend=backend_of(nli_server), cfg=dcr.DCRConfig(), window=0)
    with pytest.raises(InputError):
        batches.create_repeats(engine, repeats=0, dataset_id=ds, backend=backend_of(nli_server), cfg=dcr.DCRConfig())


def test_summ_nli_score_range_is_the_readers_else_the_human_scores_own():
    from services.jobs.batches.create import score_range_of

    assert score_range_of({"score_range": [1, 5]}, {"scored": 10, "score_min": 0.0, "score_max": 1.0}) == (1.0, 5.0)
    assert score_range_of({}, {"scored": 10, "score_min": 0.25, "score_max": 0.75}) == (0.0, 1.0)
    assert score_range_of({}, {"scored": 10, "score_min": 1.5, "score_max": 6.2}) == (1.0, 7.0)
    assert score_range_of({}, {"scored": 0, "score_min": None, "score_max": None}) is None
    assert score_range_of({}, {"scored": 3, "score_min": 4.0, "score_max": 4.0}) is None  # no range to ask in


def test_summ_nli_without_human_scores_judges_labels_and_refuses_a_score_mode(engine, nli_server):
    ds = make_dataset(engine, 2)  # no human scores
    backend = backend_of(nli_server)
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"))
    batches.process_batch(engine, bid)
    assert all("Judgement: < Consistent or Inconsistent >" in r["messages"][0]["content"] for r in nli_server.requests)
    with pytest.raises(InputError, match="no human scores"):
        batches.create_batch(
            engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"), summ_nli_mode="score"
        )
    with pytest.raises(InputError, match="Summ-NLI mode"):
        batches.create_batch(
            engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"), summ_nli_mode="graded"
        )
