"""Estimates before a run (calls, tokens, time, cost) and a running batch's ETA from measured throughput."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from services import estimates as es
from services.config import BackendConfig
from tests.support.waiting import HEALTHY_TIMEOUT

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
REMOTE = BackendConfig(kind="openai", base_url="http://models.example.org/v1", model="m", max_tokens=768)


# -- the ETA -------------------------------------------------------------------------------------------
def test_the_eta_follows_the_recent_rate_not_items_finished_long_ago():
    """The issue's case: many items came quickly (from the cache) a while ago, the rest take 0.35 s each."""
    old_fast = [NOW - timedelta(minutes=10, seconds=i * 0.01) for i in range(100)]
    recent = [NOW - timedelta(seconds=0.35 * i) for i in range(30)]
    t = es.throughput(old_fast + recent, NOW, left=92)
    assert t.items_per_s == pytest.approx(1 / 0.35, rel=0.05)
    assert t.eta_s == pytest.approx(92 * 0.35, rel=0.05)  # about 32 s, where elapsed/finished said 11 s


def test_a_stall_slows_the_measured_rate_at_once():
    finished = [NOW - timedelta(seconds=60) - timedelta(seconds=i) for i in range(10)]  # then nothing for 60 s
    t = es.throughput(finished, NOW, left=10)
    assert t.items_per_s == pytest.approx(9 / 69, rel=0.01)
    assert t.eta_s > 60


def test_no_eta_before_a_few_items_finished_in_the_window():
    assert es.throughput([NOW - timedelta(seconds=1)], NOW, left=5).eta_s is None
    assert es.throughput([NOW - timedelta(minutes=5)] * 10, NOW, left=5).eta_s is None, "all too old"


# -- before a run --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "kw", "calls"),
    [
        ("dce-amc", {}, 1),
        ("dce-amc", {"amc": "llm"}, 2),
        ("dce-amc", {"rounds": 3}, 1 + 3 * 2),
        ("dce-amc", {"rounds": 2, "amc": "llm"}, 2 + 2 * 3),
        ("summ-nli", {"rounds": 3}, 1),
        ("sent-nli", {"window": 2}, 3),
        ("qg-qa", {"window": 2}, 6),
        ("evidence", {}, 0),
    ],
)
def test_calls_per_document(method, kw, calls):
    assert es.calls_per_document(method, n_sentences=5, **kw) == calls


@pytest.mark.parametrize(
    ("method", "kw"),
    [
        ("dce-amc", {"rounds": 2, "amc": "llm"}),
        ("summ-nli", {}),
        ("sent-nli", {"window": 3}),
        ("qg-qa", {"window": 2}),
        ("evidence", {}),
    ],
)
@pytest.mark.parametrize("max_chars", [None, 3000])
def test_an_estimate_over_many_documents_adds_up_each_documents_calls_and_tokens(method, kw, max_chars):
    """Each document's calls and prompt tokens, one by one as the definition reads, summed: what the arrays give."""
    rng = random.Random(7)
    sizes = [(rng.randint(0, 6000), rng.randint(0, 900), rng.randint(0, 12)) for _ in range(3000)]
    calls = tokens = largest = refused = 0
    for ref, cand, n_sent in sizes:
        if max_chars is not None and max(ref, cand) > max_chars:
            refused += 1
            continue
        n = es.calls_per_document(method, n_sentences=n_sent, **kw)
        per_call = math.ceil((ref + cand) / es.CHARS_PER_TOKEN) + es.template_tokens(method, amc=kw.get("amc", "rule"))
        calls, tokens = calls + n, tokens + n * per_call
        largest = max(largest, per_call if n else 0)
    e = es.document_estimate(REMOTE, es.Measured(0, None, None, None), sizes, method=method, max_chars=max_chars, **kw)
    assert (e.calls, e.input_tokens, e.largest_call_tokens, e.n_refused) == (calls, tokens, largest, refused)
    assert (refused > 0) == (max_chars is not None) and (calls > 0) == (method != "evidence")
    per_doc = es.calls_per_document(method, n_sentences=np.array([s[2] for s in sizes]), **kw)
    assert per_doc.tolist() == [es.calls_per_document(method, n_sentences=s[2], **kw) for s in sizes]


