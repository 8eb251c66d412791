"""DHP figures, pure (no Streamlit): discernment bars with the line at D = 1 (Figure 4) and expert weights
(Figure 6). The page and the HTML report builder both use them."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

THRESHOLD_COLOR = "#d13c3c"
MODEL_COLORS = ["#5b8def", "#f0ad4e", "#2e9d5b", "#8e6bbf", "#d9534f", "#8a94a6", "#17becf", "#bcbd22"]
SCORE_COLORS = {
    "D_avg": "#5b8def",
    "D_min": "#a9c1f5",
    "D_EW_avg": "#2e9d5b",
    "D_EW_min": "#9fd6b5",
    "D_wilson_avg": "#8e6bbf",
    "D_wilson_min": "#cbb8e6",
}
METRIC_COLORS = ["#5b8def", "#f0ad4e", "#2e9d5b", "#8e6bbf", "#d9534f", "#8a94a6"]


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 400) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        barmode="group",
        margin={"l": 60, "r": 20, "t": 50, "b": 90},
        legend={"orientation": "h", "yanchor": "top", "y": -0.3, "xanchor": "left", "x": 0.0},
    )
    return fig


def _threshold(fig: go.Figure) -> None:
    fig.add_hline(
        y=1.0,
        line={"color": THRESHOLD_COLOR, "dash": "dash", "width": 2},
        annotation_text="D = 1 (p = 0.05)",
        annotation_position="top left",
        annotation_font={"color": THRESHOLD_COLOR, "size": 11},
    )


def make_discernment_figure(df: pd.DataFrame) -> go.Figure:
    """Figure 4: per model, bars for D_avg, D_min, D_EW_avg, D_EW_min (the paper's) and D_wilson_avg,
    D_wilson_min (an extra); the red dashed
    line at D = 1, the threshold of every one of them (p = 0.05).

    `df` has columns model, score (a key of SCORE_COLORS) and value (None: not available)."""
    fig = go.Figure()
    models = list(dict.fromkeys(df["model"])) if len(df) else []
    for score, color in SCORE_COLORS.items():
        part = df[df["score"] == score].set_index("model") if len(df) else pd.DataFrame()
        if part.empty:
            continue
        values = [part["value"].get(m) for m in models]
        fig.add_bar(
            x=models,
            y=[None if v is None or pd.isna(v) else float(v) for v in values],
            name=score.replace("_", " "),
            marker_color=color,
            hovertemplate="%{x}<br>" + score + " = %{y:.2f}<extra></extra>",
        )
    _threshold(fig)
    return _layout(
        fig,
        "Discernment of each evaluator (higher is better; above the line: significant)",
        "model",
        "discernment score D",
    )


def make_perturbation_figure(df: pd.DataFrame) -> go.Figure:
    """D (or D_EW) per perturbation, models side by side, with the line at D = 1.

    `df` has columns model, perturbation, value (and optionally label for the x axis)."""
    fig = go.Figure()
    if len(df):
        order = list(dict.fromkeys(df["perturbation"]))
        labels = df.drop_duplicates("perturbation").set_index("perturbation").get("label")
        x = [labels.get(p, p) if labels is not None else p for p in order]
        for i, (model, part) in enumerate(df.groupby("model", sort=False)):
            vals = part.set_index("perturbation")["value"]
            fig.add_bar(
                x=x,
                y=[None if pd.isna(vals.get(p)) else float(vals.get(p)) for p in order],
                name=str(model),
                marker_color=MODEL_COLORS[i % len(MODEL_COLORS)],
                hovertemplate="%{x}<br>" + str(model) + ": D = %{y:.2f}<extra></extra>",
            )
    _threshold(fig)
    fig = _layout(fig, "Discernment per perturbation", "", "D", height=470)
    # Long rotated labels below the axis: the legend goes above the plot, clear of them.
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 0.9},
        margin={"l": 60, "r": 20, "t": 70, "b": 150},
    )
    fig.update_xaxes(tickangle=-35, automargin=True)
    return fig


def make_weights_figure(df: pd.DataFrame) -> go.Figure:
    """Figure 6: the expert weights of each quality issue, stacked per metric (shares sum to 1 per issue).

    `df` has columns issue, metric, weight (None: no vote yet) and votes."""
    fig = go.Figure()
    if len(df):
        issues = list(dict.fromkeys(df["issue"]))
        for i, (metric, part) in enumerate(df.groupby("metric", sort=False)):
            p = part.set_index("issue")
            fig.add_bar(
                y=issues,
                x=[None if pd.isna(p["weight"].get(q)) else float(p["weight"].get(q)) for q in issues],
                customdata=[int(p["votes"].get(q, 0)) for q in issues],
                name=str(metric),
                orientation="h",
                marker_color=METRIC_COLORS[i % len(METRIC_COLORS)],
                hovertemplate="%{y}<br>" + str(metric) + ": %{x:.0%} (%{customdata} votes)<extra></extra>",
            )
    fig = _layout(
        fig,
        "Expert weights: which metric each quality issue impacts most",
        "share of votes",
        "",
        height=max(300, 60 + 42 * df["issue"].nunique()) if len(df) else 300,
    )
    fig.update_layout(barmode="stack", margin={"l": 200, "r": 20, "t": 50, "b": 90}, legend_traceorder="normal")
    fig.update_xaxes(range=[0, 1], tickformat=".0%")
    fig.update_yaxes(autorange="reversed")
    return fig


def overall_frame(results) -> pd.DataFrame:
    """Long rows model, score, value for `make_discernment_figure`."""
    rows = []
    for r in results:
        scores = (
            ("D_avg", r.d_avg),
            ("D_min", r.d_min),
            ("D_EW_avg", r.d_ew_avg),
            ("D_EW_min", r.d_ew_min),
            ("D_wilson_avg", r.d_wilson_avg),
            ("D_wilson_min", r.d_wilson_min),
        )
        for score, value in scores:
            rows.append({"model": r.model, "score": score, "value": value})
    return pd.DataFrame(rows, columns=["model", "score", "value"])
