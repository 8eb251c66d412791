"""Systems compared (services.judges.compare): MOVER against Newcombe's published intervals, the pairing's
correlation against its definition, the Bonferroni level, the sentences, bad input, and coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from services.errors import InputError
from services.judges import compare as cmp
from tests.support.compare_sim import SCENARIOS, run


def _wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    iv = sps.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return k / n, iv.low, iv.high


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [((56, 70), (48, 80), 0.0524, 0.3339), ((9, 10), (3, 10), 0.1705, 0.8090)],
)
def test_mover_of_wilson_intervals_is_newcombes_hybrid_score_interval(a, b, low, high):
    """Newcombe (Stat Med 1998, 17:873-890), Table II, method 10."""
    d, lo, hi = cmp.mover(_wilson(*a), _wilson(*b))
    assert d == pytest.approx(a[0] / a[1] - b[0] / b[1])
    assert (lo, hi) == pytest.approx((low, high), abs=6e-5)


def test_mover_with_correlation_narrows_by_the_covariance_term():
    """Zou and Donner (2008): L = d - sqrt(da^2 + db^2 - 2 r da db)."""
    a, b = (0.6, 0.5, 0.72), (0.4, 0.31, 0.5)
    d, lo, hi = cmp.mover(a, b, r=0.5)
    assert lo == pytest.approx(0.2 - math.sqrt(0.1**2 + 0.1**2 - 2 * 0.5 * 0.1 * 0.1))
    assert hi == pytest.approx(0.2 + math.sqrt(0.12**2 + 0.09**2 - 2 * 0.5 * 0.12 * 0.09))
    _, lo0, hi0 = cmp.mover(a, b, r=0.0)
    assert lo0 < lo and hi0 > hi


def _frame(systems: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], refs: dict[str, np.ndarray] | None = None):
    """{system: (labels with NaN, predictions, references)} -> the comparison's frame."""
    parts = []
    for name, (label, pred, ref) in systems.items():
        parts.append(pd.DataFrame({"system": name, "label": label, "prediction": pred, "reference": ref}))
    return pd.concat(parts, ignore_index=True)


def test_paired_correlation_of_fully_labelled_systems_is_the_phi_coefficient():
    """With labels only (lambda 0) and both systems labelled on the same references, r is the labels' Pearson
    correlation: Newcombe's paired setting."""
    rng = np.random.default_rng(3)
    z = rng.random(200)
    ya = (z < 0.7).astype(float)
    yb = np.where(rng.random(200) < 0.7, ya, (rng.random(200) < 0.5)).astype(float)
    refs = np.arange(200)
    df = cmp._check(_frame({"A": (ya, np.full(200, 0.5), refs), "B": (yb, np.full(200, 0.5), refs)}))
    r, shared = cmp.correlation(df[df.system == "A"], df[df.system == "B"], 0.0, 0.0)
    assert shared == 200
    assert r == pytest.approx(np.corrcoef(ya, yb)[0, 1])


def test_systems_over_different_references_are_independent():
    rng = np.random.default_rng(1)
    y = (rng.random(80) < 0.5).astype(float)
    df = cmp._check(_frame({"A": (y, y, np.arange(80)), "B": (y, y, np.arange(80) + 100)}))
    assert cmp.correlation(df[df.system == "A"], df[df.system == "B"], 0.0, 0.0) == (0.0, 0)


def _labelled(rates: dict[str, float], n: int = 60, big_n: int = 2000, seed: int = 0, paired: bool = False):
    rng = np.random.default_rng(seed)
    parts = {}
    for k, (name, rate) in enumerate(rates.items()):
        y = (rng.random(big_n) < rate).astype(float)
        label = np.full(big_n, np.nan)
        label[:n] = y[:n]
        pred = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, big_n), 0, 1)
        parts[name] = (label, pred, np.arange(big_n) + (0 if paired else 10_000 * k))
    return _frame(parts)


