"""Calibration figures: the reliability diagram and the risk-coverage curve (pure plotly, no Streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

BLUE, GREY, GREEN = "#5b8def", "#8a94a6", "#2e9d5b"


def _layout(fig: go.Figure, title: str, x: str, y: str, subtitle: str = "") -> go.Figure:
    # A short title, the details below it: the toolbar sits top right, over any long title in a narrow column.
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}, "subtitle": {"text": subtitle}},
        xaxis_title=x,
        yaxis_title=y,
        height=400,
        margin={"l": 60, "r": 20, "t": 70, "b": 70},
        legend={"orientation": "h", "yanchor": "top", "y": -0.25, "xanchor": "left", "x": 0.0},
    )
    return fig


def make_reliability_figure(bins: pd.DataFrame, *, ece: float | None = None, n: int | None = None) -> go.Figure:
    """Reliability diagram: each bin's share consistent (Wilson 95% interval) against its mean score, sized by n."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated", line={"color": GREY, "dash": "dash"})
    )
    if len(bins):
        obs = bins["observed"].to_numpy(dtype=float)
        low = bins["ci_low"].to_numpy(dtype=float)
        high = bins["ci_high"].to_numpy(dtype=float)
        counts = bins["n"].to_numpy(dtype=float)
        fig.add_trace(
            go.Scatter(
                x=bins["mean_score"],
                y=obs,
                mode="lines+markers",
                name="observed share consistent (95% interval)",
                line={"color": BLUE, "width": 2},
                marker={"size": (6 + 14 * np.sqrt(counts / counts.max())).round(1), "color": BLUE},
                error_y={"type": "data", "symmetric": False, "array": high - obs, "arrayminus": obs - low},
                cliponaxis=False,  # a bin at 0 or 1 sits on the axis's end: draw its whole dot, sized by n
                customdata=np.stack([bins["n"], bins["lo"], bins["hi"], low, high], axis=-1),
                hovertemplate="scores %{customdata[1]:.1f}-%{customdata[2]:.1f}: mean %{x:.3f}, "
                "consistent %{y:.3f} [%{customdata[3]:.3f}, %{customdata[4]:.3f}], n=%{customdata[0]}<extra></extra>",
            )
        )
    extra = []
    if n is not None:
        extra.append(f"n = {n:,}")
    if ece is not None:
        extra.append(f"ECE {ece:.3f}")
    _layout(fig, "Reliability", "Score, as a probability", "Share consistent", " · ".join(extra))
    fig.update_xaxes(range=[-0.02, 1.02])
    fig.update_yaxes(range=[-0.02, 1.05])
    return fig


def make_risk_coverage_figure(curve: pd.DataFrame, own: tuple[float, float | None, int] | None = None) -> go.Figure:
    """Accuracy on the decided items against the share decided, most confident first (95% band); `own`, the
    judge's own share decided and accuracy, as a marker."""
    fig = go.Figure()
    if len(curve):
        cov = curve["coverage"].to_numpy(dtype=float) * 100
        fig.add_trace(
            go.Scatter(
                x=np.r_[cov, cov[::-1]],
                y=np.r_[curve["ci_high"].to_numpy(dtype=float), curve["ci_low"].to_numpy(dtype=float)[::-1]],
                fill="toself",
                fillcolor="rgba(91,141,239,0.15)",
                line={"width": 0},
                hoverinfo="skip",
                name="95% interval",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=cov,
                y=curve["accuracy"],
                mode="lines+markers",
                name="accuracy on the decided",
                line={"color": BLUE, "width": 2, "shape": "hv"},
                marker={"size": 5},
                customdata=np.stack([curve["n_decided"], curve["balanced_accuracy"].astype(float)], axis=-1),
                hovertemplate="%{x:.1f}% decided (n=%{customdata[0]}): accuracy %{y:.3f}, "
                "balanced %{customdata[1]:.3f}<extra></extra>",
            )
        )
    if own is not None and own[1] is not None:
        fig.add_trace(
            go.Scatter(
                x=[own[0] * 100],
                y=[own[1]],
                mode="markers",
                name=f"its own verdicts (n={own[2]:,})",
                marker={"size": 13, "symbol": "diamond", "color": GREEN},
                hovertemplate="its own verdicts: %{x:.1f}% decided, accuracy %{y:.3f}<extra></extra>",
            )
        )
    n = int(curve["n_decided"].max()) if len(curve) else 0
    _layout(fig, "Risk-coverage", "Share decided (%)", "Accuracy", f"n = {n:,} · least sure left undecided first")
    fig.update_xaxes(range=[0, 101])
    fig.update_yaxes(range=[0, 1.05])
    return fig
