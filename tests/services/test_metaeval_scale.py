"""Meta-evaluation at scale: the same numbers from the faster computations, and a running batch's throttled stamp."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sqlalchemy import update
from sqlmodel import Session

from db.models import BatchItem
from services import metaeval, stats
from services.metaeval.common import numeric
from tests.metaeval_seed import Item, seed
from tests.support.metaeval import HAND, LABELLED, C

correlation_module = importlib.import_module("services.stats.correlation")


def _scipy_leave_group_out(x, y, group, g):
    """The definition: scipy's tau-b on the sample without each group."""
    return np.array([sps.kendalltau(x[group != k], y[group != k]).statistic for k in range(g)])


@pytest.mark.parametrize(("n", "vx", "vy"), [(6000, 6, 11), (400, 3, 2), (250, 250, 9)])
def test_kendall_without_each_group_equals_scipy_on_the_rest(n, vx, vy):
    rng = np.random.default_rng(n)
    x = rng.integers(0, vx, n) / (vx - 1)
    y = rng.integers(0, vy, n) + 2.0 * (x > 0.5)  # tied on both sides, and correlated
    g = 100
    group = rng.permutation(n) % g
    new = correlation_module._kendall_leave_group_out(x, y, group, g)
    np.testing.assert_allclose(new, _scipy_leave_group_out(x, y, group, g), rtol=0, atol=1e-12)


def test_kendall_without_a_group_is_undefined_where_the_rest_does_not_vary():
    x = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    group = np.array([0, 0, 1, 1, 1, 2])  # without group 1, x is constant: tau undefined
    new = correlation_module._kendall_leave_group_out(x, y, group, 3)
    old = _scipy_leave_group_out(x, y, group, 3)
    assert np.isnan(new[1]) and np.isnan(old[1])
    np.testing.assert_allclose(new[[0, 2]], old[[0, 2]], atol=1e-12)


def test_continuous_values_fall_back_to_scipy_and_the_interval_is_the_same(monkeypatch):
    rng = np.random.default_rng(3)
    n = 6000  # above EXACT_RESAMPLE_MAX: the jackknife interval
    x = rng.integers(0, 6, n) / 5.0
    y = x + rng.integers(0, 9, n)
    new = metaeval.correlations(pd.DataFrame({"score": x, "human_score": y, "human_label": np.nan}), n_boot=1000)
    monkeypatch.setattr(correlation_module, "KENDALL_TABLE_CELLS", 0)  # the tables refused: scipy once a group
    old = metaeval.correlations(pd.DataFrame({"score": x, "human_score": y, "human_label": np.nan}), n_boot=1000)
    kn, ko = new.correlations[2], old.correlations[2]
    assert kn.method == "kendall" and kn.ci_low is not None
    assert kn.r == ko.r
    assert kn.ci_low == pytest.approx(ko.ci_low, abs=1e-12) and kn.ci_high == pytest.approx(ko.ci_high, abs=1e-12)


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    score = rng.integers(0, 6, n) / 5.0
    human = np.clip(score + rng.normal(0, 0.3, n), 0, 1)
    return pd.DataFrame(
        {
            "item_id": np.arange(1, n + 1),
            "status": "done",
            "score": score,
            "human_score": human,
            "human_label": (human > 0.6).astype(float),
        }
    )


@pytest.mark.parametrize(("n", "n_boot"), [(300, 200), (6000, 1000), (300, 0)])
def test_the_baselines_model_row_taken_from_the_correlations_equals_the_one_computed_anew(n, n_boot):
    df = _frame(n)
    values = pd.DataFrame({"rouge2_precision": np.linspace(0, 1, n)}, index=df["item_id"])
    corr = metaeval.correlations(df, seed=7, n_boot=n_boot)
    new = metaeval.baseline_table(df, values, model_label="m", seed=7, n_boot=n_boot, model=corr)
    old = metaeval.baseline_table(df, values, model_label="m", seed=7, n_boot=n_boot)
    pd.testing.assert_frame_equal(new, old)


