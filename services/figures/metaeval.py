"""Meta-evaluation figures and table formatting: pure plotly and pandas, no Streamlit (reports draw with them)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from services import metaeval

CONSISTENT = "#2e9d5b"
INCONSISTENT = "#d13c3c"
PALETTE = ["#d9534f", "#f0ad4e", "#5b8def", "#2e9d5b", "#8e6bbf", "#8a94a6"]
ROUND_COLORS = ["#9aa5b8", "#f0ad4e", "#5b8def", "#2e9d5b", "#8e6bbf", "#d9534f"]


# -- figures (pure) ----------------------------------------------------------------------------------
def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 380) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 70},
        # Below the plot: the toolbar (with the PNG camera) sits top right and must stay clear.
        legend={"orientation": "h", "yanchor": "top", "y": -0.25, "xanchor": "left", "x": 0.0},
    )
    return fig


def make_scatter_figure(df: pd.DataFrame) -> go.Figure:
    """Model score against human score, one bubble per distinct pair sized by how many items share it."""
    d = df[["human_score", "score"]].apply(pd.to_numeric, errors="coerce").dropna()
    agg = d.groupby(["human_score", "score"], sort=True).size().reset_index(name="items")
    big = agg["items"].max() if len(agg) else 1
    trace = go.Scattergl if len(agg) > 2000 else go.Scatter
    fig = go.Figure(
        trace(
            x=agg["human_score"],
            y=agg["score"],
            mode="markers",
            name="items",
            customdata=agg["items"],
            marker={
                "size": (7 + 18 * np.sqrt(agg["items"] / big)).round(1),
                "color": "#5b8def",
                "opacity": 0.65,
                "line": {"width": 0.5, "color": "#2d4a8a"},
            },
            hovertemplate="human %{x:.3f} · model %{y:.3f}<br>%{customdata} item(s)<extra></extra>",
        )
    )
    _layout(fig, f"Score vs human score ({len(d):,} items)", "Human score", "Model score (Ẑ)")
    fig.update_xaxes(range=[-0.05, 1.05] if d.empty or d["human_score"].between(0, 1).all() else None)
    fig.update_yaxes(range=[-0.05, 1.05])
    return fig


def make_figure3_figure(frame: pd.DataFrame) -> go.Figure:
    """Figure 3: F1, precision and recall (consistent = positive) of each evaluator, grouped bars."""
    fig = go.Figure()
    metrics = [("f1", "F1"), ("precision", "Precision"), ("recall", "Recall")]
    for i, (_, row) in enumerate(frame.iterrows()):
        values = [row.get(m) for m, _ in metrics]
        values = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]
        fig.add_trace(
            go.Bar(
                x=[label for _, label in metrics],
                y=values,
                name=str(row["evaluator"]),
                marker_color=PALETTE[i % len(PALETTE)],
                text=["" if v is None else f"{v:.2f}" for v in values],
                textposition="outside",
                hovertemplate="%{x}: %{y:.3f}<extra>" + str(row["evaluator"]) + f" (n={int(row['n'])})</extra>",
            )
        )
    _layout(fig, "Figure 3: precision, recall and F1", "", "Score (consistent = positive)", height=420)
    fig.update_layout(barmode="group", legend={"y": -0.12})
    fig.update_yaxes(range=[0, 1.12])
    return fig


def make_share_figure(share: pd.DataFrame) -> go.Figure:
    """Figure 4 (left): of the items inconsistent at round 0, the share consistent after each round; one line per
    `label` if given."""
    fig = go.Figure()
    groups = share.groupby("label", sort=False) if "label" in share else [("items", share)]
    for i, (label, g) in enumerate(groups):
        fig.add_trace(
            go.Scatter(
                x=g["round"],
                y=g["share"] * 100,
                mode="lines+markers+text",
                name=str(label),
                text=[f"{v:.0%}" if pd.notna(v) else "" for v in g["share"]],
                textposition="top center",
                line={"color": PALETTE[(i + 2) % len(PALETTE)], "width": 2.5},
                customdata=np.stack([g["consistent"], g["n"]], axis=-1) if len(g) else None,
                hovertemplate="round %{x}: %{y:.1f}% (%{customdata[0]} of %{customdata[1]})<extra></extra>",
            )
        )
    _layout(fig, "Fully consistent after each round", "Round (0 = before any RAI rewrite)", "Items with score 1 (%)")
    fig.update_xaxes(tickmode="linear", dtick=1)
    fig.update_yaxes(range=[0, 108])
    return fig


# Ten bins of 0.1 for the scores below 1 and one bin for exactly 1 (fully consistent), so that 0.95 and 1
# never share a bar: the point of Figure 4 (right) is how many items reach 1.
BIN_LABELS = [f"{k / 10:.1f}" for k in range(10)] + ["1"]  # each bin from its label to the next


BIN_RANGES = [f"{k / 10:.1f} to {(k + 1) / 10:.1f}" for k in range(9)] + ["0.9 to below 1", "1 (fully consistent)"]


def score_bins(values: np.ndarray) -> np.ndarray:
    """Counts per BIN_LABELS bin of scores in [0, 1]."""
    v = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    v = v[np.isfinite(v)]
    idx = np.where(v >= metaeval.CONSISTENT_AT, 10, np.minimum(np.floor(v * 10 + 1e-9), 9)).astype(int)
    return np.bincount(idx, minlength=11)


def make_histograms_figure(scores: pd.DataFrame) -> go.Figure:
    """Figure 4 (right): how many items have each score, one bar series per round."""
    fig = go.Figure()
    rounds = sorted(scores["round"].unique()) if len(scores) else []
    for r in rounds:
        counts = score_bins(scores.loc[scores["round"] == r, "score"].to_numpy(dtype=float))
        fig.add_trace(
            go.Bar(
                x=BIN_LABELS,
                y=counts,
                name=f"round {int(r)}",
                marker_color=ROUND_COLORS[int(r) % len(ROUND_COLORS)],
                customdata=BIN_RANGES,
                hovertemplate="score %{customdata}: %{y} item(s)<extra>round " + str(int(r)) + "</extra>",
            )
        )
    _layout(fig, "Scores per round", "Score (Ẑ), bins of 0.1; 1 on its own", "Items")
    fig.update_layout(barmode="group", bargap=0.15)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=BIN_LABELS)
    return fig


# -- formatting ----------------------------------------------------------------------------------------
def fmt(x: Any, digits: int = 3) -> str:
    """A number for a table cell; — when missing."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)) or x is pd.NA:
        return "—"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    return f"{float(x):.{digits}f}"


