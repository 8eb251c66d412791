"""The judge cards as tables: one row per judge (numbers, for sorting) and one row per measure (each value
with its interval and n, the best judge's marked), shared by the Judges page and the judges report."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from services.judges.agreement import VERDICTS_NAME
from services.judges.card import JudgeCard

BEST = "★"
# measure -> (how to read it from a card: value, low, high, n), and whether higher is better (None: no best)
Reader = Callable[[JudgeCard], tuple[float | None, float | None, float | None, int | None]]


def _metric(name: str) -> Reader:
    def read(c: JudgeCard):
        m = getattr(c.agreement, name)
        return m.value, m.ci_low, m.ci_high, m.n

    return read


def _rate(which: str) -> Reader:
    def read(c: JudgeCard):
        e = getattr(c.rates, which)
        return e.estimate, e.ci_low, e.ci_high, e.n

    return read


def _width(which: str) -> Reader:
    def read(c: JudgeCard):
        e = getattr(c.rates, which)
        return e.width, None, None, e.n

    return read


def _per_1000(key: str) -> Reader:
    def read(c: JudgeCard):
        return c.cost.per_1000()[key], None, None, c.cost.n_items

    return read


MEASURES: list[tuple[str, Reader, bool | None]] = [
    (VERDICTS_NAME, _metric("balanced_accuracy"), True),  # the same measure as the batch's report and page
    ("AUROC", _metric("auroc"), True),
    ("Cohen's kappa", _metric("kappa"), True),
    ("Pearson r (human score)", _metric("pearson"), True),
    (
        "Unknown rate (sentences)",
        lambda c: (c.unknown_rate.value, c.unknown_rate.ci_low, c.unknown_rate.ci_high, c.unknown_rate.n),
        False,
    ),
    (
        "Failure rate (items)",
        lambda c: (c.failure_rate.value, c.failure_rate.ci_low, c.failure_rate.ci_high, c.failure_rate.n),
        False,
    ),
    ("Judge's raw rate", lambda c: (c.rates.judge_rate, None, None, c.rates.n_judged), None),
    ("Labels not a random draw", lambda c: (c.n_not_random, None, None, c.n_labelled), None),
    ("Classical rate (labels only)", _rate("classical"), None),
    ("PPI rate (labels + judge)", _rate("ppi"), None),
    ("PPI interval width", _width("ppi"), False),
    ("Calls per 1,000 docs", _per_1000("calls"), False),
    ("Tokens in per 1,000 docs", _per_1000("prompt_tokens"), False),
    ("Tokens out per 1,000 docs", _per_1000("completion_tokens"), False),
    ("Seconds per 1,000 docs", _per_1000("seconds"), False),
    ("USD per 1,000 docs", _per_1000("usd"), False),
]


def _number(value: float, amount: bool) -> str:
    """A measure in [0, 1] to 3 decimals; a cost (calls, tokens, seconds, USD) to 3 significant digits."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if amount else f"{value:.3f}"


def _text(value, low, high, n, amount: bool = False) -> str:
    if value is None:
        return "—"
    v = _number(value, amount)
    iv = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return v + iv + (f" (n={n:,})" if n is not None else "")


def best_of(values: Sequence[float | None], higher: bool | None) -> set[int]:
    """Positions of the best value (ties all marked); none when there is no rule or fewer than 2 values."""
    known = [(k, v) for k, v in enumerate(values) if v is not None]
    if higher is None or len(known) < 2:
        return set()
    target = max(v for _, v in known) if higher else min(v for _, v in known)
    if all(v == target for _, v in known):
        return set()
    return {k for k, v in known if v == target}


def measures_frame(cards: Sequence[JudgeCard]) -> pd.DataFrame:
    """One row per measure, one column per judge: 'value [lo, hi] (n=...)', the best marked with ★."""
    rows = []
    for name, read, higher in MEASURES:
        got = [read(c) for c in cards]
        best = best_of([g[0] for g in got], higher)
        rows.append(
            {
                "measure": name,
                **{
                    c.judge: (BEST + " " if k in best else "")
                    + _text(*got[k], amount="per 1,000" in name or name.startswith("Labels"))
                    for k, c in enumerate(cards)
                },
            }
        )
    return pd.DataFrame(rows)


def judges_frame(cards: Sequence[JudgeCard]) -> pd.DataFrame:
    """One row per judge with the measures' values (numbers, for sorting), labels and n."""
    rows = []
    for c in cards:
        row: dict[str, object] = {"judge": c.judge, "labelled": c.n_labelled, "items": c.n}
        for name, read, _ in MEASURES:
            value = read(c)[0]
            row[name] = float("nan") if value is None else value
        rows.append(row)
    return pd.DataFrame(rows)


def best_cells(cards: Sequence[JudgeCard]) -> dict[str, set[int]]:
    """For judges_frame: measure -> the rows (judges) holding its best value."""
    return {name: best_of([read(c)[0] for c in cards], higher) for name, read, higher in MEASURES}


def intervals_frame(cards: Sequence[JudgeCard]) -> pd.DataFrame:
    """For the chart: judge, estimate kind (raw, classical, PPI), estimate, low, high."""
    rows = []
    for c in cards:
        r = c.rates
        rows.append({"judge": c.judge, "kind": "judge's raw rate", "estimate": r.judge_rate, "low": None, "high": None})
        for kind, e in (("classical", r.classical), ("PPI", r.ppi)):
            rows.append({"judge": c.judge, "kind": kind, "estimate": e.estimate, "low": e.ci_low, "high": e.ci_high})
    return pd.DataFrame(rows, columns=["judge", "kind", "estimate", "low", "high"])