def test_a_model_row_of_other_settings_is_refused():
    df = _frame(50)
    corr = metaeval.correlations(df, seed=7, n_boot=0)
    with pytest.raises(ValueError, match="other items or settings"):
        metaeval.baseline_table(df, pd.DataFrame(), model_label="m", seed=7, n_boot=200, model=corr)


def test_each_part_of_the_estimates_equals_the_whole_computation(engine):
    _, bid = seed(engine, LABELLED + HAND)
    data = metaeval.load_batch(engine, bid)
    whole = metaeval.estimates(data, seed=3, n_boot=200)
    for part in metaeval.PARTS:
        alone = metaeval.estimates(data, seed=3, n_boot=200, parts=(part,))
        for other in metaeval.PARTS:
            got, want = getattr(alone, other), getattr(whole, other)
            if other != part:
                assert got is None
            elif isinstance(want, pd.DataFrame):
                pd.testing.assert_frame_equal(got, want)
            else:
                assert got == want
    assert metaeval.estimates(data, parts=()).correlations is None
    with pytest.raises(ValueError, match="unknown parts"):
        metaeval.estimates(data, parts=("alpha",))


def test_large_batches_are_estimated_by_the_linear_forms_not_by_the_resamples(engine):
    _, bid = seed(engine, LABELLED + HAND)
    data = metaeval.load_batch(engine, bid, sentences=False)
    big = _frame(50_000)
    large = metaeval.BatchData(**{**data.__dict__, "items": big.assign(n_sentences=5)})
    # 50,000 items: the jackknife and DeLong forms, whatever the resamples (the page computes them in place)
    assert metaeval.bootstrap_seconds(large, 1000, parts=("correlations",)) < 1.5
    assert metaeval.bootstrap_seconds(large, 2000, parts=("correlations",)) == metaeval.bootstrap_seconds(
        large, 1000, parts=("correlations",)
    )
    # 5,000 items and below: resampled item by item, so the time grows with the resamples
    small = metaeval.BatchData(**{**data.__dict__, "items": big.head(4000).assign(n_sentences=5)})
    assert metaeval.bootstrap_seconds(small, 2000, parts=("correlations",)) == pytest.approx(
        2 * metaeval.bootstrap_seconds(small, 1000, parts=("correlations",))
    )
    assert metaeval.bootstrap_seconds(large, 1000, parts=()) == 0.0
    # few-valued scores (a share of five sentences against a majority of three) are counted into tables
    thirds = big.head(4000).assign(human_score=lambda d: (d["human_score"] * 3).round() / 3, n_sentences=5)
    few = metaeval.BatchData(**{**data.__dict__, "items": thirds})
    assert stats.tabulated(numeric(few.done["score"]), numeric(few.done["human_score"]))
    assert metaeval.bootstrap_seconds(few, 1000, parts=("correlations",)) < 1.5  # in the page, no child process
    assert (
        metaeval.bootstrap_seconds(few, 1000, parts=("correlations",))
        < metaeval.bootstrap_seconds(small, 1000, parts=("correlations",)) / 5
    )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _finish_one(engine, bid: int) -> None:
    with Session(engine) as s:
        item = s.exec(
            BatchItem.__table__.select().where(BatchItem.batch_id == bid, BatchItem.status == "pending").limit(1)
        ).first()
        s.exec(update(BatchItem).where(BatchItem.id == item.id).values(status="done", score=1.0))
        s.commit()


def test_a_running_batch_keeps_its_stamp_for_a_while_and_a_finished_one_never(engine):
    items = [*HAND[:2], Item([[C]], status="pending"), Item([[C]], status="pending")]
    _, bid = seed(engine, items, status="running")
    clock = Clock()
    throttle = metaeval.StampThrottle(30.0, clock=clock)
    first = throttle.stamp(engine, bid, running=True)
    _finish_one(engine, bid)
    clock.now += 29.0
    assert throttle.stamp(engine, bid, running=True) == first  # within 30 s: the cached figures stand
    assert throttle.stamp(engine, bid, running=False) != first  # not running: always the current stamp
    assert throttle.stamp(engine, bid, running=False) == metaeval.batch_stamp(engine, bid)
    second = throttle.stamp(engine, bid, running=True)
    _finish_one(engine, bid)
    clock.now += 30.0
    third = throttle.stamp(engine, bid, running=True)
    assert third != second and third == metaeval.batch_stamp(engine, bid)