def test_an_estimate_over_no_documents_is_zero():
    e = es.document_estimate(REMOTE, es.Measured(0, None, None, None), [], method="dce-amc")
    assert (e.calls, e.input_tokens, e.largest_call_tokens, e.n_refused) == (0, 0, 0, 0)


def test_cost_needs_both_prices():
    priced = REMOTE.with_changes(price_input_per_million=0.15, price_output_per_million=0.60)
    assert es.cost(priced, 2_000_000, 500_000) == pytest.approx(0.30 + 0.30)
    assert es.cost(REMOTE, 2_000_000, 500_000) is None
    assert es.cost(REMOTE.with_changes(price_input_per_million=1.0), 1, 1) is None


def test_a_batch_estimate_gives_calls_tokens_time_and_cost():
    priced = REMOTE.with_changes(price_input_per_million=1.0, price_output_per_million=2.0)
    m = es.Measured(
        requests=40, seconds_per_request=2.0, prompt_tokens_per_request=900, completion_tokens_per_request=100
    )
    sizes = [(4000, 400, 4)] * 10  # ten documents of 1,100 tokens of text each
    e = es.document_estimate(priced, m, sizes, method="dce-amc", concurrency=4)
    assert e.calls == 10
    assert e.input_tokens == 10 * (1100 + es.template_tokens("dce-amc"))
    assert e.output_tokens == 10 * 100
    assert e.seconds == pytest.approx(10 * 2.0 / 4)
    assert e.cost_usd == pytest.approx((e.input_tokens * 1.0 + e.output_tokens * 2.0) / 1e6)
    text = e.summary()
    assert "10 calls" in text and "$0.02" in text and "5 s" in text and "40 earlier requests" in text


def test_a_tiny_cost_is_not_shown_as_nothing():
    priced = REMOTE.with_changes(price_input_per_million=2.5, price_output_per_million=10.0)
    e = es.document_estimate(priced, es.Measured(0, None, None, None), [(100, 100, 1)], method="summ-nli")
    assert 0 < e.cost_usd < 0.005 and "under $0.01" in e.summary() and "$0.00" not in e.summary()


def test_with_nothing_measured_the_time_is_not_guessed_and_no_price_says_so():
    e = es.document_estimate(REMOTE, es.Measured(0, None, None, None), [(400, 100, 1)], method="summ-nli")
    assert e.seconds is None and e.cost_usd is None
    assert e.output_tokens == es.ASSUMED_ANSWER_TOKENS
    assert "not measured" in e.summary() and "no price" in e.summary()


def test_improvement_rounds_make_the_estimate_an_upper_bound():
    m = es.Measured(0, None, None, None)
    assert es.document_estimate(REMOTE, m, [(10, 10, 1)], method="dce-amc", rounds=2).upper_bound
    assert "at most" in es.document_estimate(REMOTE, m, [(10, 10, 1)], method="dce-amc", rounds=2).summary()


def test_measured_reads_this_models_earlier_requests(engine):
    from services import runs
    from services.dcr import DCRConfig
    from tests.fakes import FakeOpenAIServer, toy_judge

    with FakeOpenAIServer(toy_judge(bad="47 million", fix="40 million")) as fake:
        b = BackendConfig(
            kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
        )
        assert es.measured(engine, b).requests == 0
        runs.start_run(engine, b, "It cost 40 million.", "It cost 47 million.", DCRConfig(max_rounds=0))
        got = es.measured(engine, b)
        assert got.requests >= 1 and got.seconds_per_request is not None
        assert es.measured(engine, b.with_changes(model="another")).requests == 0


