"""Frames and figures for the factual-inconsistency methods; no Streamlit, so reports can reuse them.

The records are `services.nli.paradigms.result_record` dicts (and `services.runs.dce_record` for DCE runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from services import dcr
from services.nli import paradigms as nli

ALL_METHOD_LABELS = {**dcr.METHOD_LABELS, **nli.METHOD_LABELS}
VERDICT_MARK = {"consistent": "✓ consistent", "inconsistent": "✗ inconsistent", None: "? no verdict"}
COLORS = {"consistent": "#2e9d5b", "inconsistent": "#d13c3c", "unknown": "#8a94a6"}


def method_name(method: str, window: int | None = None) -> str:
    """A short column name: 'Sent-NLI (w=2)'."""
    short = {
        "dce-amc": "DCE-AMC",
        "paragraph": "Paragraph",
        "evidence": "Evidence checker",
        "summ-nli": "Summ-NLI",
        "sent-nli": "Sent-NLI",
        "qg-qa": "QG-QA",
    }.get(method, method)
    return f"{short} (w={window})" if window and method in nli.WINDOWED else short


def _tokens(usage: dict[str, Any]) -> int:
    return int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))


def overview_frame(records: Sequence[dict[str, Any]], usages: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per method: its verdict on the whole summary, score, units, parse failures, calls and tokens."""
    rows = []
    for rec, usage in zip(records, usages, strict=True):
        rows.append(
            {
                "method": method_name(rec["method"], rec.get("window")),
                "verdict": VERDICT_MARK.get(rec.get("label"), "? no verdict"),
                "score": rec.get("score"),
                "units judged": int(rec.get("n_units", 0)) - int(rec.get("n_failed", 0)),
                "parse failures": int(rec.get("n_failed", 0)),
                "calls": int(usage.get("calls", 0)),
                "cache hits": int(usage.get("cache_hits", 0)),
                "tokens": _tokens(usage),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["method", "verdict", "score", "units judged", "parse failures", "calls", "cache hits", "tokens"],
    )


def sentences_frame(sentences: Sequence[str], records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Summary sentences down, methods across: each method's verdict on each sentence.

    A method with no per-sentence verdict (Summ-NLI, the paragraph evaluator) shows its whole-summary verdict
    in every row, marked "(whole)".
    """
    data: dict[str, list[str]] = {"#": [str(i + 1) for i in range(len(sentences))], "sentence": list(sentences)}
    for rec in records:
        name = method_name(rec["method"], rec.get("window"))
        per = {int(s["index"]): s.get("verdict") or "unknown" for s in rec.get("sentences") or []}
        if not per and rec["method"] in ("summ-nli", "paragraph"):
            mark = VERDICT_MARK.get(rec.get("label"), "? no verdict")
            data[name] = [f"{mark} (whole)"] * len(sentences)
        else:
            data[name] = [VERDICT_MARK.get(per.get(i), "? no verdict") for i in range(len(sentences))]
    return pd.DataFrame(data)


def _context_text(ctx: dict[str, Any] | None) -> str:
    if not ctx:
        return "whole document"
    return "document sentences " + ", ".join(str(i + 1) for i in ctx.get("indices", []))


def windows_frame(record: dict[str, Any]) -> pd.DataFrame:
    """Sent-NLI: each window with its sentences, judgement, reasoning, parse failure and the context used."""
    rows = [
        {
            "window": f"{w['start'] + 1}" if w["end"] - w["start"] == 1 else f"{w['start'] + 1}–{w['end']}",
            "sentences": w["text"],
            "judgement": VERDICT_MARK.get(w.get("label"), "? no verdict"),
            "reasoning": w.get("reasoning") or "",
            "parse failure": w.get("error") or "",
            "context": _context_text(w.get("context")),
        }
        for w in record.get("windows", [])
    ]
    return pd.DataFrame(rows, columns=["window", "sentences", "judgement", "reasoning", "parse failure", "context"])


def qa_frame(record: dict[str, Any]) -> pd.DataFrame:
    """QG-QA: question, expected answer, the model's answer, reasoning and judgement, one row per pair."""
    rows = [
        {
            "window": int(p["window"]) + 1,
            "question": p.get("question") or "— (no question generated)",
            "expected answer": p.get("expected_answer") or "",
            "model's answer": p.get("answer") or "",
            "reasoning": p.get("reasoning") or "",
            "judgement": VERDICT_MARK.get(p.get("judgement"), "? no verdict"),
            "parse failure": p.get("error") or "",
            "context": _context_text(p.get("context")),
        }
        for p in record.get("pairs", [])
    ]
    cols = [
        "window",
        "question",
        "expected answer",
        "model's answer",
        "reasoning",
        "judgement",
        "parse failure",
        "context",
    ]
    return pd.DataFrame(rows, columns=cols)


def used_context(record: dict[str, Any]) -> list[tuple[str, list[int], list[str]]]:
    """Which document sentences were used, per unit, when the document exceeded the budget (Appendix B)."""
    out: list[tuple[str, list[int], list[str]]] = []
    s = record.get("summary")
    if s and s.get("context"):
        out.append(("whole summary", s["context"]["indices"], s["context"]["sentences"]))
    for w in record.get("windows", []):
        if w.get("context"):
            out.append((f"window {w['start'] + 1}", w["context"]["indices"], w["context"]["sentences"]))
    seen: set[int] = set()
    for p in record.get("pairs", []):
        if p.get("context") and p["window"] not in seen:
            seen.add(p["window"])
            out.append((f"QA window {p['window'] + 1}", p["context"]["indices"], p["context"]["sentences"]))
    return out


def make_method_cost_figure(df: pd.DataFrame) -> go.Figure:
    """Calls and tokens per method (columns method, calls, tokens): the efficiency trade-off, two axes."""
    fig = go.Figure()
    # "Sent-NLI (w=1)" on two lines: upright labels that fit under their bars instead of clipped slanted ones.
    x = [str(m).replace(" (", "<br>(") for m in df["method"]]
    fig.add_bar(x=x, y=df["calls"], name="calls", marker_color="#4c78a8", offsetgroup="calls")
    fig.add_bar(x=x, y=df["tokens"], name="tokens", marker_color="#f58518", yaxis="y2", offsetgroup="tokens")
    fig.update_xaxes(tickangle=0, automargin=True)
    fig.update_layout(
        barmode="group",
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        title={"text": "Cost per method", "font": {"size": 14}},
        yaxis={"title": "calls", "rangemode": "tozero"},
        yaxis2=_right_axis("tokens"),
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def make_length_accuracy_figure(df: pd.DataFrame) -> go.Figure:
    """Figure 2: accuracy of each method by document-length and summary-length bucket, side by side.

    `df` has columns method, kind ("document length" | "summary length"), bucket, n, accuracy, in bucket order.
    """
    from plotly.subplots import make_subplots

    kinds = ["document length", "summary length"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[k.capitalize() for k in kinds], shared_yaxes=True)
    palette = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d"]
    for k, method in enumerate(dict.fromkeys(df["method"])):
        for col, kind in enumerate(kinds, 1):
            d = df[(df["method"] == method) & (df["kind"] == kind)]
            if d.empty:
                continue
            fig.add_scatter(
                x=d["bucket"],
                y=d["accuracy"],
                mode="lines+markers",
                name=method,
                legendgroup=method,
                showlegend=col == 1,
                line={"color": palette[k % len(palette)]},
                customdata=d["n"],
                hovertemplate="%{x}: accuracy %{y:.2f} (n = %{customdata})<extra>" + method + "</extra>",
                row=1,
                col=col,
            )
    fig.update_yaxes(range=[0, 1.02], title_text="accuracy", row=1, col=1)
    # The page keeps the chart's toolbar visible at the top right: the subplot titles sit below it, not under it.
    fig.update_layout(height=370, margin={"l": 10, "r": 10, "t": 70, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


def make_methods_figure(df: pd.DataFrame) -> go.Figure:
    """Balanced accuracy per batch (columns method, balanced_accuracy) with calls per document on a second axis."""
    fig = go.Figure()
    fig.add_bar(x=df["method"], y=df["balanced_accuracy"], name="balanced accuracy", marker_color="#4c78a8")
    fig.add_scatter(
        x=df["method"],
        y=df["calls_per_doc"],
        name="calls per document",
        mode="markers",
        marker={"size": 11, "color": "#f58518", "symbol": "diamond"},
        yaxis="y2",
    )
    fig.update_layout(
        height=340,
        # The page keeps the chart's toolbar visible at the top right: the title sits below it, not under it.
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        title={
            "text": "Balanced accuracy and cost per method",
            "font": {"size": 14},
            "x": 0.01,
            "xanchor": "left",
            "yref": "container",
            "y": 1 - 40 / 340,
            "yanchor": "top",
        },
        yaxis={"title": "balanced accuracy", "range": [0, 1.02]},
        yaxis2=_right_axis("calls / document"),
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def _right_axis(title: str) -> dict:
    """A second y axis on the right, from 0, with no grid of its own.

    An overlaying axis syncs its ticks to the left one's grid (0.344, 0.687, ...): nice numbers instead.
    """
    return {
        "title": title,
        "overlaying": "y",
        "side": "right",
        "rangemode": "tozero",
        "showgrid": False,
        "tickmode": "auto",
        "nticks": 6,
    }
