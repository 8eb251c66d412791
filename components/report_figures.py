"""Figures that only reports draw (pure plotly; no Streamlit)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

PALETTE = ["#5b8def", "#d9534f", "#2e9d5b", "#f0ad4e", "#8e6bbf", "#8a94a6"]


def _num(v: object) -> float | None:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def make_method_accuracy_figure(df: pd.DataFrame) -> go.Figure:
    """Balanced accuracy per method with its 95% interval (columns method, value, ci_low, ci_high, n)."""
    vals = [_num(v) for v in df["value"]]
    hi = [None if v is None or _num(h) is None else _num(h) - v for v, h in zip(vals, df["ci_high"], strict=True)]
    lo = [None if v is None or _num(lw) is None else v - _num(lw) for v, lw in zip(vals, df["ci_low"], strict=True)]
    fig = go.Figure(
        go.Bar(
            x=list(df["method"]),
            y=[v if v is not None else 0.0 for v in vals],
            marker_color=[PALETTE[i % len(PALETTE)] for i in range(len(df))],
            error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "thickness": 1.2},
            text=[f"{v:.3f}" if v is not None else "n/a" for v in vals],
            textposition="outside",
            customdata=list(df["n"]),
            hovertemplate="%{x}: %{y:.3f} (n = %{customdata})<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": "Balanced accuracy against the gold label (95% interval)", "font": {"size": 15}},
        yaxis={"title": "balanced accuracy", "range": [0, 1.1]},
        height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 60},
        template="plotly_white",
    )
    return fig


def make_survey_weights_figure(df: pd.DataFrame) -> go.Figure:
    """Expert weights per quality issue: stacked vote shares per metric (columns issue, metric, weight, votes)."""
    fig = go.Figure()
    for i, (metric, g) in enumerate(df.groupby("metric", sort=False)):
        fig.add_bar(
            x=list(g["issue"]),
            y=[_num(v) or 0.0 for v in g["weight"]],
            name=str(metric),
            marker_color=PALETTE[i % len(PALETTE)],
            customdata=list(g["votes"]),
            hovertemplate="%{x}<br>" + str(metric) + ": %{y:.0%} (%{customdata} vote(s))<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        title={"text": "Expert weights: which metric each quality issue impacts most", "font": {"size": 15}},
        yaxis={"title": "share of votes", "range": [0, 1.05], "tickformat": ".0%"},
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 120},
        legend={"orientation": "h", "y": -0.45},
        template="plotly_white",
    )
    return fig


def make_discernment_figure(df: pd.DataFrame) -> go.Figure:
    """DHP discernment per perturbation: D and, when expert weights exist, D_EW (columns perturbation, D, D_EW)."""
    fig = go.Figure()
    for i, col in enumerate(c for c in ("D", "D_EW") if c in df and df[c].notna().any()):
        vals = [_num(v) for v in df[col]]
        fig.add_bar(
            x=list(df["perturbation"]),
            y=[v if v is not None else 0.0 for v in vals],
            name=col,
            marker_color=PALETTE[i],
            text=[f"{v:.2f}" if v is not None else "n/a" for v in vals],
            textposition="outside",
        )
    fig.add_hline(y=1.0, line_dash="dot", line_color="#8a94a6", annotation_text="D = 1 (p = 0.05)")
    fig.update_layout(
        barmode="group",
        title={
            "text": "Discernment per perturbation (higher: the evaluator tells the damage apart)",
            "font": {"size": 15},
        },
        yaxis={"title": "D = log_0.05(p)"},
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 110},
        legend={"orientation": "h", "y": -0.35},
        template="plotly_white",
    )
    return fig
