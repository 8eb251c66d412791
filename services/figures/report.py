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