def test_the_data_says_when_it_was_read(engine):
    _, bid = seed(engine, HAND)
    before = pd.Timestamp.now(tz="UTC")
    data = metaeval.load_batch(engine, bid, sentences=False)
    assert data.loaded_at is not None and before <= pd.Timestamp(data.loaded_at) <= pd.Timestamp.now(tz="UTC")
    assert metaeval.add_sentences(engine, data).loaded_at == data.loaded_at


def test_a_batchs_baseline_values_read_by_a_join_equal_those_read_by_ids(engine):
    from db import metaeval as db

    _, bid = seed(engine, HAND)
    data = metaeval.load_batch(engine, bid, sentences=False)
    ids = data.done["item_id"].astype(int).tolist()
    with Session(engine) as s:
        db.add_baseline_values(
            session=s,
            rows=[
                {"item_id": ids[0], "metric": "rouge2_precision", "value": 0.25},
                {"item_id": ids[0], "metric": "rouge2_precision", "value": 0.5},  # a later duplicate wins
                {"item_id": ids[2], "metric": "rougeL_precision", "value": 0.75},
                {"item_id": ids[3], "metric": "not a metric", "value": 1.0},
            ],
        )
        s.commit()
    by_join = metaeval.cached_baselines(engine, ids[1:], batch_id=bid)
    by_ids = metaeval.cached_baselines(engine, ids[1:])
    pd.testing.assert_frame_equal(by_join, by_ids)
    full = metaeval.cached_baselines(engine, ids, batch_id=bid)
    assert full.loc[ids[0], "rouge2_precision"] == 0.5 and full.loc[ids[2], "rougeL_precision"] == 0.75
    pd.testing.assert_frame_equal(full, metaeval.cached_baselines(engine, ids))


def test_annotator_agreement_reads_the_results_of_labelled_items_only_with_the_same_outcome(engine, monkeypatch):
    from db import annotations as queries
    from services import annotations as an
    from tests.services.test_annotations import hand_made

    ds, items, bid = hand_made(engine)
    seen: list[list[int] | None] = []
    real = queries.done_results

    def recording(*, session, batch_id, item_ids=None):
        seen.append(None if item_ids is None else list(item_ids))
        return real(session=session, batch_id=batch_id, item_ids=item_ids)

    monkeypatch.setattr(queries, "done_results", recording)
    new = an.agreement(engine, ds, batch_ids=[bid], n_boot=200)
    new_rows = an.disagreements(engine, ds, batch_ids=[bid])
    assert seen and all(ids is not None and set(ids) <= set(items) for ids in seen)
    monkeypatch.setattr(
        queries, "done_results", lambda *, session, batch_id, item_ids=None: real(session=session, batch_id=batch_id)
    )  # every finished item, as before
    old = an.agreement(engine, ds, batch_ids=[bid], n_boot=200)
    assert new == old
    pd.testing.assert_frame_equal(new_rows, an.disagreements(engine, ds, batch_ids=[bid]))


def test_annotator_agreement_without_labels_reads_no_results(engine, monkeypatch):
    from db import annotations as queries
    from services import annotations as an

    ds, bid = seed(engine, HAND)

    def refuse(**kwargs):
        raise AssertionError("no label: nothing to compare the batch with")

    monkeypatch.setattr(queries, "done_results", refuse)
    monkeypatch.setattr(queries, "sentence_counts", refuse)
    res = an.agreement(engine, ds, batch_ids=[bid])
    assert res["n_units"] == 0 and res["among_annotators"].alpha is None