def test_each_pair_is_at_alpha_over_the_number_of_pairs():
    df = _labelled({"A": 0.5, "B": 0.8, "C": 0.9})
    c = cmp.compare(df, alpha=0.06, mode="planned")
    assert c.n_pairs == 3 and c.pair_alpha == pytest.approx(0.02)
    a, b = (df[df.system == s] for s in ("A", "B"))
    ea = cmp.for_difference(
        a.label.dropna().to_numpy(),
        a.prediction[a.label.notna()].to_numpy(),
        a.prediction[a.label.isna()].to_numpy(),
        alpha=0.02,
    )
    eb = cmp.for_difference(
        b.label.dropna().to_numpy(),
        b.prediction[b.label.notna()].to_numpy(),
        b.prediction[b.label.isna()].to_numpy(),
        alpha=0.02,
    )
    expected = cmp.mover((ea.estimate, ea.ci_low, ea.ci_high), (eb.estimate, eb.ci_low, eb.ci_high))
    d = c.differences[0]
    assert (d.a, d.b) == ("A", "B")
    assert (d.estimate, d.ci_low, d.ci_high) == pytest.approx(expected)
    # the systems' own intervals stay at the stated level: narrower than the adjusted ones
    s = c.systems[0]
    assert s.ppi.width < s.adjusted.width


def _exact(k: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    iv = sps.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return k / n, iv.low, iv.high


def _useless(ka: int, kb: int, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    ya = np.r_[np.ones(ka), np.zeros(n - ka)]
    yb = np.r_[np.ones(kb), np.zeros(n - kb)]
    return _frame(
        {
            "A": (np.r_[ya, np.full(500, np.nan)], rng.random(n + 500), np.arange(n + 500)),
            "B": (np.r_[yb, np.full(500, np.nan)], rng.random(n + 500), np.arange(n + 500) + 10_000),
        }
    )


def test_where_the_judge_adds_nothing_the_difference_uses_exact_limits():
    """A useless judge: PPI falls back to the labels, and the difference combines Clopper-Pearson limits in
    MOVER (Newcombe's method 10)."""
    d = cmp.compare(_useless(54, 40), alpha=0.05, mode="planned").differences[0]
    assert d.combined == "mover"
    assert (d.ci_low, d.ci_high) == pytest.approx(cmp.mover(_exact(54, 60), _exact(40, 60))[1:])


def test_with_few_labels_of_a_class_the_difference_holds_both_systems_whole():
    """3 of 60 labels say inconsistent: the difference is every difference consistent with both systems'
    exact intervals at half the level, [l_a - u_b, u_a - l_b]."""
    d = cmp.compare(_useless(57, 40), alpha=0.05, mode="planned").differences[0]
    (_, la, ua), (_, lb, ub) = _exact(57, 60, 0.975), _exact(40, 60, 0.975)
    assert d.combined == "whole"
    assert (d.ci_low, d.ci_high) == pytest.approx((la - ub, ua - lb))


def test_sentences_claim_only_what_the_interval_supports():
    assert cmp.sentence("A", "B", -0.06, -0.10, -0.02) == "B is more consistent than A by 6 points [2, 10]."
    assert cmp.sentence("A", "B", 0.06, 0.02, 0.10) == "A is more consistent than B by 6 points [2, 10]."
    text = cmp.sentence("A", "B", 0.01, -0.03, 0.05)
    assert text.startswith("No difference shown between A and B") and "[-3, 5]" in text
    # a bound near 0 is never printed as 0 for a significant difference
    assert "[0.3, 4.0]" in cmp.sentence("A", "B", 0.02, 0.003, 0.04)
    assert cmp.sentence("A", "B", None, None, None, "A: too few labels").startswith("Unknown for A and B")


def test_a_significant_difference_is_found_and_named():
    c = cmp.compare(_labelled({"old": 0.6, "new": 0.95}, n=100), alpha=0.05, mode="planned")
    (d,) = c.differences
    assert d.significant and d.ci_high < 0
    assert d.sentence.startswith("new is more consistent than old by")
    out = c.as_dict()
    assert set(out) == {"reading", "systems", "differences"}
    assert out["reading"]["name"] == "planned" and "Clopper" in out["reading"]["citation"]
    assert set(out["systems"][0]) == {"reading", "system", "n", "n_labelled", "judge_rate", "classical", "ppi"}
    assert set(out["differences"][0]) == {"reading", "a", "b", "estimate", "ci", "significant", "decided", "sentence"}
    assert out["differences"][0]["decided"] is True  # read once, with no budget stated


def test_a_system_with_too_few_labels_makes_its_differences_unknown():
    df = _labelled({"A": 0.5, "B": 0.5})
    df.loc[(df.system == "B") & df.label.notna(), "label"] = np.nan
    df.loc[df.index[df.system == "B"][0], "label"] = 1.0
    c = cmp.compare(df, mode="planned")
    (d,) = c.differences
    assert d.significant is None and d.estimate is None
    assert "at least 2" in d.sentence and any("B has 1 labelled" in n for n in c.notes)
    # no difference, so no correlation was used: the table shows none rather than r = 0
    assert d.correlation is None and d.n_shared == 0
    row = cmp.differences_frame(c).iloc[0]
    assert row["r"] is None and row["difference"] is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda df: df.assign(system="A"), "at least two systems"),
        (lambda df: df.assign(label=df.label.replace(1.0, 2.0)), "Labels must be 1"),
        (lambda df: df.assign(system=df.system.where(df.index > 0, None)), "needs a system"),
        (lambda df: df.drop(columns="prediction"), "prediction"),
    ],
)
def test_bad_input_is_refused_with_a_message(change, message):
    with pytest.raises(InputError, match=message):
        cmp.compare(change(_labelled({"A": 0.5, "B": 0.7})), mode="planned")


