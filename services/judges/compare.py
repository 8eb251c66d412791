"""Systems compared: is one system (or prompt, model, version) more consistent than another, and how sure are we?

For each system: the judge's raw rate, the classical rate from its labelled items and the prediction-powered
rate (services.judges.estimate, unchanged), with n and n labelled. For each pair (a, b): the difference of
their rates, a's minus b's, with an interval whose level is adjusted for the K(K-1)/2 pairs (Bonferroni:
each pair at alpha / m, so every interval holds together with probability at least 1 - alpha).

The difference's interval is MOVER (the method of variance estimates recovery; Zou and Donner, Stat Med 2008;
for proportions, Newcombe's hybrid score interval, Stat Med 1998): each system's own interval at the
adjusted level, [l, u] around its estimate p, is combined into

    L = (p_a - p_b) - sqrt((p_a - l_a)^2 + (u_b - p_b)^2 - 2 r (p_a - l_a)(u_b - p_b))
    U = (p_a - p_b) + sqrt((u_a - p_a)^2 + (p_b - l_b)^2 - 2 r (u_a - p_a)(p_b - l_b))

so an interval that is valid and asymmetric near 0 or 1 (a score or exact interval) stays so for the
difference. The system's interval used is its PPI one (which is the classical one when the judge is not
informative). r is the correlation of the two estimates: 0 for systems over different references; where they
summarize the same references (the pairing), the cluster-robust covariance of the two estimators' influence
terms summed per reference (Zou and Donner's correction for dependent estimates; with labels only, and both
systems labelled on the same references, it is Newcombe's paired case). A negative r is taken as 0 (a wider,
safe interval).

A difference is significant when its interval excludes 0; its sentence claims only that ("B is more consistent
than A by 6 points [2, 10]"), else "no difference shown". A system without an estimate (fewer than two
labelled items) makes its differences unknown, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from services.errors import InputError
from services.judges.estimate import MIN_LABELLED, Estimate, classical, ppi
from services.stats import binomial

NEUTRAL = 0.5  # the prediction of an item the judge could not score (as on the judge card)
THRESHOLD = 0.5  # a score of 0.5 or more is the judge saying "consistent" (as for a score column)
MAX_R = 0.99  # the estimated correlation is capped below 1: an interval never shrinks to a point
COLUMNS = ("id", "system", "reference", "prediction", "verdict", "label")


@dataclass(frozen=True)
class SystemRate:
    """One system: the judge's raw rate, the classical and PPI rates at the stated level, and the interval
    the differences use (at the adjusted level)."""

    system: str
    n: int
    n_labelled: int
    judge_rate: float | None
    classical: Estimate
    ppi: Estimate
    adjusted: Estimate  # the PPI interval at the adjusted level, what the differences combine

    def as_dict(self) -> dict:
        """{system, n, n_labelled, judge_rate, classical, ppi: {estimate, ci, basis}} as `cli.py compare` writes
        it."""
        return {
            "system": self.system,
            "n": self.n,
            "n_labelled": self.n_labelled,
            "judge_rate": self.judge_rate,
            "classical": {"estimate": self.classical.estimate, "ci": [self.classical.ci_low, self.classical.ci_high]},
            "ppi": {
                "estimate": self.ppi.estimate,
                "ci": [self.ppi.ci_low, self.ppi.ci_high],
                "basis": self.ppi.basis or None,  # "labels only: ..." where PPI was not used
            },
        }


@dataclass(frozen=True)
class Difference:
    """a's rate minus b's, with its interval at the adjusted level."""

    a: str
    b: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    significant: bool | None  # None: unknown (see sentence)
    n_shared: int  # references both systems summarize (0: independent samples)
    correlation: float | None  # r used in MOVER (None: no difference, so no r)
    sentence: str

    def as_dict(self) -> dict:
        """{a, b, estimate, ci: [lo, hi], significant} as `cli.py compare` writes it."""
        return {
            "a": self.a,
            "b": self.b,
            "estimate": self.estimate,
            "ci": [self.ci_low, self.ci_high],
            "significant": self.significant,
        }


@dataclass(frozen=True)
class Comparison:
    """Every system's rates and every pair's difference."""

    systems: tuple[SystemRate, ...]
    differences: tuple[Difference, ...]
    alpha: float  # the level of the systems' intervals is 1 - alpha
    pair_alpha: float  # each difference's: alpha / number of pairs (Bonferroni)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def n_pairs(self) -> int:
        return len(self.differences)

    def as_dict(self) -> dict:
        """{"systems": [...], "differences": [...]}: `cli.py compare`'s output."""
        return {
            "systems": [s.as_dict() for s in self.systems],
            "differences": [d.as_dict() for d in self.differences],
        }


