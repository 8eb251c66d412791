"""Systems compared: is one system (or prompt, model, version) more consistent than another, and how sure are we?

For each system: the judge's raw rate, the classical rate from its labelled items and the prediction-powered
rate (services.judges.estimate, unchanged), with n and n labelled. For each pair (a, b): the difference of
their rates, a's minus b's, with an interval whose level is adjusted for the K(K-1)/2 pairs (Bonferroni:
each pair at alpha / m, so every interval holds together with probability at least 1 - alpha).

The difference's interval is MOVER (the method of variance estimates recovery; Zou and Donner, Stat Med 2008;
for proportions, Newcombe's method 10, Stat Med 1998, here with exact limits): each system's own interval at the
adjusted level, [l, u] around its estimate p, is combined into

    L = (p_a - p_b) - sqrt((p_a - l_a)^2 + (u_b - p_b)^2 - 2 r (p_a - l_a)(u_b - p_b))
    U = (p_a - p_b) + sqrt((u_a - p_a)^2 + (p_b - l_b)^2 - 2 r (u_a - p_a)(p_b - l_b))

so an interval that is valid and asymmetric near 0 or 1 (a score or exact interval) stays so for the
difference. The system's interval used is its PPI one; where PPI rests on the labels alone and they are 1/0,
the exact (Clopper-Pearson) one, as Newcombe's method 10 has it. r is the correlation of the two estimates: 0
for systems over different references; where they summarize the same references (the pairing), the
cluster-robust covariance of the two estimators' influence terms summed per reference (Zou and Donner's
correction for dependent estimates; with labels only, and both systems labelled on the same references, it is
Newcombe's paired case), used as estimated, negative too, within [-0.99, 0.99].

Few labels of a class: where either system has fewer than MIN_CLASS_DIFF labels of either class, MOVER's
square-root combination under-covers (exact coverage 0.92 at 2 labels a system, 0.927 at 20 for rates near 0
and 1 far apart), so the difference's set is every difference consistent with both systems' intervals, each at
half the pair's level: [l_a - u_b, u_a - l_b], which holds by the union bound at every n (exact coverage of
the whole rule >= 0.95 at every n from 2 labels: tests/services/test_judges_compare_edges.py).

Two readings (`mode`):
- "live" (the default): every interval is a confidence sequence (services/stats/sequential.py), valid at every
  number of labels at once, however often it is read: the exact beta-binomial mixture for a rate from labels,
  the asymptotic sequence for a prediction-powered rate; the differences combine them as above. A pair is
  decided when its interval excludes 0, and its sentence says labelling the two can stop.
- "planned": today's fixed-sample intervals, valid when read once, at the number of labels planned for them
  (`budget`, labels a system); before the budget is reached the sentence says reading it early voids its level.

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
from services.judges.estimate import (
    MIN_LABELLED,
    MODES,
    Estimate,
    classical,
    live_classical,
    live_ppi,
    ppi,
)
from services.judges.estimate import READINGS as RATE_READINGS
from services.judges.estimate import lam_of as _lam
from services.stats import binomial, sequential

NEUTRAL = 0.5  # the prediction of an item the judge could not score (as on the judge card)
THRESHOLD = 0.5  # a score of 0.5 or more is the judge saying "consistent" (as for a score column)
MAX_R = 0.99  # the estimated correlation is capped below 1: an interval never shrinks to a point
MIN_CLASS_DIFF = 5  # below this many labels of either class, a difference combines its systems' limits whole
READINGS = {  # a rate's two readings (services.judges.estimate), the differences' method named too
    "live": RATE_READINGS["live"],
    "planned": RATE_READINGS["planned"]
    | {"citation": f"{RATE_READINGS['planned']['citation']}; Zou and Donner 2008 (MOVER)"},
}
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
    reading: str = "planned"  # "live" (confidence sequences) or "planned" (fixed-sample intervals)
    split: Estimate | None = None  # the interval at half the adjusted level (few labels of a class)
    counts: tuple[int, int] = (0, 0)  # labels saying consistent, inconsistent (0, 0 for human scores)
    variance_kept: float = 1.0  # PPI: about 1 - r^2 of the judge's predictions on the labels (1: labels alone)

    def as_dict(self) -> dict:
        """{reading, system, n, n_labelled, judge_rate, classical, ppi: {estimate, ci, basis}} as `cli.py compare`
        writes it."""
        return {
            "reading": self.reading,
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
    reading: str = "planned"
    decided: bool | None = None  # live: the interval excludes 0; planned: that, once the budget is reached
    combined: str = "mover"  # "mover", or "whole" (each system's limits at half the level, few of a class)

    def as_dict(self) -> dict:
        """{a, b, estimate, ci: [lo, hi], significant, decided, reading} as `cli.py compare` writes it."""
        return {
            "reading": self.reading,
            "a": self.a,
            "b": self.b,
            "estimate": self.estimate,
            "ci": [self.ci_low, self.ci_high],
            "significant": self.significant,
            "decided": self.decided,
            "sentence": self.sentence,
        }


@dataclass(frozen=True)
class Comparison:
    """Every system's rates and every pair's difference."""

    systems: tuple[SystemRate, ...]
    differences: tuple[Difference, ...]
    alpha: float  # the level of the systems' intervals is 1 - alpha
    pair_alpha: float  # each difference's: alpha / number of pairs (Bonferroni)
    notes: tuple[str, ...] = field(default_factory=tuple)
    mode: str = "planned"
    budget: int | None = None  # planned: labels a system planned before labelling

    @property
    def n_pairs(self) -> int:
        return len(self.differences)

    def reading(self) -> dict:
        """{name, meaning, method, citation, budget}: which reading the intervals are."""
        return READINGS[self.mode] | {"budget": self.budget}

    def decided_systems(self) -> set[str]:
        """Systems every pair of which is decided: labelling them further changes no conclusion."""
        out = set()
        for s in self.systems:
            mine = [d for d in self.differences if s.system in (d.a, d.b)]
            if mine and all(d.decided for d in mine):
                out.add(s.system)
        return out

    def as_dict(self) -> dict:
        """{"reading": {...}, "systems": [...], "differences": [...]}: `cli.py compare`'s output."""
        return {
            "reading": self.reading(),
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
    their influence terms over its variances (each over all its references); 0 when they share no reference;
    negative r used as estimated, within [-MAX_R, MAX_R]."""
    n_refs = int(max(a["ref_code"].max(), b["ref_code"].max())) + 1
    (ia, has_a), (ib, has_b) = _influence(a, lam_a, n_refs), _influence(b, lam_b, n_refs)
    shared = int((has_a & has_b).sum())
    va, vb = float(ia @ ia), float(ib @ ib)
    if shared == 0 or va <= 0 or vb <= 0:
        return 0.0, shared
    cov = float(ia[has_a & has_b] @ ib[has_a & has_b])
    return float(min(MAX_R, max(-MAX_R, cov / math.sqrt(va * vb)))), shared


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


def _rates(g: pd.DataFrame, alpha: float, pair_alpha: float, mode: str = "planned") -> SystemRate:
    y = g["label"].to_numpy(float)
    lab = np.isfinite(y)
    yl, yu = g["yhat"].to_numpy(float)[lab], g["yhat"].to_numpy(float)[~lab]
    if "verdict" in g.columns:
        judged = g["verdict"].to_numpy(float)
    else:
        pred = g["prediction"].to_numpy(float)
        judged = np.where(np.isfinite(pred), (pred >= THRESHOLD).astype(float), np.nan)
    judged = judged[np.isfinite(judged)]
    yy = y[lab]
    binary = yy.size > 0 and set(np.unique(yy)) <= {0.0, 1.0}
    k = int(yy.sum()) if binary else 0
    if mode == "live":
        cl, pp = live_classical(yy, alpha=alpha), live_ppi(yy, yl, yu, alpha=alpha)
        adj, split = live_ppi(yy, yl, yu, alpha=pair_alpha), live_ppi(yy, yl, yu, alpha=pair_alpha / 2)
    else:
        cl, pp = classical(yy, alpha=alpha), ppi(yy, yl, yu, alpha=alpha)
        adj, split = for_difference(yy, yl, yu, alpha=pair_alpha), for_difference(yy, yl, yu, alpha=pair_alpha / 2)
    return SystemRate(
        system=str(g["system"].iloc[0]),
        n=len(g),
        n_labelled=int(lab.sum()),
        judge_rate=float(judged.mean()) if judged.size else None,
        classical=cl,
        ppi=pp,
        adjusted=adj,
        reading=mode,
        split=split,
        counts=(k, int(yy.size) - k) if binary else (0, 0),
        variance_kept=_kept(yy, yl, pp),
    )


def _kept(y: np.ndarray, yhat: np.ndarray, e: Estimate) -> float:
    """The share of the labels' variance a prediction-powered estimate keeps, about 1 - r^2 of the judge's
    predictions on the labelled items (PPI++ with its best lambda and many unlabelled items); 1 where PPI falls
    back to the labels alone."""
    if e.estimate is None or _lam(e) == 0.0 or y.size < 3 or np.ptp(y) == 0 or np.ptp(yhat) == 0:
        return 1.0
    r = float(np.corrcoef(y, yhat)[0, 1])
    return float(min(1.0, max(0.05, 1.0 - r * r))) if math.isfinite(r) else 1.0


def for_difference(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, *, alpha: float) -> Estimate:
    """The system's interval that the differences combine: PPI's, except where PPI rests on the labels alone
    (lambda 0) and they are 1/0: there the exact Clopper-Pearson interval, as Newcombe's method 10 has it (the
    Wilson score limits of his method 10's hybrid under-cover in MOVER at small n: 0.83-0.91 at n <= 20)."""
    e = ppi(y, yhat, yhat_unlabelled, alpha=alpha)
    if e.estimate is None or _lam(e) != 0.0 or not set(np.unique(y)) <= {0.0, 1.0}:
        return e
    lo, hi = binomial.clopper_pearson(int(y.sum()), int(y.size), 1 - alpha)
    return Estimate(float(y.mean()), lo, hi, e.n, e.n_unlabelled, 0.0, e.note, "exact", e.basis)


def _few(s: SystemRate) -> bool:
    """Whether a system's 1/0 labels have fewer than MIN_CLASS_DIFF of either class."""
    k, m = s.counts
    return k + m > 0 and min(k, m) < MIN_CLASS_DIFF


def _difference(a: SystemRate, b: SystemRate, r: float) -> tuple[float, float, float, str]:
    """(d, low, high, how): MOVER of the adjusted intervals, or, with few labels of a class, every difference
    consistent with both systems' intervals at half the pair's level (valid by the union bound)."""
    ea, eb = a.adjusted, b.adjusted
    if (_few(a) or _few(b)) and a.split is not None and b.split is not None and a.split.ci_low is not None:
        sa, sb = a.split, b.split
        d = ea.estimate - eb.estimate
        return d, max(-1.0, sa.ci_low - sb.ci_high), min(1.0, sa.ci_high - sb.ci_low), "whole"
    d, lo, hi = mover((ea.estimate, ea.ci_low, ea.ci_high), (eb.estimate, eb.ci_low, eb.ci_high), r)
    return d, lo, hi, "mover"


def live_sentence(a: str, b: str, d: float, lo: float, hi: float) -> str:
    """The live reading's sentence: decided (labelling the two can stop) or not yet."""
    if lo > 0 or hi < 0:
        return "You can stop labelling {} and {}: {} at any number of labels.".format(
            a, b, sentence(a, b, d, lo, hi).rstrip(".")
        )
    return sentence(a, b, d, lo, hi).replace("No difference shown", "No difference shown yet").rstrip(".") + (
        ", valid at any number of labels: keep labelling to decide."
    )


def _early(text: str, a: SystemRate, b: SystemRate, budget: int) -> str:
    return (
        f"{text} Planned for {budget} labels a system ({a.system} has {a.n_labelled}, {b.system} has "
        f"{b.n_labelled}): reading this fixed-sample interval before then voids its level."
    )


def compare(frame: pd.DataFrame, *, alpha: float = 0.05, mode: str = "live", budget: int | None = None) -> Comparison:
    """Systems compared from one row per item: system, prediction (the judge's score in [0, 1], NaN when it
    failed), label (1/0, NaN when unlabelled), and optionally reference (items of different systems with the
    same reference are paired) and verdict (the judge's 1/0; else a prediction of 0.5 or more).

    mode "live" (the default): confidence sequences, valid however often the comparison is read; "planned":
    the fixed-sample intervals, valid read once at `budget` labels a system."""
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}.")
    if mode not in MODES:
        raise InputError(f"The reading must be live or planned, got {mode!r}.")
    if budget is not None and (mode != "planned" or int(budget) < MIN_LABELLED):
        raise InputError(
            f"A label budget goes with the planned reading and is at least {MIN_LABELLED} labels a system."
            if mode == "planned"
            else "A label budget goes with the planned reading; the live one needs none."
        )
    df = _check(frame)
    names = [str(x) for x in pd.unique(df["system"])]
    if len(names) < 2:
        raise InputError(
            f"A comparison needs at least two systems; there is {len(names)} ({', '.join(names) or 'none'})."
        )
    n_pairs = len(names) * (len(names) - 1) // 2
    pair_alpha = alpha / n_pairs
    groups = {s: g for s, g in df.groupby("system", sort=False)}
    systems = [_rates(groups[s], alpha, pair_alpha, mode) for s in names]
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
                    mode,
                    None,
                )
            )
            continue
        r, shared = correlation(groups[a.system], groups[b.system], _lam(ea), _lam(eb))
        d, lo, hi, how = _difference(a, b, r)
        significant = bool(lo > 0 or hi < 0)
        if mode == "live":
            decided, text = significant, live_sentence(a.system, b.system, d, lo, hi)
        else:
            text = sentence(a.system, b.system, d, lo, hi)
            reached = budget is None or min(a.n_labelled, b.n_labelled) >= int(budget)
            decided = significant and reached
            if not reached:
                text = _early(text, a, b, int(budget))
        diffs.append(Difference(a.system, b.system, d, lo, hi, significant, shared, r, text, mode, decided, how))
    budget = None if budget is None else int(budget)
    return Comparison(tuple(systems), tuple(diffs), alpha, pair_alpha, tuple(notes), mode, budget)


