"""Agreement at small n and the levels of every judge interval (issue 32, items 2 and 6).

Each level test fails when one level is wrong: the Pearson gate of PPI tested at alpha / 2, the kappa interval
at another level, the unknown and failure rates' Wilson interval at alpha instead of the confidence.
"""

from __future__ import annotations

import warnings

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


@pytest.mark.parametrize("n_pos", [3, 4])
def test_pearson_says_too_few_below_the_same_minimum_as_the_other_measures(n_pos):
    """The issue's card: Pearson's r 1.0 [1.0, 1.0] from 7 or 8 items, where balanced accuracy and kappa said
    "too few". r needs MIN_PER_CLASS labelled items of each class too, with labels or with human scores."""
    labels = np.r_[np.ones(n_pos), np.zeros(4)]
    for target in (None, labels * 0.9):  # the labels, or human scores (0.9 consistent, 0 not)
        a = agreement(labels, labels, labels, target)
        assert a.pearson.value is None and a.pearson.ci_low is None and a.pearson.n == n_pos + 4
        assert a.pearson.note == a.kappa.note.replace("Kappa", "Pearson's r").replace("decided ", "")


def test_pearson_counts_a_human_score_of_one_half_as_consistent():
    """Five human scores of exactly 0.5 are five consistent items: r is shown."""
    hs = np.r_[np.full(5, 0.5), np.zeros(5)]
    rng = np.random.default_rng(0)
    scores = hs + rng.uniform(0, 0.1, 10)
    m = agreement(scores, np.ones(10), (hs >= 0.5).astype(float), hs).pearson
    res = sps.pearsonr(scores, hs)
    iv = res.confidence_interval(0.95)
    assert (m.value, m.ci_low, m.ci_high) == pytest.approx((res.statistic, iv.low, iv.high))


def test_pearson_from_five_of_each_class_with_its_fisher_interval_and_none_at_r_1():
    labels = np.r_[np.ones(5), np.zeros(5)]
    scores = np.array([0.9, 0.8, 0.6, 0.7, 0.3, 0.2, 0.4, 0.1, 0.5, 0.35])
    for ci in (0.95, 0.8):
        m = agreement(scores, labels, labels, ci=ci).pearson
        r = np.corrcoef(scores, labels)[0, 1]
        z = sps.norm.ppf(0.5 + ci / 2)
        lo, hi = np.tanh(np.arctanh(r) - z / np.sqrt(10 - 3)), np.tanh(np.arctanh(r) + z / np.sqrt(10 - 3))
        assert (m.value, m.n, m.ci_low, m.ci_high) == pytest.approx((r, 10, lo, hi))
    perfect = agreement(labels, labels, labels).pearson
    assert perfect.value == 1.0 and perfect.ci_low is None and perfect.ci_high is None
    assert perfect.note == "No interval: r is 1 or -1 on these items, where Fisher's z has none."
    reversed_ = agreement(1 - labels, labels, labels).pearson
    assert reversed_.value == -1.0 and reversed_.ci_low is None
    flat = agreement(np.full(10, 0.7), labels, labels).pearson
    assert flat.value is None and flat.note == "Pearson's r is not defined: the judge's scores are all the same."


def test_kappas_note_says_why_there_is_no_interval():
    """With both classes among the labels (the minimum sees to it), kappa's asymptotic standard error is 0 when
    the judge agrees with every label, disagrees with every one, or gives one verdict only: the note says which,
    not "one class only" of both sides."""
    six, five = np.r_[np.ones(6), np.zeros(5)], np.r_[np.ones(5), np.zeros(5)]
    cases = {
        "the judge agrees with every label": (six, six),
        "the judge disagrees with every label": (five, 1 - five),  # kappa -1: balanced classes
        "the judge gives one verdict only (consistent)": (six, np.ones(11)),
        "the judge gives one verdict only (inconsistent)": (six, np.zeros(11)),
    }
    for why, (labels, verdicts) in cases.items():
        k = agreement(verdicts, verdicts, labels).kappa
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore")  # its standard error is the root of a variance of 0 or -1e-17
            res = cohens_kappa(to_table(np.c_[labels, verdicts], bins=[0, 1, 2])[0])
        assert k.value == pytest.approx(res.kappa) and k.ci_low is None and k.ci_high is None
        assert k.note == f"No interval: {why}, where kappa's asymptotic standard error is 0."
    k = agreement(1 - six, 1 - six, six).kappa  # disagreeing with every label, classes unequal: an interval
    assert k.value < -0.9 and k.ci_low is not None and k.note is None


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
    # the 37 items that did not fail have 148 sentences, 3 of them unknown (items 3, 4, 5)
    assert (unk.value, unk.n) == (3 / 148, 148)
    assert (unk.ci_low, unk.ci_high) == pytest.approx(proportion_confint(3, 148, alpha=alpha, method="wilson"))


def test_the_unknown_rate_counts_judged_sentences_only():
    """The issue's card: a failed item stores every sentence as unknown; counted, the unknown rate equals the
    failure rate (0.35) when no judged sentence is unknown. It is over the sentences of the items judged."""
    judge, human = _frames(40, failed=14, unknown=0)
    judge["n_unknown"] = np.where(judge["status"] == "failed", judge["n_sentences"], 0)
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human)
    assert card.failure_rate.value == pytest.approx(0.35)
    assert (card.unknown_rate.value, card.unknown_rate.n) == (0.0, 26 * 4)
    judge.loc[judge["item_id"] == 20, "n_unknown"] = 2  # a judged item with 2 of its 4 sentences unknown
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human)
    assert (card.unknown_rate.value, card.unknown_rate.n) == (2 / 104, 104)
    judge["status"] = np.where(judge["item_id"] >= 30, "pending", judge["status"])  # unfinished: not judged yet
    card = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human)
    assert (card.unknown_rate.value, card.unknown_rate.n) == (2 / 64, 64)


def test_the_raw_rate_says_how_many_items_were_judged_abstained_and_failed():
    judge, human = _frames(40, failed=3, unknown=6)
    d = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human).as_dict()
    assert (d["n_judged"], d["n_abstained"], d["n_failed"]) == (34, 3, 3)
    assert d["n_judged"] + d["n_abstained"] + d["n_failed"] == d["n"]
    assert d["judge_rate"] == pytest.approx(np.mean(np.arange(6, 40) % 2))
