"""Agreement at small n and the levels of every judge interval (issue 32, items 2 and 6).

Each level test fails when one level is wrong: the Pearson gate of PPI tested at alpha / 2, the kappa interval
at another level, the unknown and failure rates' Wilson interval at alpha instead of the confidence.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.inter_rater import cohens_kappa, to_table
from statsmodels.stats.proportion import proportion_confint

from services.judges import agreement, card_from_frames, ppi
from services.judges.agreement import MIN_PER_CLASS, auroc_interval
from services.judges.card import JudgeInfo
from services.judges.estimate import informative


# -- agreement at small n ------------------------------------------------------------------------------------
def test_seven_perfect_items_give_no_number_but_say_why():
    """The issue's card: balanced accuracy 1.0 [1.0, 1.0] and kappa 1.0 from 7 decided items."""
    labels = np.array([1, 1, 1, 1, 0, 0, 0], float)
    a = agreement(labels * 0.8 + 0.1, labels, labels)
    for m in (a.balanced_accuracy, a.auroc, a.kappa):
        assert m.value is None and m.ci_low is None
        assert f"at least {MIN_PER_CLASS}" in m.note and "3 inconsistent" in m.note


def test_from_five_of_each_class_a_perfect_judge_gets_an_interval_with_width():
    labels = np.r_[np.ones(5), np.zeros(5)]
    a = agreement(labels * 0.8 + 0.1, labels, labels)
    assert a.balanced_accuracy.value == 1.0 and a.balanced_accuracy.ci_low < 0.8
    assert a.auroc.value == 1.0 and a.auroc.ci_high == 1.0 and a.auroc.ci_low < 0.9
    assert a.kappa.value == 1.0


def test_abstentions_do_not_count_as_decided_items():
    labels = np.r_[np.ones(6), np.zeros(6)]
    verdicts = labels.copy()
    verdicts[:2] = np.nan  # two consistent items undecided: 4 decided consistent ones remain
    a = agreement(labels * 0.8 + 0.1, verdicts, labels)
    assert a.balanced_accuracy.value is None and "4 consistent and 6 inconsistent" in a.balanced_accuracy.note
    assert a.auroc.value == 1.0  # the scores exist for all 12


def test_balanced_accuracy_interval_is_the_mean_of_exact_intervals_at_root_level():
    labels = np.r_[np.ones(12), np.zeros(9)]
    verdicts = np.r_[np.ones(9), np.zeros(3), np.zeros(7), np.ones(2)]
    for ci in (0.95, 0.8):
        m = agreement(verdicts, verdicts, labels, ci=ci).balanced_accuracy
        lo1, hi1 = proportion_confint(9, 12, alpha=1 - np.sqrt(ci), method="beta")
        lo0, hi0 = proportion_confint(7, 9, alpha=1 - np.sqrt(ci), method="beta")
        assert m.value == pytest.approx((9 / 12 + 7 / 9) / 2)
        assert (m.ci_low, m.ci_high) == pytest.approx(((lo1 + lo0) / 2, (hi1 + hi0) / 2))


def test_auroc_interval_is_newcombes_and_covers_at_small_n():
    """Newcombe (2006) method 5: its ends solve (auc - t)^2 = z^2 V(t); binormal scores, 400 draws a cell."""
    lo, hi = auroc_interval(0.8, 10, 10, ci=0.95)
    big = (10 + 10) / 2 - 1
    for t in (lo, hi):
        v = t * (1 - t) / 100 * (1 + (big - 1) * ((1 - t) / (2 - t) + t / (1 + t)))
        assert (0.8 - t) ** 2 == pytest.approx(sps.norm.ppf(0.975) ** 2 * v)
    assert auroc_interval(0.8, 10, 10, ci=0.9)[0] > lo
    for m, n, d in [(5, 5, 1.0), (5, 25, 1.5), (10, 10, 0.5)]:
        truth, rng, hits = sps.norm.cdf(d / np.sqrt(2)), np.random.default_rng(m * n), 0
        for _ in range(400):
            auc = (rng.normal(d, 1, m)[:, None] > rng.normal(0, 1, n)[None, :]).mean()
            lo, hi = auroc_interval(float(auc), m, n, ci=0.95)
            hits += lo <= truth <= hi
        assert hits / 400 >= 0.93, (m, n, d, hits)


