"""Systems compared, the edges: the differences' exact coverage at small n (enumerated), the Bonferroni level,
the classical interval's level, the pairing's correlation over all references (negative too), a failed item's
neutral prediction, and the two readings (live and planned) with their sentences."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from services.errors import InputError
from services.judges import compare as cmp
from services.judges.estimate import Estimate
from services.stats import binomial


def _system(k: int, n: int, alpha: float) -> cmp.SystemRate:
    """A system of n 1/0 labels, k of them 1, with no judge: its planned intervals as compare() makes them."""
    y = np.r_[np.ones(k), np.zeros(n - k)]
    adjusted = cmp.for_difference(y, np.full(n, 0.5), np.array([]), alpha=alpha)
    split = cmp.for_difference(y, np.full(n, 0.5), np.array([]), alpha=alpha / 2)
    c = Estimate(k / n, None, None, n)
    return cmp.SystemRate("s", n, n, None, c, c, adjusted, "planned", split, (k, n - k))


GRID = np.linspace(0.0025, 0.9975, 80)


def _coverage(na: int, nb: int, alpha: float = 0.05, grid: np.ndarray = GRID) -> float:
    """The lowest exact coverage over every pair of true rates on the grid, by enumerating every outcome."""
    sa = [_system(k, na, alpha) for k in range(na + 1)]
    sb = [_system(k, nb, alpha) for k in range(nb + 1)]
    lo, hi = np.empty((na + 1, nb + 1)), np.empty((na + 1, nb + 1))
    for i, a in enumerate(sa):
        for j, b in enumerate(sb):
            _, lo[i, j], hi[i, j], _ = cmp._difference(a, b, 0.0)
    pa = sps.binom.pmf(np.arange(na + 1)[None, :], na, grid[:, None])
    pb = sps.binom.pmf(np.arange(nb + 1)[None, :], nb, grid[:, None])
    worst = 1.0
    for i, rate in enumerate(grid):
        d = rate - grid
        inside = (lo[None] <= d[:, None, None] + 1e-12) & (hi[None] >= d[:, None, None] - 1e-12)
        worst = min(worst, float(np.einsum("a,jb,jab->j", pa[i], pb, inside).min()))
    return worst


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 10, 15, 20, 24, 31, 40])
def test_a_difference_covers_at_least_93_percent_at_every_pair_of_rates(n):
    """Exact coverage (every outcome enumerated) at a stated 95%, rates 0.0025-0.9975 for both systems."""
    assert _coverage(n, n) >= 0.93


@pytest.mark.parametrize(("na", "nb"), [(2, 10), (5, 30), (20, 60)])
def test_a_difference_covers_at_unequal_labels(na, nb):
    assert _coverage(na, nb) >= 0.93


def test_two_of_two_against_none_of_two_is_no_difference():
    """The audit's case: A 2/2 and B 0/2 claimed 100 points [7, 100] with Wilson limits."""
    _, lo, hi, _ = cmp._difference(_system(2, 2, 0.05), _system(0, 2, 0.05), 0.0)
    assert lo < 0 < hi


def _labelled(rates: dict[str, float], n: int = 80, big_n: int = 400, seed: int = 0, informative: bool = True):
    rng = np.random.default_rng(seed)
    parts = []
    for k, (name, rate) in enumerate(rates.items()):
        y = (rng.random(big_n) < rate).astype(float)
        pred = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, big_n), 0, 1) if informative else rng.random(big_n)
        label = np.full(big_n, np.nan)
        label[:n] = y[:n]
        ref = np.arange(big_n) + 10_000 * k
        parts.append(pd.DataFrame({"system": name, "label": label, "prediction": pred, "reference": ref}))
    return pd.concat(parts, ignore_index=True)


def test_each_difference_is_at_the_bonferroni_level():
    """Three systems at alpha 0.06: each difference combines its systems' intervals at 0.06 / 3 = 0.02."""
    df = _labelled({"A": 0.5, "B": 0.6, "C": 0.7}, informative=False)
    c = cmp.compare(df, alpha=0.06, mode="planned")
    assert c.pair_alpha == pytest.approx(0.02)
    groups = dict(tuple(cmp._check(df).groupby("system")))
    for d in c.differences:
        ea, eb = (
            cmp.for_difference(
                groups[s].label.dropna().to_numpy(),
                groups[s].prediction[groups[s].label.notna()].to_numpy(),
                groups[s].prediction[groups[s].label.isna()].to_numpy(),
                alpha=0.02,
            )
            for s in (d.a, d.b)
        )
        assert (d.ci_low, d.ci_high) == pytest.approx(
            cmp.mover((ea.estimate, ea.ci_low, ea.ci_high), (eb.estimate, eb.ci_low, eb.ci_high), d.correlation)[1:]
        )
    wide = cmp.compare(df.assign(system=df.system.replace({"C": "B"})), alpha=0.06, mode="planned")
    assert wide.pair_alpha == pytest.approx(0.06)


