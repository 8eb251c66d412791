"""DHP: the statistics of discernment (section 4.3) and the tables of a result.

Statistics (section 4.3 of the paper):

* Per perturbation i and metric m, a one-sided Wilcoxon signed-rank test (scipy.stats.wilcoxon,
  alternative="greater") of the original scores against the perturbed ones, paired by item. Zero
  differences (the evaluator gave both texts the same mean score) are dropped before ranking
  (zero_method="wilcox", scipy's default and what the paper's scipy call did); their number is reported as
  `n_ties`. When every pair is tied there is no evidence of a difference and p = 1.
* The combined p-value is the paper's (section 4.3.2), p = 1 / sum_j (1 / p_j): the headline D, D_avg and
  D_min are computed from it. With expert weights, p_EW = 1 / sum_j (EW_j / p_j) with the weights normalised
  to sum to 1 (the vote shares of Appendix C), as printed. The unweighted formula is Wilson's (2019) HMP with
  every weight 1, summing to M rather than 1: it is M times smaller than Wilson's HMP with weights 1/M,
  p_wilson = M / sum_j (1 / p_j), which is the one with Wilson's validity guarantee and on the same scale as
  p_EW (equal p_j give p_wilson = p_EW = p_j). p_wilson and D_wilson = log_0.05(p_wilson) (= D - ln M / ln 20
  while p_wilson < 1), with its D_avg and D_min, are reported beside the paper's as a labelled extra.
* D = log_0.05(p) = ln p / ln 0.05, so D = 1 at p = 0.05 and D > 1 is significant. D_avg is the mean of D
  over perturbations with each level (character, word, sentence) weighted equally and perturbations
  equally within a level; D_min is the minimum. The same for D_EW. When the set lacks a level the task's
  Table 1 row has (e.g. no LLM-based perturbation because no model was set), D_avg is left empty with the
  reason rather than averaged over the levels that remain, which would not be the paper's D_avg.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from services.dhp.catalogue import kind_of

ALPHA = 0.05
D_FORMULA = "D = log_0.05(p), p = 1 / sum_j (1/p_j) (sections 4.3.2 and 4.3.3)"
D_WILSON_FORMULA = (
    "D_wilson = log_0.05(p_wilson), p_wilson = M / sum_j (1/p_j) (Wilson's HMP, weights 1/M summing to 1; "
    "M times larger than the paper's p; an extra, not the paper's)"
)
ORIGINAL = "original"
ZERO_METHOD = "wilcox"
ZERO_METHOD_NOTE = (
    "Zero differences (the same mean score for the original and the perturbed text) are dropped before "
    "ranking (scipy's zero_method='wilcox'); their number is shown as ties. All pairs tied: p = 1."
)
P_FLOOR = np.finfo(float).tiny  # p = 0 (underflow) would make D infinite
SCORE_COLUMNS = ("item_id", "perturbation", "level", "metric", "original", "perturbed")


# -- statistics ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WilcoxonResult:
    """One-sided Wilcoxon signed-rank test of original > perturbed on one metric."""

    metric: str
    n_pairs: int  # pairs with both scores
    n_ties: int  # pairs with a zero difference (dropped before ranking)
    statistic: float | None  # W+ (sum of the ranks of positive differences)
    p_value: float
    mean_original: float | None
    mean_perturbed: float | None
    n_missing: int = 0  # pairs left out because a score is missing
    zero_method: str = ZERO_METHOD


def wilcoxon_greater(
    original: Sequence[float], perturbed: Sequence[float], *, metric: str = "", zero_method: str = ZERO_METHOD
) -> WilcoxonResult:
    """The paired one-sided test; pairs with a missing score are left out and counted."""
    a = np.asarray(original, dtype=float)
    b = np.asarray(perturbed, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"original and perturbed differ in length ({a.size} vs {b.size})")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    d = a - b
    n_ties = int(np.sum(d == 0))
    mean_a = float(a.mean()) if a.size else None
    mean_b = float(b.mean()) if b.size else None
    common = dict(
        metric=metric,
        n_pairs=int(a.size),
        n_ties=n_ties,
        mean_original=mean_a,
        mean_perturbed=mean_b,
        n_missing=int((~ok).sum()),
        zero_method=zero_method,
    )
    if a.size == 0 or (zero_method == "wilcox" and n_ties == a.size) or not np.any(d):
        return WilcoxonResult(statistic=None, p_value=1.0, **common)
    res = sps.wilcoxon(a, b, alternative="greater", zero_method=zero_method)
    p = float(res.pvalue)
    if not math.isfinite(p):
        p = 1.0
    return WilcoxonResult(statistic=float(res.statistic), p_value=p, **common)


def normalise_weights(weights: Mapping[str, float] | None, metrics: Sequence[str]) -> dict[str, float] | None:
    """Weights over `metrics` summing to 1 (None: equal weights); a metric without a weight gets 0.

    Returns None when the weights give nothing to the metrics at hand (all zero or none of them named)."""
    if weights is None:
        return {m: 1.0 / len(metrics) for m in metrics} if metrics else None
    raw = {m: float(weights.get(m, 0.0) or 0.0) for m in metrics}
    if any(v < 0 or not math.isfinite(v) for v in raw.values()):
        raise ValueError("expert weights must be finite and 0 or more")
    total = sum(raw.values())
    if total <= 0:
        return None
    return {m: v / total for m, v in raw.items()}


def harmonic_mean_p(p_values: Mapping[str, float], weights: Mapping[str, float] | None = None) -> float | None:
    """Wilson's weighted HMP, 1 / sum_j (w_j / p_j), with the weights normalised to sum to 1."""
    metrics = list(p_values)
    w = normalise_weights(weights, metrics)
    if w is None:
        return None
    total = sum(w[m] / max(float(p_values[m]), P_FLOOR) for m in metrics if w[m] > 0)
    return min(1.0, 1.0 / total) if total > 0 else None


