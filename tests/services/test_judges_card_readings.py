"""The judge card's two readings of its rates: live (a confidence sequence, valid at every number of labels at
once) and planned (the fixed-sample interval, valid read once), from the same functions as the comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from services.errors import InputError
from services.judges import card_from_frames
from services.judges.card import JudgeInfo
from services.judges.estimate import classical, rates
from services.stats import sequential


def _frames(n: int, n_labelled: int, rate: float, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """n items with the truth drawn at `rate`, the first n_labelled labelled, an informative judge."""
    rng = np.random.default_rng(seed)
    truth = rng.binomial(1, rate, n).astype(float)
    ids = np.arange(n)
    label = np.where(ids < n_labelled, truth, np.nan)
    human = pd.DataFrame(
        {"item_id": ids, "idx": ids, "external_id": ids.astype(str), "label": label, "hscore": np.nan}
        | {"source": "imported"}
    )
    score = np.clip(truth * 0.6 + 0.2 + rng.normal(0, 0.15, n), 0, 1)
    judge = pd.DataFrame(
        {"item_id": ids, "status": "done", "score": score, "prediction": score, "verdict": (score >= 0.5) * 1.0}
        | {"n_sentences": 3, "n_unknown": 0, "calls": 1, "cache_hits": 0, "prompt_tokens": 10}
        | {"completion_tokens": 5, "latency_ms": 1.0}
    )
    return judge, human


@pytest.mark.parametrize(("n_labelled", "rate"), [(20, 0.3), (80, 0.5), (150, 0.8)])
def test_the_live_interval_holds_the_planned_point_and_is_wider_at_the_same_n(n_labelled, rate):
    judge, human = _frames(400, n_labelled, rate, seed=n_labelled)
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human, n_boot=50)
    live, planned = card.rates.read("live"), card.rates.read("planned")
    assert planned == (card.rates.classical, card.rates.ppi)  # the planned reading is today's intervals
    for lv, pl in zip(live, planned, strict=True):
        assert lv.n == pl.n == n_labelled and lv.estimate == pytest.approx(pl.estimate)
        assert lv.ci_low <= pl.estimate <= lv.ci_high
        assert lv.width > pl.width
    assert live[0].method == "beta-binomial mixture" and planned[0].method == "exact"
    assert card.as_dict()["reading"]["name"] == "live"
    assert card.as_dict("planned")["reading"]["name"] == "planned"
    assert card.as_dict("planned")["classical"]["ci"] == [planned[0].ci_low, planned[0].ci_high]


def test_the_live_classical_interval_is_the_beta_binomial_mixture_of_the_labels():
    y = np.random.default_rng(3).binomial(1, 0.4, 60).astype(float)
    for n in (2, 7, 30, 60):
        r = rates(y[:n], np.full(n, 0.5), np.full(10, 0.5))
        lo, hi = sequential.binary_cs(int(y[:n].sum()), n, alpha=0.05)
        assert (r.live_classical.ci_low, r.live_classical.ci_high) == pytest.approx((float(lo), float(hi)))
        assert r.classical == classical(y[:n])


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_the_live_classical_interval_covers_the_rate_at_every_n_at_once(rate):
    """Seeded: 300 runs of 100 labels; the live interval must hold the rate at every n from 2 to 100 in at
    least 95% of runs (less 2 standard errors of the simulation), where the planned one read after every label
    misses it somewhere far more often."""
    runs, n_max, alpha = 300, 100, 0.05
    y = np.random.default_rng(int(rate * 100)).binomial(1, rate, (runs, n_max))
    ns = np.arange(2, n_max + 1)
    k = np.cumsum(y, axis=1)[:, 1:]
    lo, hi = sequential.binary_cs(k, np.broadcast_to(ns, k.shape), alpha=alpha)
    # The card's own function at a few of these points: the same interval.
    for run, n in ((0, 2), (1, 37), (2, 100)):
        e = rates(y[run, :n].astype(float), np.full(n, 0.5), np.zeros(0)).live_classical
        assert (e.ci_low, e.ci_high) == pytest.approx((lo[run, n - 2], hi[run, n - 2]))
    covered = ((lo <= rate) & (rate <= hi)).all(axis=1).mean()
    assert covered >= 1 - alpha - 2 * np.sqrt(alpha * (1 - alpha) / runs)
    from services.stats import binomial

    fixed = np.array(
        [[binomial.clopper_pearson(int(k[r, j]), int(n), 1 - alpha) for j, n in enumerate(ns)] for r in range(60)]
    )
    fixed_covered = ((fixed[..., 0] <= rate) & (rate <= fixed[..., 1])).all(axis=1).mean()
    assert fixed_covered < covered


def test_an_unknown_reading_is_refused_with_its_name():
    judge, human = _frames(40, 20, 0.5)
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human, n_boot=50)
    with pytest.raises(InputError, match="live or planned"):
        card.as_dict("often")


def test_a_budget_names_the_planned_reading():
    judge, human = _frames(40, 20, 0.5)
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human, n_boot=50, budget=20)
    assert card.as_dict("planned")["reading"]["budget"] == 20
    assert card.as_dict("live")["reading"]["budget"] is None
