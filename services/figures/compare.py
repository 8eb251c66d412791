"""The forest plot of systems compared (Judges page, "Compare systems", and its report): pure plotly.

Each value is drawn where the table says it is: the rows of a system (classical, PPI) are kept apart by a small
offset on the row axis (a numeric axis labelled with the systems' names), never on the value axis.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORS = {
    "classical": "#1f77b4",
    "PPI": "#d62728",
    "PPI column: labels only": "#d62728",
    "difference": "#2e7d32",
    "no difference shown": "#757575",
}
# Where each kind sits within its system's row (in rows): apart enough to read, far from the next row.
OFFSETS = {"classical": -0.18, "PPI": 0.18, "PPI column: labels only": 0.18}
LABELS_ONLY = "labels only"


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


def _kinds(systems: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(trace name, column, rows): the classical rates, the PPI rates that rest on the judge's scores, and the
    PPI column's rates that are the labels' own (PPI not used), named as such."""
    basis = systems["PPI basis"] if "PPI basis" in systems else pd.Series("", index=systems.index)
    alone = basis.fillna("").astype(str).str.startswith(LABELS_ONLY)
    return [
        ("classical", "classical", systems),
        ("PPI", "PPI", systems[~alone]),
        ("PPI column: labels only", "PPI", systems[alone]),
    ]


def make_compare_figure(
    systems: pd.DataFrame, differences: pd.DataFrame, *, level: float = 0.95, reading: str = ""
) -> go.Figure:
    """Left: each system's classical and PPI rate with its interval (compare.systems_frame); a PPI column that
    rests on the labels alone is its own trace, "PPI column: labels only", with the reason on hover. Right:
    each pair's difference (a minus b) with its adjusted interval and a line at 0 (compare.differences_frame);
    a significant difference in green, the others grey. Rows are numbered 0, 1, ... top down, and labelled.
    `reading` ("live" or "planned"), when given, names the intervals' reading in both titles."""
    kind_of = {"live": "live, valid at every look", "planned": "fixed-sample, read once"}.get(reading, "")
    named = f", {kind_of}" if kind_of else ""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.18,
        subplot_titles=(
            f"Consistency rate ({level:.0%} intervals{named})",
            f"Difference a − b (adjusted intervals{named})",
        ),
    )
    names = systems["system"].astype(str).tolist()
    row = {name: k for k, name in enumerate(names)}
    for kind, col, rows in _kinds(systems):
        d = rows[rows[col].notna()]
        if d.empty:
            continue
        est = d[col].astype(float)
        basis = d["PPI basis"].fillna("").astype(str) if "PPI basis" in d and col == "PPI" else None
        names_ = d["system"].astype(str).tolist()
        fig.add_trace(
            go.Scatter(
                x=est.tolist(),
                y=[row[s] + OFFSETS[kind] for s in names_],
                customdata=names_ if basis is None else list(zip(names_, basis, strict=True)),
                hovertemplate=(
                    f"%{{customdata}}<br>{kind}: %{{x:.1%}}<extra></extra>"
                    if basis is None
                    else f"%{{customdata[0]}}<br>{kind}: %{{x:.1%}}<br>%{{customdata[1]}}<extra></extra>"
                ),
                mode="markers",
                name=kind,
                marker=dict(
                    color=COLORS[kind],
                    size=10,
                    symbol={"classical": "circle", "PPI": "diamond"}.get(kind, "diamond-open"),
                ),
                error_x=_error(est, d[f"{col} low"], d[f"{col} high"]),
                cliponaxis=False,
            ),
            row=1,
            col=1,
        )
    known = differences[differences["difference"].notna()]
    pairs = (differences["a"].astype(str) + " − " + differences["b"].astype(str)).tolist()
    for name, sig in (("difference", True), ("no difference shown", False)):
        d = known[known["significant"] == sig]
        if d.empty:
            continue
        est = d["difference"].astype(float)
        labels = (d["a"].astype(str) + " − " + d["b"].astype(str)).tolist()
        fig.add_trace(
            go.Scatter(
                x=est.tolist(),
                y=[pairs.index(p) for p in labels],
                customdata=labels,
                hovertemplate="%{customdata}: %{x:+.1%}<extra></extra>",
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
    for col, labels in ((1, names), (2, pairs)):
        fig.update_yaxes(
            tickmode="array",
            tickvals=list(range(len(labels))),
            ticktext=labels,
            range=[len(labels) - 0.5, -0.5],  # top down, as the table reads
            showgrid=False,
            zeroline=False,
            automargin=True,
            row=1,
            col=col,
        )
    fig.update_layout(
        height=180 + 45 * n_rows,
        margin=dict(l=10, r=30, t=90, b=50),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.12, yanchor="bottom"),
    )
    return fig
