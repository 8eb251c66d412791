"""The forest plot of systems compared (Judges page, "Compare systems", and its report): pure plotly."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORS = {"classical": "#1f77b4", "PPI": "#d62728", "difference": "#2e7d32", "no difference shown": "#757575"}


def _error(est: pd.Series, low: pd.Series, high: pd.Series) -> dict | None:
    has = low.notna() & high.notna()
    if not has.any():
        return None
    return dict(
        type="data",
        symmetric=False,
        array=(high.astype(float) - est).where(has, 0).tolist(),
        arrayminus=(est - low.astype(float)).where(has, 0).tolist(),
        thickness=2,
        width=6,
    )


def make_compare_figure(systems: pd.DataFrame, differences: pd.DataFrame, *, level: float = 0.95) -> go.Figure:
    """Left: each system's classical and PPI rate with its interval (compare.systems_frame). Right: each pair's
    difference (a minus b) with its adjusted interval and a line at 0 (compare.differences_frame); a
    significant difference in green, the others grey."""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.18,
        subplot_titles=(f"Consistency rate ({level:.0%} intervals)", "Difference a − b (adjusted intervals)"),
    )
    for kind, col in (("classical", "classical"), ("PPI", "PPI")):
        d = systems[systems[col].notna()]
        if d.empty:
            continue
        est = d[col].astype(float)
        fig.add_trace(
            go.Scatter(
                x=est.tolist(),
                y=d["system"].tolist(),
                mode="markers",
                name=kind,
                marker=dict(color=COLORS[kind], size=10, symbol="diamond" if kind == "PPI" else "circle"),
                error_x=_error(est, d[f"{col} low"], d[f"{col} high"]),
                offsetgroup=kind,
                cliponaxis=False,
            ),
            row=1,
            col=1,
        )
    known = differences[differences["difference"].notna()]
    for name, sig in (("difference", True), ("no difference shown", False)):
        d = known[known["significant"] == sig]
        if d.empty:
            continue
        est = d["difference"].astype(float)
        fig.add_trace(
            go.Scatter(
                x=est.tolist(),
                y=(d["a"] + " − " + d["b"]).tolist(),
                mode="markers",
                name=name,
                marker=dict(color=COLORS[name], size=10, symbol="square"),
                error_x=_error(est, d["low"], d["high"]),
                cliponaxis=False,
            ),
            row=1,
            col=2,
        )
    fig.add_vline(x=0, line=dict(color="#424242", dash="dot", width=1), row=1, col=2)
    n_rows = max(len(systems), len(differences), 1)
    fig.update_xaxes(range=[-0.02, 1.02], dtick=0.2, tickformat=".0%", title="share of consistent items", row=1, col=1)
    fig.update_xaxes(
        tickformat="+.0%", title="difference in the share of consistent items", zeroline=False, row=1, col=2
    )
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_layout(
        scattermode="group",
        height=180 + 45 * n_rows,
        margin=dict(l=10, r=30, t=90, b=50),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.12, yanchor="bottom"),
    )
    return fig
