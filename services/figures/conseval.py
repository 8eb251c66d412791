"""ConsEval figures as pure functions (no Streamlit): grouped bars (Figs 2-3), the Table 5 matrix, the radar (Fig 4)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

GRAN_COLORS = {"none": "#9aa5b1", "short": "#4c8bd6", "long": "#1f3f77"}
UNDEFINED_HEIGHT = 1.0  # an undefined α is drawn as a pale hatched bar this tall (the top of α's range)
MODEL_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _bars(df: pd.DataFrame, x: str, title: str, x_title: str, y_title: str = "Krippendorff's α") -> go.Figure:
    """Bars by `x` and definition, one panel per criterion, with 95% interval whiskers; undefined values say why."""
    criteria = list(dict.fromkeys(df["criterion"])) or [""]
    fig = make_subplots(rows=1, cols=len(criteria), subplot_titles=criteria, shared_yaxes=True)
    grans = [g for g in GRAN_COLORS if g in set(df["granularity"])]
    for col, crit in enumerate(criteria, start=1):
        d = df[df["criterion"] == crit]
        for gran in grans:
            g = d[d["granularity"] == gran]
            vals = [_num(v) for v in g["value"]]
            hi = [
                None if v is None or _num(h) is None else _num(h) - v for v, h in zip(vals, g["ci_high"], strict=True)
            ]
            lo = [
                None if v is None or _num(lw) is None else v - _num(lw) for v, lw in zip(vals, g["ci_low"], strict=True)
            ]
            hover = [
                f"{xv} · {gran}<br>α = {v:.3f} (n = {n})" if v is not None else f"{xv} · {gran}<br>undefined: {note}"
                for xv, v, n, note in zip(g[x], vals, g["n"], g["note"].fillna(""), strict=True)
            ]
            fig.add_trace(
                go.Bar(
                    x=list(g[x]),
                    # An undefined value has no height to draw: a zero-height bar shows no hatching at all. It
                    # gets a pale hatched bar over the whole α range instead, labelled n/a, its reason on hover.
                    y=[v if v is not None else UNDEFINED_HEIGHT for v in vals],
                    name=f"definition: {gran}",
                    legendgroup=gran,
                    showlegend=col == 1,
                    marker_color=[GRAN_COLORS[gran] if v is not None else "rgba(255,255,255,0)" for v in vals],
                    marker_line=dict(color=GRAN_COLORS[gran], width=[0 if v is not None else 1 for v in vals]),
                    marker_pattern=dict(
                        shape=["" if v is not None else "/" for v in vals],
                        fgcolor=GRAN_COLORS[gran],
                        fgopacity=0.55,
                        size=7,
                    ),
                    error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo, thickness=1.2, width=3),
                    text=[f"{v:.2f}" if v is not None else "n/a" for v in vals],
                    textposition="outside",
                    hovertext=hover,
                    hoverinfo="text",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text=x_title, row=1, col=col)
    fig.update_yaxes(title_text=y_title, row=1, col=1)
    fig.update_yaxes(range=[min(-0.2, _min(df)), 1.15])
    fig.update_layout(
        title=title,
        barmode="group",
        height=420,
        margin=dict(t=70, l=60, r=20, b=60),
        legend=dict(orientation="h", y=-0.25),
        template="plotly_white",
    )
    return fig


def _min(df: pd.DataFrame) -> float:
    vals = pd.to_numeric(df.get("ci_low", pd.Series(dtype=float)), errors="coerce").dropna()
    return float(vals.min()) - 0.05 if len(vals) else 0.0


def make_sc_figure(df: pd.DataFrame) -> go.Figure:
    """Figure 2: self-consistency by scale and definition (rows of kind SC for one model and method)."""
    d = df[df["kind"] == "SC"]
    return _bars(d, "scale", "Self-consistency: α across the n samples of each item", "scale")


def make_ic_figure(df: pd.DataFrame) -> go.Figure:
    """Figure 3: inter-consistency by case and definition; greedy vs sampled (GS) gets a bar per scale, since
    an average over scales could hide a negative α behind a positive one."""
    d = df[df["kind"].isin(["IC1", "IC2", "IC3", "IC4"])]
    d = d.assign(case=d["kind"])
    gs = df[df["kind"] == "GS"]
    if len(gs):
        d = pd.concat([d, gs.assign(case="GS · " + gs["scale"].astype(str))], ignore_index=True)
    return _bars(
        d,
        "case",
        "Inter-consistency: α between scales (IC, mapped onto [0, 1]) and greedy vs sampled on each scale (GS)",
        "case",
    )


def make_matrix_figure(matrix: pd.DataFrame) -> go.Figure:
    """Table 5 as a heatmap: rows model · method, columns SC, IC1-IC4, GS, accuracy."""
    z = matrix.to_numpy(dtype=float) if len(matrix) else np.zeros((0, 0))
    text = [[("–" if not np.isfinite(v) else f"{v:.2f}") for v in row] for row in z]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(matrix.columns),
            y=list(matrix.index),
            text=text,
            texttemplate="%{text}",
            colorscale="RdBu",
            zmin=-1,
            zmax=1,
            colorbar=dict(title="α / r"),
            hoverongaps=False,
        )
    )
    fig.update_layout(
        title="Model × method (Table 5): mean over definitions and scales",
        height=max(260, 60 + 38 * len(matrix)),
        margin=dict(t=60, l=200, r=20, b=40),
        template="plotly_white",
    )
    fig.update_yaxes(autorange="reversed")
    return fig


def make_radar_figure(radar: pd.DataFrame) -> go.Figure:
    """Figure 4: one radar per aspect (SC, IC, accuracy) across criteria, one trace per model."""
    aspects = ["SC", "IC", "Accuracy"]
    fig = make_subplots(rows=1, cols=3, specs=[[{"type": "polar"}] * 3], subplot_titles=aspects)
    models = list(dict.fromkeys(radar["model"]))
    for i, model in enumerate(models):
        d = radar[radar["model"] == model]
        theta = list(d["criterion"]) + list(d["criterion"][:1])
        for col, aspect in enumerate(aspects, start=1):
            r = [_num(v) for v in d[aspect]]  # an undefined value is a gap, not a zero
            fig.add_trace(
                go.Scatterpolar(
                    r=r + r[:1],
                    theta=theta,
                    name=model,
                    legendgroup=model,
                    showlegend=col == 1,
                    fill="toself",
                    opacity=0.55,
                    line_color=MODEL_COLORS[i % len(MODEL_COLORS)],
                ),
                row=1,
                col=col,
            )
    values = [_num(v) for a in aspects for v in radar[a]]
    low = min([v for v in values if v is not None] + [0.0])
    fig.update_polars(
        radialaxis=dict(range=[min(-0.2, low - 0.1), 1], angle=90, tickangle=90, tickfont=dict(size=9)),
        angularaxis=dict(direction="clockwise", rotation=90, tickfont=dict(size=11)),
    )
    fig.update_annotations(y=1.1, font=dict(size=14))  # the aspect names, clear of the top criterion's label
    fig.update_layout(
        title=dict(
            text="ConsEval across criteria (Figure 4): IC and accuracy averaged, base prompt", y=0.98, yanchor="top"
        ),
        height=480,
        margin=dict(t=140, l=50, r=50, b=40),
        legend=dict(orientation="h", y=-0.1),
    )
    return fig
