"""The numbers docs/judges.md quotes about the card's intervals, recomputed from their definitions: each quoted
figure must be what the documented method gives."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from services.judges import agreement
from services.stats import binomial

DOC = (Path(__file__).resolve().parents[2] / "docs" / "judges.md").read_text(encoding="utf-8")
FLAT = " ".join(DOC.split())


def _quoted(pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, FLAT)
    assert found, pattern
    return found.groups()


def test_five_and_five_perfect_items_give_the_documented_balanced_accuracy_and_auroc_intervals():
    """Balanced accuracy: the mean of TPR's and TNR's exact intervals at level sqrt(0.95); 5 of 5 has the lower
    end (alpha' / 2)^(1/5), alpha' = 1 - sqrt(0.95). AUROC's Newcombe interval is the one near 0.69."""
    lab = np.r_[np.ones(5), np.zeros(5)]
    a = agreement(lab, lab, lab)
    lower = ((1 - np.sqrt(0.95)) / 2) ** (1 / 5)
    assert a.balanced_accuracy.ci_low == pytest.approx(lower) and a.balanced_accuracy.ci_high == 1.0
    (ba,) = _quoted(r"5 \+ 5 perfect items: \[([0-9.]+), 1\]")
    assert float(ba) == round(lower, 3)
    (auc,) = _quoted(r"5 \+ 5 perfectly ranked items: \[([0-9.]+), 1\]")
    assert float(auc) == round(a.auroc.ci_low, 2)


def test_the_balanced_accuracy_coverage_quoted_is_the_exact_one():
    """Coverage of the averaged exact intervals, enumerated: TPR ~ Bin(m, p1), TNR ~ Bin(n, p0), independent."""
    low, high = (float(x) for x in _quoted(r"5 to 45 items a class: ([0-9.]+) to ([0-9.]+)\)"))
    grid = np.r_[0.01, 0.02, np.linspace(0.05, 0.95, 19), 0.98, 0.99]
    each = np.sqrt(0.95)

    def ends(n: int) -> np.ndarray:
        return np.array([binomial.clopper_pearson(k, n, each) for k in range(n + 1)])

    worst = 1.0
    for m, n in [(5, 5), (10, 5), (10, 45), (45, 10), (45, 45)]:
        e1, e0 = ends(m), ends(n)
        lo, hi = (e1[:, 0][:, None] + e0[:, 0][None, :]) / 2, (e1[:, 1][:, None] + e0[:, 1][None, :]) / 2
        for p1 in grid:
            w1 = sps.binom.pmf(np.arange(m + 1), m, p1)
            for p0 in grid:
                w0 = sps.binom.pmf(np.arange(n + 1), n, p0)
                t = (p1 + p0) / 2
                worst = min(worst, float((w1[:, None] * w0[None, :] * ((lo <= t) & (t <= hi))).sum()))
    assert round(worst, 3) == low and high == 1.0


def test_wilson_at_a_rate_of_0_01_with_10_labels_and_the_width_comparisons():
    (cov,) = _quoted(r"at a rate of 0\.01 with 10 labels it covers ([0-9.]+)")
    k = np.arange(11)
    inside = [proportion_confint(int(i), 10, 0.05, "wilson") for i in k]
    got = sum(sps.binom.pmf(i, 10, 0.01) for i, (lo, hi) in zip(k, inside, strict=True) if lo <= 0.01 <= hi)
    assert float(cov) == round(got, 3)

    def width(n: int, p: float, method: str) -> float:
        ks = np.arange(n + 1)
        if method == "exact":
            iv = [binomial.clopper_pearson(int(i), n, 0.95) for i in ks]
        else:
            iv = [proportion_confint(int(i), n, 0.05, method) for i in ks]
        return float(sum(sps.binom.pmf(i, n, p) * (hi - lo) for i, (lo, hi) in zip(ks, iv, strict=True)))

    # the table's exact, Wilson and Wald columns
    for row in re.finditer(r"\| (\d+), ([0-9.]+) \| ([0-9.]+) \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \| ([0-9.]+) \|", DOC):
        n, p = int(row[1]), float(row[2])
        for col, method in ((3, "exact"), (4, "wilson"), (5, "normal")):
            assert float(row[col]) == round(width(n, p, method), 3), (n, p, method)
    # "7-18% wider than Wilson's at 10-50 labels and 2-5% at 500"
    lo_pct, hi_pct, lo500, hi500 = (
        int(x) for x in _quoted(r"(\d+)-(\d+)% wider than Wilson's at 10-50 labels and (\d+)-(\d+)% at 500")
    )
    small = [width(n, p, "exact") / width(n, p, "wilson") - 1 for n in (10, 50) for p in (0.05, 0.5)]
    big = [width(500, p, "exact") / width(500, p, "wilson") - 1 for p in (0.05, 0.5)]
    assert (lo_pct, hi_pct) == (round(100 * min(small)), round(100 * max(small)))
    assert (lo500, hi500) == (round(100 * min(big)), round(100 * max(big)))