def fmt_ci(value: Any, low: Any, high: Any, digits: int = 3) -> str:
    """'0.782 [0.701, 0.840]', the value alone without an interval, — without a value."""
    v = fmt(value, digits)
    if v == "—" or fmt(low) == "—":
        return v
    return f"{v} [{fmt(low, digits)}, {fmt(high, digits)}]"


def pct(x: Any) -> str:
    return "—" if fmt(x) == "—" else f"{float(x):.1%}"


def correlations_display(table: pd.DataFrame) -> pd.DataFrame:
    """The summary-level table for the screen: value with its interval in one cell."""
    names = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ (b)", "auroc": "AUROC"}
    return pd.DataFrame(
        {
            "statistic": table["statistic"].map(names).fillna(table["statistic"]),
            "n": table["n"].astype(int),
            "value [95% CI]": [
                fmt_ci(v, lo, hi) for v, lo, hi in table[["value", "ci_low", "ci_high"]].itertuples(False)
            ],
            "p": [("<0.001" if p is not None and p < 0.001 else fmt(p)) for p in table["p"]],
            "note": table["note"],
        }
    )


def baselines_display(table: pd.DataFrame) -> pd.DataFrame:
    """Tables 1-3 for the screen: r [CI] cells."""
    out = pd.DataFrame({"metric": table["metric"], "n": table["n"].fillna(0).astype(int)})
    for m, label in (
        ("pearson", "Pearson r"),
        ("spearman", "Spearman ρ"),
        ("kendall", "Kendall τ"),
        ("auroc", "AUROC"),
    ):
        out[label] = [
            fmt_ci(v, lo, hi) for v, lo, hi in table[[m, f"{m}_ci_low", f"{m}_ci_high"]].itertuples(index=False)
        ]
    out["note"] = table["note"].fillna("")
    return out
