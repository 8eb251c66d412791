"""DCR round figures: pure pandas and plotly, no Streamlit (reports draw with them)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from services.dcr import Round


def rounds_frame(rounds: list[Round]) -> pd.DataFrame:
    """One row per round: score, judged, consistent, inconsistent, unknown."""
    rows = []
    for r in rounds:
        ev = r.evaluation
        rows.append(
            {
                "round": r.index,
                "score": ev.score.z_hat if ev.score else None,
                "consistent": sum(s.verdict == "consistent" for s in ev.sentences),
                "inconsistent": sum(s.verdict == "inconsistent" for s in ev.sentences),
                "unknown": sum(s.verdict == "unknown" for s in ev.sentences),
                "rewrites": sum(rw.changed for rw in r.rewrites),
            }
        )
    return pd.DataFrame(rows)


def make_rounds_figure(df: pd.DataFrame) -> go.Figure:
    """Stacked verdict counts per round with the score Ẑ on a second axis."""
    fig = go.Figure()
    colors = {"consistent": "#2e9d5b", "inconsistent": "#d13c3c", "unknown": "#8a94a6"}
    for name, color in colors.items():
        fig.add_bar(x=df["round"], y=df[name], name=name, marker_color=color)
    fig.add_scatter(
        x=df["round"], y=df["score"], name="score Ẑ", yaxis="y2", mode="lines+markers", line={"color": "#2f6fdf"}
    )
    fig.update_layout(
        barmode="stack",
        height=300,
        margin={"l": 10, "r": 40, "t": 30, "b": 10},
        xaxis={"title": "round", "dtick": 1},
        yaxis={"title": "sentences"},
        yaxis2={
            "title": {"text": "Ẑ", "standoff": 8},
            "overlaying": "y",
            "side": "right",
            "range": [0, 1.05],
            "tickvals": [0, 0.25, 0.5, 0.75, 1],
            "showgrid": False,
        },
        legend={"orientation": "h", "y": -0.25, "x": 0},
    )
    return fig
