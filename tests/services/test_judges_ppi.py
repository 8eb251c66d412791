"""PPI against the classical interval on simulated data with a known true rate (issue 27's standards).

500 seeded draws each: the PPI interval covers the true rate at least 93% of the time; with an informative
judge it is narrower than the classical interval; with a pure-noise judge it is no narrower.
"""

from __future__ import annotations

import numpy as np
import pytest

from services.judges import classical, ppi

DRAWS, N_LABELLED, N_UNLABELLED, RATE = 500, 60, 1000, 0.4  # 60 labels: 15 of each class in 99.7% of draws


def _draw(seed: int, judge: str):
    rng = np.random.default_rng(seed)
    y = (rng.random(N_LABELLED + N_UNLABELLED) < RATE).astype(float)
    if judge == "informative":
        yhat = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, y.size), 0, 1)
    elif judge == "biased":  # informative but says "consistent" far too often
        yhat = np.clip(0.5 + 0.5 * y + rng.normal(0, 0.1, y.size), 0, 1)
    else:
        yhat = rng.random(y.size)
    return y[:N_LABELLED], yhat[:N_LABELLED], yhat[N_LABELLED:]


@pytest.fixture(scope="module")
def runs() -> dict[str, list[tuple]]:
    out = {}
    for judge in ("informative", "biased", "noise"):
        out[judge] = []
        for seed in range(DRAWS):
            y, yl, yu = _draw(seed, judge)
            out[judge].append((ppi(y, yl, yu, alpha=0.05), classical(y, alpha=0.05)))
    return out


@pytest.mark.parametrize("judge", ["informative", "biased", "noise"])
def test_ppi_covers_the_true_rate_at_least_93_percent_of_500_draws(runs, judge):
    covered = sum(p.ci_low <= RATE <= p.ci_high for p, _ in runs[judge])
    assert covered / DRAWS >= 0.93, f"{judge}: {covered} of {DRAWS}"


@pytest.mark.parametrize("judge", ["informative", "biased"])
def test_with_an_informative_judge_ppi_is_narrower_than_classical(runs, judge):
    ratio = np.array([p.width / c.width for p, c in runs[judge]])
    assert ratio.mean() < 0.8
    assert (ratio < 1).mean() >= 0.95


def test_with_a_pure_noise_judge_ppi_is_no_narrower(runs):
    ratio = np.array([p.width / c.width for p, c in runs["noise"]])
    assert ratio.mean() >= 0.995
    assert (ratio >= 1 - 1e-9).mean() >= 0.9, "PPI fell back to the labels in most noise draws"


def test_a_judge_biased_towards_consistent_is_corrected():
    """The raw rate of the biased judge is far off; PPI's estimate is not."""
    y, yl, yu = _draw(7, "biased")
    p = ppi(y, yl, yu)
    assert abs(np.concatenate([yl, yu]).mean() - RATE) > 0.2
    assert abs(p.estimate - RATE) < 0.1


def test_continuous_scores_work_too():
    rng = np.random.default_rng(3)
    score = rng.beta(2, 3, 1050)  # the true mean is 0.4
    pred = np.clip(score + rng.normal(0, 0.05, score.size), 0, 1)
    p, c = ppi(score[:50], pred[:50], pred[50:]), classical(score[:50])
    assert p.ci_low <= 0.4 <= p.ci_high
    assert p.width < c.width / 2


def test_too_few_labels_give_no_interval_and_say_why():
    p = ppi(np.array([1.0]), np.array([0.9]), np.array([0.5, 0.4]))
    assert p.estimate is None and "at least 2" in p.note


def test_all_labelled_is_the_classical_estimate():
    y = np.array([1.0, 0.0, 1.0, 1.0])
    p, c = ppi(y, y, np.array([])), classical(y)
    assert (p.estimate, p.ci_low, p.ci_high) == (c.estimate, c.ci_low, c.ci_high)


def test_unanimous_labels_never_give_a_zero_width_interval():
    """Ten labels all consistent: the normal interval would be [1, 1]; the exact binomial one is not."""
    y = np.ones(10)
    c, p = classical(y), ppi(y, np.full(10, 0.9), np.random.default_rng(0).random(50))
    for e in (c, p):
        assert e.estimate == 1.0 and e.ci_high == 1.0
        assert e.ci_low == pytest.approx(0.6915, abs=1e-3)  # Clopper-Pearson, 95%: (alpha/2)^(1/10)
        assert e.method == "exact"
    assert "Only 0 of the 10 labels say inconsistent" in p.note and p.lam == 0.0
