"""Methods compared over one dataset: balanced accuracy, Pearson, length buckets, error types, repeats, cost."""

from __future__ import annotations

import pytest

from services import dcr, metaeval
from services.config import BackendConfig
from services.jobs import batches
from tests.fakes import FakeOpenAIServer
from tests.nli_fakes import nli_judge
from tests.support.metaeval_methods import BAD, seed
from tests.support.waiting import HEALTHY_TIMEOUT


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=nli_judge(bad=BAD)) as fake:
        yield fake


def test_methods_side_by_side_with_lengths_error_types_and_repeats(engine, server):
    ds = seed(engine)
    backend = BackendConfig(
        kind="openai", base_url=server.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
    )
    ids = []
    for method in ("dce-amc", "summ-nli", "sent-nli"):
        ids.append(batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method=method)))
    ids += batches.create_repeats(engine, repeats=2, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="qg-qa"))
    for b in ids:
        batches.process_batch(engine, b)
    cmp = metaeval.compare_method_batches(engine, ids)
    t = cmp.table.set_index("batch")
    assert list(t["method"]) == ["DCE-AMC", "Summ-NLI", "Sent-NLI (w=1)", "QG-QA (w=1) · run 1", "QG-QA (w=1) · run 2"]
    assert list(t["balanced_accuracy"]) == [pytest.approx(1.0)] * 5  # the fake judge is always right
    assert t.loc[ids[1], "pearson"] == pytest.approx(1.0)
    assert t.loc[ids[1], "calls_per_doc"] == pytest.approx(1.0)
    # Sent-NLI asks once per summary sentence (1..8, 4.5 on average) less the repeated "Work starts." the cache serves
    assert 1.0 < t.loc[ids[2], "calls_per_doc"] <= 4.5
    assert t.loc[ids[1], "tokens_per_doc"] > 0
    # Table 4: two runs of one configuration; identical here, so the spread is 0
    assert list(cmp.repeats["method"]) == ["QG-QA (w=1)"] and cmp.repeats["runs"].iloc[0] == 2
    assert cmp.repeats["balanced_accuracy_std"].iloc[0] == pytest.approx(0.0)
    # Figure 2: equal-count buckets by document and summary length, accuracy in each
    lens = cmp.lengths[cmp.lengths["batch"] == ids[1]]
    assert set(lens["kind"]) == {"document length", "summary length"}
    assert lens.groupby("kind")["n"].sum().tolist() == [8, 8]
    assert (lens["accuracy"] == 1.0).all()
    # Table 5: recall per error type among the inconsistent items, after "None" (the consistent items)
    types = cmp.error_types[cmp.error_types["batch"] == ids[1]].set_index("error_type")
    assert types["n"].to_dict() == {"None": 4, "entity": 2, "number": 2} and (types["recall"] == 1.0).all()
    assert list(types.index)[0] == "None"


def test_accuracy_by_bucket_counts_wrong_verdicts(engine, server):
    ds = seed(engine, 4)
    backend = BackendConfig(
        kind="openai", base_url=server.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
    )
    server.responder = nli_judge(bad="never in any text")  # says consistent to everything
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"))
    batches.process_batch(engine, bid)
    cmp = metaeval.compare_method_batches(engine, [bid, 999])
    row = cmp.table.iloc[0]
    assert row["balanced_accuracy"] == pytest.approx(0.5) and row["recall"] == pytest.approx(0.0)
    doc = cmp.lengths[cmp.lengths["kind"] == "document length"]
    assert doc["accuracy"].tolist() == [0.0, 1.0, 0.0, 1.0]  # one item per bucket, alternating wrong / right
    assert any("999" in n for n in cmp.notes)