def reading_note(c: Comparison) -> str:
    """What the comparison's reading means, in words, for the page, the report and the share link."""
    if c.mode == "live":
        return (
            "Live reading: every interval is a confidence sequence, valid at every number of labels at once, so it "
            "can be read as often as labels arrive and labelling can stop as soon as a pair is decided (a price: "
            "about 1.5 times the width of a fixed-sample interval near 150 labels a system). Methods: "
            f"{READINGS['live']['method']} ({READINGS['live']['citation']})."
        )
    plan = f" ({c.budget} labels a system)" if c.budget else ""
    return (
        f"Planned reading: fixed-sample intervals, valid when read once, at the number of labels planned before "
        f"labelling{plan}; reading them earlier, or again after more labels, and stopping when they look decided "
        "voids their level (a difference is then claimed far more often than the level says)."
    )


def planning(c: Comparison, difference: float, *, power: float = 0.8) -> str:
    """ "About N labels a system to tell a d-point difference at rate p", live and planned, at the pairs' level,
    with the judge's measured agreement where PPI uses it."""
    rates = [s.ppi.estimate for s in c.systems if s.ppi.estimate is not None]
    rate = float(np.mean(rates)) if rates else 0.5
    kept = float(np.median([s.variance_kept for s in c.systems])) if c.systems else 1.0
    ns = {
        live: sequential.labels_to_tell(
            difference, rate, alpha=c.pair_alpha, live=live, variance_kept=kept, power=power
        )
        for live in (True, False)
    }
    text = {k: "more than 100,000" if v is None else f"{v:,}" for k, v in ns.items()}
    judge = (
        f", with the judge's measured agreement (prediction-powered rates keep about {kept:.0%} of the labels' "
        "variance)"
        if kept < 1.0
        else " from labels alone (the judge adds nothing measurable yet)"
    )
    return (
        f"About {text[True]} labels a system to tell a {100 * difference:g}-point difference at a rate of "
        f"{rate:.0%} read live, {text[False]} planned (read once){judge}; {power:.0%} of the time, each pair at "
        f"{1 - c.pair_alpha:.1%}."
    )


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
    cols = ["a", "b", "difference", "low", "high", "significant", "decided", "shared references", "r", "what it shows"]
    rows = [
        [
            d.a,
            d.b,
            d.estimate,
            d.ci_low,
            d.ci_high,
            d.significant,
            d.decided,
            d.n_shared,
            None if d.correlation is None else round(d.correlation, 3),
            d.sentence,
        ]
        for d in c.differences
    ]
    return pd.DataFrame(rows, columns=cols)