# -- the difference ------------------------------------------------------------------------------------
def mover(a: tuple[float, float, float], b: tuple[float, float, float], r: float = 0.0) -> tuple[float, float, float]:
    """(estimate, low, high) of a - b from (estimate, low, high) of each (Zou and Donner 2008, eqs. 8-9 with
    the correlation term); clipped to [-1, 1]."""
    pa, la, ua = a
    pb, lb, ub = b
    d = pa - pb
    low = d - math.sqrt(max(0.0, (pa - la) ** 2 + (ub - pb) ** 2 - 2.0 * r * (pa - la) * (ub - pb)))
    high = d + math.sqrt(max(0.0, (ua - pa) ** 2 + (pb - lb) ** 2 - 2.0 * r * (ua - pa) * (pb - lb)))
    return d, max(-1.0, low), min(1.0, high)


def _influence(group: pd.DataFrame, lam: float, n_refs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each item's term in the estimate's linearisation, summed per reference (a dense vector over the reference
    codes): (Y - lam Yhat - mean)/n over the labelled items, lam (Yhat - mean)/N over the others; their squares
    sum to the estimator's variance. With it, which references the system has."""
    y = group["label"].to_numpy(float)
    yhat = group["yhat"].to_numpy(float)
    ref = group["ref_code"].to_numpy()
    lab = np.isfinite(y)
    out = np.zeros(len(group))
    n, big_n = int(lab.sum()), int((~lab).sum())
    if n:
        rect = y[lab] - lam * yhat[lab]
        out[lab] = (rect - rect.mean()) / n
    if big_n and lam:
        out[~lab] = lam * (yhat[~lab] - yhat[~lab].mean()) / big_n
    return np.bincount(ref, weights=out, minlength=n_refs), np.bincount(ref, minlength=n_refs) > 0


def correlation(a: pd.DataFrame, b: pd.DataFrame, lam_a: float, lam_b: float) -> tuple[float, int]:
    """(r, shared references) between two systems' estimates: the cluster-robust (by reference) covariance of
    their influence terms over its variances; 0 when they share no reference, negative r taken as 0."""
    n_refs = int(max(a["ref_code"].max(), b["ref_code"].max())) + 1
    (ia, has_a), (ib, has_b) = _influence(a, lam_a, n_refs), _influence(b, lam_b, n_refs)
    shared = int((has_a & has_b).sum())
    va, vb = float(ia @ ia), float(ib @ ib)
    if shared == 0 or va <= 0 or vb <= 0:
        return 0.0, shared
    cov = float(ia[has_a & has_b] @ ib[has_a & has_b])
    return float(min(MAX_R, max(0.0, cov / math.sqrt(va * vb)))), shared


def _points(x: float, digits: int) -> str:
    return f"{100 * x:.{digits}f}"


def _digits(*xs: float) -> int:
    """Decimals (0 to 2) so that no bound that is not 0 shows as 0 and the sentence never contradicts itself."""
    for digits in (0, 1, 2):
        if all(x == 0 or round(100 * abs(x), digits) > 0 for x in xs):
            return digits
    return 2


def sentence(a: str, b: str, d: float | None, lo: float | None, hi: float | None, why: str = "") -> str:
    """What the interval supports, in words: who is more consistent, by how many points, or that no
    difference is shown."""
    if d is None or lo is None or hi is None:
        return f"Unknown for {a} and {b}: {why or 'no estimate.'}"
    if lo > 0 or hi < 0:
        better, worse, sign = (a, b, 1.0) if lo > 0 else (b, a, -1.0)
        lo_, hi_ = sorted((sign * lo, sign * hi))
        k = _digits(d, lo_, hi_)
        return (
            f"{better} is more consistent than {worse} by {_points(sign * d, k)} points "
            f"[{_points(lo_, k)}, {_points(hi_, k)}]."
        )
    k = _digits(d, lo, hi)
    return (
        f"No difference shown between {a} and {b}: {a} minus {b} is {_points(d, k)} points "
        f"[{_points(lo, k)}, {_points(hi, k)}]."
    )


# -- the comparison --------------------------------------------------------------------------------------
def _check(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("system", "prediction", "label") if c not in frame.columns]
    if missing:
        raise InputError(f"The items need the column(s) {', '.join(missing)}.")
    df = frame.copy()
    if "reference" not in df.columns:
        df["reference"] = None
    if df["system"].isna().any() or (df["system"].astype(str).str.strip() == "").any():
        raise InputError("Every item needs a system; give the items without one a system, or leave them out.")
    df["system"] = df["system"].astype(str)
    lab = df["label"].to_numpy(float)
    bad = np.isfinite(lab) & ~np.isin(lab, (0.0, 1.0))
    if bad.any():
        raise InputError("Labels must be 1 (consistent) or 0 (inconsistent).")
    # References as codes; an item without one is its own cluster: it pairs with nothing.
    codes, uniques = pd.factorize(df["reference"], use_na_sentinel=True)
    alone = codes < 0
    codes[alone] = len(uniques) + np.arange(int(alone.sum()))
    df["ref_code"] = codes
    pred = df["prediction"].to_numpy(float)
    df["yhat"] = np.where(np.isfinite(pred), np.clip(pred, 0.0, 1.0), NEUTRAL)
    return df


def _rates(g: pd.DataFrame, alpha: float, pair_alpha: float) -> SystemRate:
    y = g["label"].to_numpy(float)
    lab = np.isfinite(y)
    yl, yu = g["yhat"].to_numpy(float)[lab], g["yhat"].to_numpy(float)[~lab]
    if "verdict" in g.columns:
        judged = g["verdict"].to_numpy(float)
    else:
        pred = g["prediction"].to_numpy(float)
        judged = np.where(np.isfinite(pred), (pred >= THRESHOLD).astype(float), np.nan)
    judged = judged[np.isfinite(judged)]
    return SystemRate(
        system=str(g["system"].iloc[0]),
        n=len(g),
        n_labelled=int(lab.sum()),
        judge_rate=float(judged.mean()) if judged.size else None,
        classical=classical(y[lab], alpha=alpha),
        ppi=ppi(y[lab], yl, yu, alpha=alpha),
        adjusted=for_difference(y[lab], yl, yu, alpha=pair_alpha),
    )


def for_difference(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, *, alpha: float) -> Estimate:
    """The system's interval that the differences combine: PPI's, except where PPI rests on the labels alone
    (lambda 0) and they are 1/0: there the Wilson score interval (scipy), as Newcombe's hybrid score method
    has it, which keeps its level near 0 and 1 where the normal one does not (services/stats/binomial.py)."""
    e = ppi(y, yhat, yhat_unlabelled, alpha=alpha)
    if e.estimate is None or _lam(e) != 0.0 or not set(np.unique(y)) <= {0.0, 1.0}:
        return e
    lo, hi = binomial.wilson(int(y.sum()), int(y.size), 1 - alpha)
    return Estimate(float(y.mean()), lo, hi, e.n, e.n_unlabelled, 0.0, e.note, basis=e.basis)


def _lam(e: Estimate) -> float:
    return 0.0 if e.lam is None or not math.isfinite(e.lam) else float(e.lam)


def compare(frame: pd.DataFrame, *, alpha: float = 0.05) -> Comparison:
    """Systems compared from one row per item: system, prediction (the judge's score in [0, 1], NaN when it
    failed), label (1/0, NaN when unlabelled), and optionally reference (items of different systems with the
    same reference are paired) and verdict (the judge's 1/0; else a prediction of 0.5 or more)."""
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}.")
    df = _check(frame)
    names = [str(x) for x in pd.unique(df["system"])]
    if len(names) < 2:
        raise InputError(
            f"A comparison needs at least two systems; there is {len(names)} ({', '.join(names) or 'none'})."
        )
    n_pairs = len(names) * (len(names) - 1) // 2
    pair_alpha = alpha / n_pairs
    groups = {s: g for s, g in df.groupby("system", sort=False)}
    systems = [_rates(groups[s], alpha, pair_alpha) for s in names]
    notes = []
    for s in systems:
        if s.n_labelled < MIN_LABELLED:
            notes.append(
                f"{s.system} has {s.n_labelled} labelled item(s): its rate and differences are unknown until it has "
                f"at least {MIN_LABELLED}."
            )
    diffs = []
    for a, b in combinations(systems, 2):
        ea, eb = a.adjusted, b.adjusted
        if None in (ea.estimate, ea.ci_low, ea.ci_high, eb.estimate, eb.ci_low, eb.ci_high):
            why = "; ".join(
                f"{s.system}: {s.adjusted.note or 'no estimate'}" for s in (a, b) if s.adjusted.estimate is None
            )
            diffs.append(
                Difference(
                    a.system,
                    b.system,
                    None,
                    None,
                    None,
                    None,
                    0,
                    None,
                    sentence(a.system, b.system, None, None, None, why),
                )
            )
            continue
        r, shared = correlation(groups[a.system], groups[b.system], _lam(ea), _lam(eb))
        d, lo, hi = mover((ea.estimate, ea.ci_low, ea.ci_high), (eb.estimate, eb.ci_low, eb.ci_high), r)
        diffs.append(
            Difference(
                a.system,
                b.system,
                d,
                lo,
                hi,
                bool(lo > 0 or hi < 0),
                shared,
                r,
                sentence(a.system, b.system, d, lo, hi),
            )
        )
    return Comparison(tuple(systems), tuple(diffs), alpha, pair_alpha, tuple(notes))