def test_a_batchs_eta_reads_its_recent_finishes_from_the_database(engine):
    from sqlmodel import Session, select

    from db.models import BatchItem
    from services.dcr import DCRConfig
    from services.jobs import batches
    from tests.annotation_seed import make_dataset

    ds, _ = make_dataset(engine, [[f"Sentence {i}."] for i in range(8)], name="eta")
    bid = batches.create_batch(engine, dataset_id=ds, backend=BackendConfig(), cfg=DCRConfig(), concurrency=1)
    now = datetime.now(UTC)
    with Session(engine) as s:
        items = s.exec(select(BatchItem).where(BatchItem.batch_id == bid).order_by(BatchItem.id)).all()
        for k, it in enumerate(items[:5]):  # five finished 2 s apart, the last just now; three left
            it.status, it.updated_at = "done", now - timedelta(seconds=2 * (4 - k))
            s.add(it)
        s.commit()
    t = es.batch_throughput(engine, bid, left=3, now=now)
    assert t.n_recent == 5 and t.items_per_s == pytest.approx(4 / 8, rel=0.01)
    assert t.eta_s == pytest.approx(6.0, rel=0.01)


def test_the_databases_count_of_the_window_gives_the_eta_the_finish_times_give(engine):
    """The window is counted in SQL (a fast batch finishes tens of thousands of items in it): the same rate and ETA
    as `throughput` over every item's finish time, with items before the window, failed ones and open ones."""
    import random

    from sqlmodel import Session, select

    from db.models import BatchItem
    from services.dcr import DCRConfig
    from services.jobs import batches
    from tests.annotation_seed import make_dataset

    ds, _ = make_dataset(engine, [[f"Sentence {i}."] for i in range(40)], name="eta-sql")
    bid = batches.create_batch(engine, dataset_id=ds, backend=BackendConfig(), cfg=DCRConfig(), concurrency=1)
    now = datetime.now(UTC)
    rng = random.Random(7)
    finished = []
    with Session(engine) as s:
        for it in s.exec(select(BatchItem).where(BatchItem.batch_id == bid)).all():
            it.status = rng.choice(["done", "done", "failed", "pending", "running"])
            it.updated_at = now - timedelta(seconds=rng.uniform(0, 300))  # some before the 2-minute window
            if it.status in ("done", "failed"):
                finished.append(it.updated_at)
            s.add(it)
        s.commit()
    want = es.throughput(finished, now, left=9)
    got = es.batch_throughput(engine, bid, left=9, now=now)
    assert 0 < got.n_recent < len(finished), "the draw has finishes on both sides of the window"
    assert got.n_recent == want.n_recent
    assert got.items_per_s == pytest.approx(want.items_per_s, rel=1e-6)
    assert got.eta_s == pytest.approx(want.eta_s, rel=1e-6)


def test_the_offline_evidence_checker_is_estimated_as_no_model_call():
    """Zero calls reads as 'no model call', not as a time still to be measured and a model's (lack of) charge."""
    e = es.document_estimate(REMOTE, es.Measured(0, None, None, None), [(400, 100, 1)], method="evidence")
    assert e.calls == 0
    text = e.summary()
    assert "no model call" in text and "not measured" not in text and "price" not in text


def test_each_method_counts_its_own_prompt():
    """DCE, the paragraph evaluator and Summ-NLI make one call per document here, over the same texts: their
    estimates differ by their prompts, each measured on the method's template (placeholders taken out)."""
    import re

    from services.prompts import dcr as D
    from services.prompts import nli as N

    def own(*templates):
        return math.ceil(sum(len(re.sub(r"\{[\w ]+\}", "", t)) for t in templates) / es.CHARS_PER_TOKEN)

    sizes = [(4000, 400, 4)] * 10
    got = {
        m: es.document_estimate(REMOTE, es.Measured(0, None, None, None), sizes, method=m).input_tokens
        for m in ("dce-amc", "paragraph", "summ-nli")
    }
    assert got == {
        "dce-amc": 10 * (1100 + own(D.SUMMARIZATION_DCE.template)),
        "paragraph": 10 * (1100 + own(D.PARAGRAPH_DCE.template)),
        "summ-nli": 10 * (1100 + own(N.SUMM_NLI.template, N.JUDGEMENT_FORMAT.template)),
    }
    assert len(set(got.values())) == 3
