"""The Judges page's parts: the cards side by side, the chart, what the interval means, and systems compared."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from services.figures.compare import make_compare_figure
from services.figures.judges import make_judges_rate_figure
from services.formats import percent
from services.judges import JudgeCard, compare, tables
from services.judges.agreement import VERDICTS_NAME
from services.judges.estimate import LIVE_NAME, planned_name

# The measures of the sortable grid, each with its short column name (the full name is its tooltip).
CARDS_PER_ROW = 3  # the most cards a row holds at 1280 px with their metric's label whole
HEADLINE = {
    VERDICTS_NAME: "bal. acc. (verdicts)",
    "AUROC": "AUROC",
    "Unknown rate (sentences)": "unknown",
    "Failure rate (items)": "failed",
    "PPI rate (labels + judge)": "PPI rate",
    "PPI interval width": "PPI width",
    "USD per 1,000 docs": "USD / 1k",
}


def _pct(x: float | None) -> str:
    return "—" if x is None else percent(x)


def explain(card: JudgeCard) -> str:
    """What the PPI interval of a card means, in plain words (the live reading, valid at every look)."""
    r, level = card.rates, 1.0 - card.alpha
    c, p = r.read("live")
    if p.estimate is None:
        return f"No estimate yet for {card.judge}: {p.note or c.note or 'it needs labelled items.'}"
    what = "consistent items" if card.target == "label" else "the mean human score"
    narrower = ""
    if p.n_unlabelled == 0:
        narrower = (
            " Every item has a human label, so the judge has nothing to add: PPI equals the labels-only estimate."
        )
    elif p.width is not None and c.width is not None and c.width > 0:
        narrower = (
            f" It is {1 - p.width / c.width:.0%} narrower than the {_pct(c.ci_low)}–{_pct(c.ci_high)} that the "
            f"labels alone give: the judge's {p.n_unlabelled:,} other verdicts are worth about "
            f"{(c.width / p.width) ** 2 * p.n - p.n:,.0f} more labels."
            if p.width < c.width
            else " The judge adds nothing here: the interval is as wide as from the labels alone."
        )
    return (
        f"**{card.judge}**: the share of {what} in this dataset lies between **{_pct(p.ci_low)}** and "
        f"**{_pct(p.ci_high)}** ({level:.0%} {LIVE_NAME}; estimate {_pct(p.estimate)}), resting on "
        f"**{p.n} human label(s)** and the judge's verdicts on all {card.n:,} items.{narrower} The judge on its "
        f"own says {_pct(r.judge_rate)}."
        + (
            f" {card.n_not_random} of the labels were not a random draw: they count as the known values of their "
            f"items, and the interval rests on the {p.n} random ones."
            if card.n_not_random
            else ""
        )
    )


def _highlight(df: pd.DataFrame, best: dict[str, set[int]]) -> pd.DataFrame:
    styles = pd.DataFrame("", index=df.index, columns=df.columns)
    for col, rows in best.items():
        if col in styles.columns:
            for r in rows:
                styles.iloc[r, styles.columns.get_loc(col)] = "background-color: #d9f2e3; font-weight: 600"
    return styles


def _render_card(col, c: JudgeCard, level: float) -> None:
    with col.container(border=True):
        p, planned = c.rates.read("live")[1], c.rates.ppi
        st.markdown(f"**{c.judge}**")
        st.metric(f"PPI consistency rate ({level:.0%} CI)", _pct(p.estimate), help="Prediction-powered inference")
        chosen = f" · {c.n_not_random} label(s) not a random draw, counted as known" if c.n_not_random else ""
        if p.ci_low is None:
            st.caption(f"no interval · n = {p.n} labelled + {p.n_unlabelled:,} judged only{chosen}")
            return
        st.caption(
            f"**[{_pct(p.ci_low)}, {_pct(p.ci_high)}]** {LIVE_NAME}  \n"
            f"[{_pct(planned.ci_low)}, {_pct(planned.ci_high)}] {planned_name(c.rates.budget)}  \n"
            f"n = {p.n} labelled + {p.n_unlabelled:,} judged only{chosen}"
        )


def render_cards(cards: Sequence[JudgeCard]) -> None:
    """The cards side by side: plain-words intervals, the chart, the sortable table and the detailed one."""
    level = 1.0 - cards[0].alpha
    # At most three cards a row, the rows evened out (4 cards: 2 + 2): five side by side in the 1280 px main
    # column cut the metric's label short.
    per_row = math.ceil(len(cards) / math.ceil(len(cards) / CARDS_PER_ROW))
    for start in range(0, len(cards), per_row):
        for col, c in zip(st.columns(per_row), cards[start : start + per_row], strict=False):
            _render_card(col, c, level)
    for c in cards:
        st.markdown(explain(c))
    st.plotly_chart(make_judges_rate_figure(tables.intervals_frame(cards), level=level), key="jd_chart")
    st.markdown(
        "**Cards side by side** (the headline measures; click a column to sort; the best value of each is green; "
        "every measure with its interval is in the table below)"
    )
    # One row per judge keeps sorting by a measure; the headline columns, short-named, fit the main column at
    # 1280 px wide without a sideways scroll bar, however many judges there are.
    frame = tables.judges_frame(cards)[["judge", "labelled", *HEADLINE]]
    frame = frame.dropna(axis=1, how="all").rename(columns=HEADLINE)  # a measure no judge has: only in the table
    best = {HEADLINE[m]: rows for m, rows in tables.best_cells(cards).items() if m in HEADLINE}
    st.dataframe(
        frame.style.apply(lambda df: _highlight(df, best), axis=None).format(precision=3, na_rep="—"),
        hide_index=True,
        placeholder="—",  # a measure a judge has none of (the offline checker's cost) reads "—", not "None"
        column_config={
            "judge": st.column_config.TextColumn("judge", width="medium"),
            "labelled": st.column_config.NumberColumn(
                "n", help="Items with a human label (each measure's own n is in the table below)"
            ),
            **{short: st.column_config.Column(short, help=name) for name, short in HEADLINE.items() if short in frame},
        },
        key="jd_table",
    )
    with st.expander(f"Every measure with its n and {level:.0%} interval (★ best)", expanded=True):
        # A static table shows every row: a data grid stops at ten and hides the last measures behind a scroll bar.
        st.table(tables.measures_frame(cards), hide_index=True)
    linked = [
        {"judge": c.judge, "measured": x.what, "where": f"{x.page} #{x.ref_id}", "value": x.value, "n": x.n}
        for c in cards
        for x in c.linked
    ]
    if linked:
        st.markdown("**Measured on other pages for the same model**")
        st.dataframe(pd.DataFrame(linked), hide_index=True)
        st.page_link("pages/8_ConsEval.py", label="ConsEval", icon=":material/balance:")
        st.page_link("pages/10_DHP.py", label="DHP", icon=":material/troubleshoot:")
    notes = [f"{c.judge}: {n}" for c in cards for n in c.notes]
    if notes:
        st.caption("  \n".join(notes))


def _rate(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "—"
    return percent(value) + (f" [{percent(low)}, {percent(high)}]" if low is not None and high is not None else "")


def render_comparison(c: compare.Comparison) -> None:
    """Systems compared: what each difference shows in words, the forest plot, the systems' table and the
    differences' table."""
    level, pair_level = 1.0 - c.alpha, 1.0 - c.pair_alpha
    for d in c.differences:
        st.markdown(f"- {d.sentence}")
    st.caption(
        f"Each system's interval is {level:.0%}; each difference's is {percent(pair_level)} (Bonferroni over "
        f"{c.n_pairs} pair(s)), so all of them hold together at least {level:.0%} of the time. Systems that "
        "summarize the same references are paired."
    )
    st.caption(compare.reading_note(c))
    sysf, diff = compare.systems_frame(c), compare.differences_frame(c)
    st.plotly_chart(make_compare_figure(sysf, diff, level=level, reading=c.mode), key="jd_cmp_chart")
    st.markdown(f"**Systems** ({level:.0%} intervals)")
    st.table(
        pd.DataFrame(
            {
                "system": [s.system for s in c.systems],
                "items": [s.n for s in c.systems],
                "labelled": [s.n_labelled for s in c.systems],
                "judge's raw rate": [_pct(s.judge_rate) for s in c.systems],
                "classical": [_rate(s.classical.estimate, s.classical.ci_low, s.classical.ci_high) for s in c.systems],
                "PPI": [_rate(s.ppi.estimate, s.ppi.ci_low, s.ppi.ci_high) for s in c.systems],
                "PPI column rests on": [s.ppi.basis or "—" for s in c.systems],
            }
        ),
        hide_index=True,
    )
    st.markdown(f"**Differences, a minus b** ({percent(pair_level)} intervals, in points)")
    st.table(
        pd.DataFrame(
            {
                "a": diff["a"],
                "b": diff["b"],
                "a − b": [
                    "unknown"
                    if d.estimate is None
                    else f"{100 * d.estimate:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"
                    for d in c.differences
                ],
                "shown": [
                    "unknown" if d.significant is None else "yes" if d.significant else "no" for d in c.differences
                ],
                "decided": ["yes" if d.decided else "no" for d in c.differences],
                "paired on": [f"{d.n_shared:,} references" if d.n_shared else "—" for d in c.differences],
            }
        ),
        hide_index=True,
    )
    if c.notes:
        st.caption("  \n".join(c.notes))