@pytest.fixture(scope="module")
def simulated() -> pd.DataFrame:
    """60 seeded draws of each scenario: 3 systems at rates 0.03-0.97, 30-100 labels and 1k-10k items each,
    informative and useless judges, paired and independent systems."""
    return run(SCENARIOS, draws=60)


def test_differences_cover_the_true_difference(simulated):
    diff = simulated[simulated.kind == "difference"]
    assert diff.covered.mean() >= 0.93, diff.groupby(["scenario", "what"]).covered.mean()


def test_no_difference_is_called_significant_with_the_wrong_sign(simulated):
    diff = simulated[(simulated.kind == "difference") & (simulated.truth != 0)]
    assert diff.wrong_sign.mean() <= 0.01
    assert diff.significant.mean() > 0.3  # the intervals are not so wide that they never decide


def test_each_systems_interval_covers_its_true_rate(simulated):
    systems = simulated[simulated.kind.isin(["PPI", "classical"])]
    assert systems.covered.mean() >= 0.93
    assert systems.groupby(["scenario", "kind", "what"]).covered.mean().min() >= 0.90


def test_a_negative_correlation_is_used_as_estimated_and_a_perfect_one_is_capped():
    """r < 0 widens the interval as it should (taken as 0 it would narrow it); |r| = 1 is capped at 0.99."""
    y = np.r_[np.ones(30), np.zeros(30)]
    refs = np.arange(60)
    df = cmp._check(_frame({"A": (y, np.full(60, 0.5), refs), "B": (1 - y, np.full(60, 0.5), refs)}))
    assert cmp.correlation(df[df.system == "A"], df[df.system == "B"], 0.0, 0.0) == (-cmp.MAX_R, 60)
    df = cmp._check(_frame({"A": (y, np.full(60, 0.5), refs), "B": (y, np.full(60, 0.5), refs)}))
    assert cmp.correlation(df[df.system == "A"], df[df.system == "B"], 0.0, 0.0) == (cmp.MAX_R, 60)