def systems_frame(c: Comparison) -> pd.DataFrame:
    """One row per system: n, n labelled, the judge's raw rate, classical and PPI with their intervals, and what
    the PPI column rests on (the judge's scores with the labels, or the labels only and why)."""
    rows = []
    for s in c.systems:
        rows.append(
            {
                "system": s.system,
                "items": s.n,
                "labelled": s.n_labelled,
                "judge's raw rate": s.judge_rate,
                "classical": s.classical.estimate,
                "classical low": s.classical.ci_low,
                "classical high": s.classical.ci_high,
                "PPI": s.ppi.estimate,
                "PPI low": s.ppi.ci_low,
                "PPI high": s.ppi.ci_high,
                "PPI basis": s.ppi.basis,
            }
        )
    return pd.DataFrame(rows)


def differences_frame(c: Comparison) -> pd.DataFrame:
    """One row per pair: a, b, a minus b with its adjusted interval, whether significant, the sentence."""
    cols = ["a", "b", "difference", "low", "high", "significant", "shared references", "r", "what it shows"]
    rows = [
        [
            d.a,
            d.b,
            d.estimate,
            d.ci_low,
            d.ci_high,
            d.significant,
            d.n_shared,
            None if d.correlation is None else round(d.correlation, 3),
            d.sentence,
        ]
        for d in c.differences
    ]
    return pd.DataFrame(rows, columns=cols)