def paper_literal_p(p_values: Mapping[str, float]) -> float | None:
    """The paper's unweighted combination (section 4.3.2), 1 / sum_j (1 / p_j): the headline p."""
    if not p_values:
        return None
    return 1.0 / sum(1.0 / max(float(p), P_FLOOR) for p in p_values.values())


def discernment(p: float | None) -> float | None:
    """D = log_0.05(p): 1 at p = 0.05, higher is better."""
    if p is None:
        return None
    return math.log(max(p, P_FLOOR)) / math.log(ALPHA) + 0.0  # + 0.0: p = 1 gives 0, not -0


@dataclass(frozen=True)
class PerturbationResult:
    perturbation: str
    level: str
    tests: tuple[WilcoxonResult, ...]
    p: float | None  # the paper's 1 / sum_j (1/p_j)
    p_ew: float | None
    p_wilson: float | None  # Wilson's M / sum_j (1/p_j), an extra
    d: float | None  # log_0.05(p): the paper's D (Figure 4)
    d_ew: float | None
    weights: dict[str, float] | None = None  # the normalised expert weights used (None: none given)
    d_wilson: float | None = None  # log_0.05(p_wilson)

    def p_by_metric(self) -> dict[str, float]:
        return {t.metric: t.p_value for t in self.tests}


@dataclass(frozen=True)
class DiscernmentResult:
    """Discernment of one evaluator on one set: per perturbation, and overall (D_avg, D_min)."""

    model: str
    perturbations: tuple[PerturbationResult, ...]
    d_avg: float | None
    d_min: float | None
    d_ew_avg: float | None
    d_ew_min: float | None
    level_weights: dict[str, float] = field(default_factory=dict)  # weight of each perturbation in D_avg
    zero_method_note: str = ZERO_METHOD_NOTE
    d_wilson_avg: float | None = None
    d_wilson_min: float | None = None
    avg_note: str | None = None  # why D_avg is empty, or how it differs from the paper's


def level_weights(levels: Mapping[str, str]) -> dict[str, float]:
    """Each level weighs the same; perturbations share their level's weight equally (sum 1)."""
    by_level: dict[str, list[str]] = {}
    for pert, lvl in levels.items():
        by_level.setdefault(lvl, []).append(pert)
    n_levels = len(by_level)
    return {p: 1.0 / (n_levels * len(ps)) for ps in by_level.values() for p in ps}


