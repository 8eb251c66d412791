"""The Judges page's chart, also drawn by the judges report: pure plotly, no Streamlit."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

COLORS = {"judge's raw rate": "#9e9e9e", "classical": "#1f77b4", "PPI": "#d62728"}
ROW_SHIFT = 0.22  # the three estimates of a judge sit this far apart within its row (rows are 1 apart)


def make_judges_rate_figure(df: pd.DataFrame, *, level: float = 0.95) -> go.Figure:
    """Each judge's consistency rate three ways (intervals_frame): its raw rate as a dot, the classical and the
    PPI estimates with their intervals as error bars; one row per judge, the three a little apart within it (an
    interval identical to another, as the classical and PPI ones are with every item labelled, is not hidden)."""
    fig = go.Figure()
    judges = list(dict.fromkeys(df["judge"]))
    row = {j: i for i, j in enumerate(judges)}
    kinds = list(COLORS)
    for kind, color in COLORS.items():
        d = df[(df["kind"] == kind) & df["estimate"].notna()]
        if d.empty:
            continue
        est = d["estimate"].astype(float)
        has_ci = d["low"].notna() & d["high"].notna()
        error = None
        if has_ci.any():
            error = dict(
                type="data",
                symmetric=False,
                array=(d["high"].astype(float) - est).where(has_ci, 0).tolist(),
                arrayminus=(est - d["low"].astype(float)).where(has_ci, 0).tolist(),
                thickness=2,
                width=6,
            )
        shift = (kinds.index(kind) - (len(kinds) - 1) / 2) * ROW_SHIFT
        fig.add_trace(
            go.Scatter(
                x=est.tolist(),
                y=[row[j] + shift for j in d["judge"]],
                customdata=d["judge"].tolist(),
                hovertemplate="%{customdata}<br>" + kind + ": %{x:.1%}<extra></extra>",
                mode="markers",
                name=kind,
                marker=dict(color=color, size=10, symbol="diamond" if kind == "PPI" else "circle"),
                error_x=error,
                cliponaxis=False,  # a rate of 0% or 100% sits on the axis's end: draw the whole dot
            )
        )
    fig.update_layout(
        title=f"Consistency rate: the judge's own, from labels only, and PPI ({level:.0%} intervals)",
        # A little room past 0% and 100%, and a right margin, so both end ticks and a dot at either end show.
        xaxis=dict(title="share of consistent items", range=[-0.02, 1.02], dtick=0.2, tickformat=".0%"),
        yaxis=dict(
            title="",
            autorange="reversed",
            automargin=True,
            tickmode="array",
            tickvals=list(range(len(judges))),
            ticktext=judges,
            zeroline=False,
            showgrid=False,
        ),
        height=150 + 55 * max(df["judge"].nunique(), 1),
        margin=dict(l=10, r=30, t=90, b=50),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"),
    )
    return fig