# -- the levels ----------------------------------------------------------------------------------------------
def test_kappa_interval_is_kappa_plus_minus_z_at_the_cards_level_times_the_asymptotic_se():
    rng = np.random.default_rng(4)
    labels = (rng.random(60) < 0.5).astype(int)
    verdicts = np.where(rng.random(60) < 0.8, labels, 1 - labels)
    res = cohens_kappa(to_table(np.c_[labels, verdicts], bins=[0, 1, 2])[0])
    for ci in (0.95, 0.8):
        k = agreement(verdicts.astype(float), verdicts, labels, ci=ci).kappa
        z = sps.norm.ppf(1 - (1 - ci) / 2)
        assert k.value == pytest.approx(res.kappa)
        assert (k.ci_low, k.ci_high) == pytest.approx((res.kappa - z * res.std_kappa, res.kappa + z * res.std_kappa))


def _band_draw() -> tuple[np.ndarray, np.ndarray]:
    """Labels (20 of each class) and scores whose Pearson p-value lies between 0.025 and 0.05."""
    for seed in range(500):
        rng = np.random.default_rng(seed)
        y = np.r_[np.ones(20), np.zeros(20)]
        yhat = np.clip(0.5 + 0.08 * (y - 0.5) + rng.normal(0, 0.2, 40), 0, 1)
        res = sps.pearsonr(yhat, y)
        if 0.025 < res.pvalue < 0.05 and res.statistic > 0:
            return y, yhat
    raise AssertionError("no draw in the band")


def test_the_pearson_gate_tests_at_alpha_not_half_of_it():
    y, yhat = _band_draw()
    assert informative(y, yhat, alpha=0.05) and not informative(y, yhat, alpha=0.025)
    e = ppi(y, yhat, np.random.default_rng(1).random(300), alpha=0.05)
    assert e.method == "ppi++" and e.note is None


def _frames(n: int, failed: int, unknown: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    ids = np.arange(n)
    human = pd.DataFrame(
        {"item_id": ids, "idx": ids, "external_id": ids.astype(str), "label": (ids % 2).astype(float)}
        | {"hscore": np.nan, "source": "imported"}
    )
    status = np.where(ids < failed, "failed", "done")
    judge = pd.DataFrame(
        {
            "item_id": ids,
            "status": status,
            "score": np.where(ids < failed, np.nan, (ids % 2) * 0.8 + 0.1),
            "n_sentences": 4,
            "n_unknown": np.where(ids < unknown, 1, 0),
            "calls": 1,
            "cache_hits": 0,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "latency_ms": 1.0,
        }
    )
    judge["prediction"] = judge["score"]
    judge["verdict"] = np.where((ids < failed) | (ids < unknown), np.nan, ids % 2)
    return judge, human


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_unknown_and_failure_rates_have_wilson_intervals_at_the_cards_confidence(alpha):
    judge, human = _frames(40, failed=3, unknown=6)
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human, alpha=alpha)
    fail, unk = card.failure_rate, card.unknown_rate
    assert (fail.value, fail.n) == (3 / 40, 40)
    assert (fail.ci_low, fail.ci_high) == pytest.approx(proportion_confint(3, 40, alpha=alpha, method="wilson"))
    assert (unk.value, unk.n) == (6 / 160, 160)
    assert (unk.ci_low, unk.ci_high) == pytest.approx(proportion_confint(6, 160, alpha=alpha, method="wilson"))


def test_the_raw_rate_says_how_many_items_were_judged_abstained_and_failed():
    judge, human = _frames(40, failed=3, unknown=6)
    d = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human).as_dict()
    assert (d["n_judged"], d["n_abstained"], d["n_failed"]) == (34, 3, 3)
    assert d["n_judged"] + d["n_abstained"] + d["n_failed"] == d["n"]
    assert d["judge_rate"] == pytest.approx(np.mean(np.arange(6, 40) % 2))