def _weighted_avg(values: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    present = {k: v for k, v in values.items() if v is not None}
    if not present:
        return None
    # Renormalise over perturbations that have a value, so a missing one does not pull the average to 0.
    lv = {k: weights[k] for k in present}
    total = sum(lv.values())
    return sum(present[k] * lv[k] for k in present) / total


def lookup_weights(ew: Mapping[str, Mapping[str, float]] | None, perturbation: str) -> Mapping[str, float] | None:
    """The expert weights of a perturbation: by its full key ("typo:minor"), else by its kind ("typo")."""
    if not ew:
        return None
    return ew.get(perturbation) or ew.get(kind_of(perturbation))


def analyse(
    scores: pd.DataFrame,
    *,
    weights: Mapping[str, Mapping[str, float]] | None = None,
    model: str = "",
    zero_method: str = ZERO_METHOD,
    order: Sequence[str] | None = None,
    expected: Mapping[str, str] | None = None,
) -> DiscernmentResult:
    """Discernment from rows item_id, perturbation, level, metric, original, perturbed (mean scores).

    `expected` (perturbation -> level, the task's Table 1 row) lets D_avg say when the set lacks some of it."""
    missing = [c for c in SCORE_COLUMNS if c not in scores.columns]
    if missing:
        raise ValueError(f"missing column(s): {', '.join(missing)}; need {', '.join(SCORE_COLUMNS)}")
    df = scores.loc[:, list(SCORE_COLUMNS)].copy()
    df["original"] = pd.to_numeric(df["original"], errors="coerce")
    df["perturbed"] = pd.to_numeric(df["perturbed"], errors="coerce")
    dup = df.duplicated(subset=["item_id", "perturbation", "metric"], keep=False)
    if dup.any():
        row = df[dup].iloc[0]
        raise ValueError(
            f"item '{row['item_id']}' appears twice for perturbation {row['perturbation']!r} "
            f"and metric {row['metric']!r}"
        )
    perts = list(dict.fromkeys(df["perturbation"].astype(str)))
    if order:
        perts = [p for p in order if p in perts] + [p for p in perts if p not in order]
    levels: dict[str, str] = {}
    results: list[PerturbationResult] = []
    for pert, g in sorted(df.groupby("perturbation", sort=False), key=lambda kv: perts.index(str(kv[0]))):
        pert = str(pert)
        lv = g["level"].astype(str).unique()
        if len(lv) != 1:
            raise ValueError(f"perturbation {pert!r} is given more than one level: {', '.join(lv)}")
        levels[pert] = lv[0]
        tests = tuple(
            wilcoxon_greater(
                m["original"].to_numpy(), m["perturbed"].to_numpy(), metric=str(metric), zero_method=zero_method
            )
            for metric, m in g.groupby("metric", sort=False)
        )
        ps = {t.metric: t.p_value for t in tests}
        ew = lookup_weights(weights, pert)
        w_norm = normalise_weights(ew, list(ps)) if ew is not None else None
        p = paper_literal_p(ps)
        p_ew = harmonic_mean_p(ps, ew) if ew is not None else None
        p_wilson = harmonic_mean_p(ps)
        results.append(
            PerturbationResult(
                pert, lv[0], tests, p, p_ew, p_wilson, discernment(p), discernment(p_ew), w_norm, discernment(p_wilson)
            )
        )
    lw = level_weights(levels)
    avg_note = _avg_note(levels, expected)
    comparable = avg_note is None or not avg_note.startswith(NOT_COMPARABLE)

    def avg(attr: str) -> float | None:
        return _weighted_avg({r.perturbation: getattr(r, attr) for r in results}, lw) if comparable else None

    def low(attr: str) -> float | None:
        vals = [getattr(r, attr) for r in results if getattr(r, attr) is not None]
        return min(vals) if vals else None

    return DiscernmentResult(
        model=model,
        perturbations=tuple(results),
        d_avg=avg("d"),
        d_min=low("d"),
        d_ew_avg=avg("d_ew"),
        d_ew_min=low("d_ew"),
        level_weights=lw,
        d_wilson_avg=avg("d_wilson"),
        d_wilson_min=low("d_wilson"),
        avg_note=avg_note,
    )


NOT_COMPARABLE = "not comparable"


def _avg_note(levels: Mapping[str, str], expected: Mapping[str, str] | None) -> str | None:
    """Why D_avg is left empty (a level of the task is missing), or which perturbations it lacks; None: complete."""
    if not expected:
        return None
    lacking_levels = [lv for lv in dict.fromkeys(expected.values()) if lv not in set(levels.values())]
    if lacking_levels:
        return (
            f"{NOT_COMPARABLE}: the set has no {', '.join(lacking_levels)}-level perturbation of the task's "
            "Table 1 row, and D_avg weighs each level equally, so it is left empty (D_min and each D stand)"
        )
    lacking = [p for p in expected if p not in levels]
    if lacking:
        return f"every level is present, but without {', '.join(lacking)}: each level's mean is over the rest"
    return None


def result_record(res: DiscernmentResult) -> dict[str, Any]:
    """The JSON form of a result (cli.py dhp stats / run)."""
    return {
        "model": res.model,
        "formula": {
            "p": "the paper's harmonic mean p-value (section 4.3.2): p = 1 / sum_j (1/p_j)",
            "p_ew": "weighted harmonic mean p-value, weights normalised to sum 1: p = 1 / sum_j (w_j/p_j)",
            "p_wilson": "Wilson's HMP with equal weights 1/M: M / sum_j (1/p_j) (an extra, M times the paper's p)",
            "D": D_FORMULA,
            "D_wilson": D_WILSON_FORMULA,
            "D_avg": "weighted mean of D over perturbations, each level weighted equally",
            "zero_differences": res.zero_method_note,
        },
        "perturbations": [
            {
                "perturbation": r.perturbation,
                "level": r.level,
                "p": {t.metric: t.p_value for t in r.tests},
                "tests": [
                    {
                        "metric": t.metric,
                        "n_pairs": t.n_pairs,
                        "n_ties": t.n_ties,
                        "n_missing": t.n_missing,
                        "statistic": t.statistic,
                        "p": t.p_value,
                        "mean_original": t.mean_original,
                        "mean_perturbed": t.mean_perturbed,
                    }
                    for t in r.tests
                ],
                "p_hmp": r.p,
                "p_hmp_ew": r.p_ew,
                "p_wilson": r.p_wilson,
                "weights": r.weights,
                "D": r.d,
                "D_wilson": r.d_wilson,
                "D_EW": r.d_ew,
            }
            for r in res.perturbations
        ],
        "D_avg": res.d_avg,
        "D_min": res.d_min,
        "D_wilson_avg": res.d_wilson_avg,
        "D_wilson_min": res.d_wilson_min,
        "D_EW_avg": res.d_ew_avg,
        "D_EW_min": res.d_ew_min,
        "D_avg_note": res.avg_note,
        "level_weights": res.level_weights,
    }


def results_frame(res: DiscernmentResult) -> pd.DataFrame:
    """One row per perturbation and metric: means, ties, p; and the combined p and D of the perturbation."""
    rows = []
    for r in res.perturbations:
        for t in r.tests:
            rows.append(
                {
                    "perturbation": r.perturbation,
                    "level": r.level,
                    "metric": t.metric,
                    "n": t.n_pairs,
                    "ties": t.n_ties,
                    "mean original": t.mean_original,
                    "mean perturbed": t.mean_perturbed,
                    "W+": t.statistic,
                    "p": t.p_value,
                    "weight": (r.weights or {}).get(t.metric),
                    "p (HMP)": r.p,
                    "p (HMP, EW)": r.p_ew,
                    "p (Wilson)": r.p_wilson,
                    "D": r.d,
                    "D_wilson": r.d_wilson,
                    "D_EW": r.d_ew,
                }
            )
    return pd.DataFrame(rows)


def summary_frame(results: Sequence[DiscernmentResult]) -> pd.DataFrame:
    """One row per perturbation and model: D and D_EW (for the bar chart)."""
    rows = []
    for res in results:
        for r in res.perturbations:
            rows.append(
                {
                    "model": res.model,
                    "perturbation": r.perturbation,
                    "level": r.level,
                    "D": r.d,
                    "D_wilson": r.d_wilson,
                    "D_EW": r.d_ew,
                }
            )
        rows.append(
            {
                "model": res.model,
                "perturbation": "D_avg",
                "level": "overall",
                "D": res.d_avg,
                "D_wilson": res.d_wilson_avg,
                "D_EW": res.d_ew_avg,
            }
        )
        rows.append(
            {
                "model": res.model,
                "perturbation": "D_min",
                "level": "overall",
                "D": res.d_min,
                "D_wilson": res.d_wilson_min,
                "D_EW": res.d_ew_min,
            }
        )
    return pd.DataFrame(rows, columns=["model", "perturbation", "level", "D", "D_wilson", "D_EW"])