def test_the_systems_classical_interval_is_at_the_stated_level():
    df = _labelled({"A": 0.5, "B": 0.7})
    for alpha in (0.2, 0.01):
        s = cmp.compare(df, alpha=alpha, mode="planned").systems[0]
        k = int(df[(df.system == "A")].label.sum())
        assert (s.classical.ci_low, s.classical.ci_high) == pytest.approx(binomial.clopper_pearson(k, 80, 1 - alpha))


def test_the_correlation_takes_each_systems_variance_over_all_its_references():
    """A has 60 labelled references of its own besides the 60 it shares with B: its variance counts them."""
    rng = np.random.default_rng(1)
    ya = (rng.random(120) < 0.6).astype(float)
    yb = np.where(rng.random(60) < 0.7, ya[:60], 1 - ya[:60])
    df = cmp._check(
        pd.concat(
            [
                pd.DataFrame({"system": "A", "label": ya, "prediction": 0.5, "reference": np.arange(120)}),
                pd.DataFrame({"system": "B", "label": yb, "prediction": 0.5, "reference": np.arange(60)}),
            ],
            ignore_index=True,
        )
    )
    ia, ib = (ya - ya.mean()) / 120, (yb - yb.mean()) / 60
    expected = float(ia[:60] @ ib) / math.sqrt(float(ia @ ia) * float(ib @ ib))
    r, shared = cmp.correlation(df[df.system == "A"], df[df.system == "B"], 0.0, 0.0)
    assert shared == 60
    assert r == pytest.approx(expected)


def test_a_negative_correlation_widens_the_difference():
    """Systems paired on the same references whose consistency runs opposite: r < 0 is used, and the interval
    is wider than with r taken as 0."""
    rng = np.random.default_rng(2)
    z = rng.normal(size=200)
    ya = (z + rng.normal(size=200) < 0.3).astype(float)
    yb = (-z + rng.normal(size=200) < 0.3).astype(float)
    df = pd.concat(
        [
            pd.DataFrame({"system": s, "label": y, "prediction": 0.5, "reference": np.arange(200)})
            for s, y in (("A", ya), ("B", yb))
        ],
        ignore_index=True,
    )
    d = cmp.compare(df, mode="planned").differences[0]
    assert d.correlation < -0.2
    a, b = (s.adjusted for s in cmp.compare(df, mode="planned").systems)
    _, lo0, hi0 = cmp.mover((a.estimate, a.ci_low, a.ci_high), (b.estimate, b.ci_low, b.ci_high), 0.0)
    assert d.ci_low < lo0 and d.ci_high > hi0


def test_a_failed_items_prediction_is_the_neutral_half():
    df = _labelled({"A": 0.5, "B": 0.7})
    unl = df.index[df.label.isna()][::3]
    failed, half, zero = df.copy(), df.copy(), df.copy()
    failed.loc[unl, "prediction"] = np.nan
    half.loc[unl, "prediction"] = 0.5
    zero.loc[unl, "prediction"] = 0.0
    got = cmp.compare(failed, mode="planned").systems[0].ppi
    assert got.estimate == pytest.approx(cmp.compare(half, mode="planned").systems[0].ppi.estimate)
    assert got.estimate != pytest.approx(cmp.compare(zero, mode="planned").systems[0].ppi.estimate)


# -- the two readings ---------------------------------------------------------------------------------------
def test_live_is_the_default_and_says_when_to_stop():
    df = _labelled({"old": 0.5, "new": 0.95}, n=120)
    c = cmp.compare(df)
    assert c.mode == "live" and c.as_dict()["reading"]["name"] == "live"
    (d,) = c.differences
    assert d.decided and d.reading == "live"
    assert d.sentence.startswith("You can stop labelling old and new: new is more consistent than old by")
    assert d.sentence.endswith("at any number of labels.")
    assert c.decided_systems() == {"old", "new"}
    assert all(s.classical.method == "beta-binomial mixture" for s in c.systems)


def test_live_intervals_contain_more_than_the_planned_ones():
    df = _labelled({"A": 0.55, "B": 0.6}, n=150, seed=3)
    live, planned = cmp.compare(df, mode="live"), cmp.compare(df, mode="planned")
    for s, p in zip(live.systems, planned.systems, strict=True):
        assert s.classical.ci_low < p.classical.ci_low and s.classical.ci_high > p.classical.ci_high
        assert s.ppi.width > p.ppi.width
    (d,), (e,) = live.differences, planned.differences
    assert d.ci_low < e.ci_low and d.ci_high > e.ci_high
    assert not d.decided and "keep labelling" in d.sentence


def test_planned_before_its_budget_says_the_level_is_void():
    df = _labelled({"old": 0.5, "new": 0.95}, n=120)
    c = cmp.compare(df, mode="planned", budget=200)
    (d,) = c.differences
    assert d.significant and not d.decided
    assert "Planned for 200 labels a system" in d.sentence and "voids its level" in d.sentence
    (d,) = cmp.compare(df, mode="planned", budget=100).differences
    assert d.decided and "voids" not in d.sentence


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"mode": "always"}, "live or planned"), ({"mode": "live", "budget": 50}, "planned reading")],
)
def test_a_bad_reading_is_refused_with_a_message(kwargs, message):
    with pytest.raises(InputError, match=message):
        cmp.compare(_labelled({"A": 0.5, "B": 0.7}), **kwargs)
