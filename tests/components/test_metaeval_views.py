"""Meta-evaluation figures (pure plotly) and formatting, checked through fig.data and fig.layout."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from components import metaeval_views as mv


def test_scatter_bubbles_count_items_sharing_a_pair():
    df = pd.DataFrame({"human_score": [1.0, 1.0, 0.5, 0.0, None], "score": [1.0, 1.0, 0.5, 0.25, 0.5]})
    fig = mv.make_scatter_figure(df)
    (trace,) = fig.data
    pairs = sorted(zip(trace.x, trace.y, trace.customdata, strict=True))
    assert pairs == [(0.0, 0.25, 1), (0.5, 0.5, 1), (1.0, 1.0, 2)]
    assert trace.marker.size[list(trace.customdata).index(2)] > trace.marker.size[0]
    assert fig.layout.xaxis.title.text == "Human score" and "4 items" in fig.layout.title.text


def test_scatter_uses_webgl_for_many_distinct_pairs():
    n = 2500
    df = pd.DataFrame({"human_score": [i / n for i in range(n)], "score": [(i % 7) / 7 for i in range(n)]})
    assert mv.make_scatter_figure(df).data[0].type == "scattergl"


def test_figure3_groups_f1_precision_recall_by_evaluator():
    frame = pd.DataFrame(
        [
            {"evaluator": "DCE + AMC (rule)", "n": 8, "f1": 0.8, "precision": 0.8, "recall": 0.8},
            {"evaluator": "DCE without AMC", "n": 8, "f1": 0.75, "precision": 1.0, "recall": 0.6},
            {"evaluator": "Paragraph level", "n": 8, "f1": None, "precision": math.nan, "recall": 0.0},
        ]
    )
    fig = mv.make_figure3_figure(frame)
    assert [t.name for t in fig.data] == frame["evaluator"].tolist()
    assert all(list(t.x) == ["F1", "Precision", "Recall"] for t in fig.data)
    assert list(fig.data[1].y) == [0.75, 1.0, 0.6]
    assert list(fig.data[2].y) == [None, None, 0.0]
    assert fig.layout.barmode == "group" and "consistent = positive" in fig.layout.yaxis.title.text


def test_share_figure_has_one_line_per_batch_in_percent():
    share = pd.DataFrame(
        {
            "round": [0, 1, 0, 1],
            "n": [5, 5, 4, 4],
            "consistent": [1, 3, 2, 4],
            "share": [0.2, 0.6, 0.5, 1.0],
            "label": ["batch #1", "batch #1", "batch #2", "batch #2"],
        }
    )
    fig = mv.make_share_figure(share)
    assert [t.name for t in fig.data] == ["batch #1", "batch #2"]
    assert list(fig.data[0].y) == pytest.approx([20.0, 60.0])
    assert list(fig.data[1].text) == ["50%", "100%"]
    assert fig.layout.xaxis.dtick == 1


def test_histograms_bin_by_tenths_with_a_bar_of_its_own_for_one():
    scores = pd.DataFrame({"round": [0, 0, 0, 0, 1, 1, 1, 1], "score": [0.0, 0.5, 0.95, 1.0, 1.0, 1.0, 0.5, 1.0]})
    fig = mv.make_histograms_figure(scores)
    assert [t.name for t in fig.data] == ["round 0", "round 1"]
    r0, r1 = (list(t.y) for t in fig.data)
    assert len(r0) == 11 and sum(r0) == 4 and sum(r1) == 4
    assert r0[-1] == 1 and r0[-2] == 1 and r1[-1] == 3  # 0.95 is not fully consistent: it is not in the bar of 1
    assert r0[0] == 1 and r0[5] == 1
    assert list(fig.data[0].x)[-2:] == ["0.9", "1"] and list(fig.data[0].customdata)[-1] == "1 (fully consistent)"
    assert list(mv.score_bins([0.1, 0.7, 0.6999999, 2 / 3, 0.2])) == [0, 1, 1, 0, 0, 0, 2, 1, 0, 0, 0]


def test_empty_inputs_give_empty_figures():
    assert not mv.make_histograms_figure(pd.DataFrame(columns=["round", "score"])).data
    assert mv.make_scatter_figure(pd.DataFrame(columns=["human_score", "score"])).data[0].x is not None


def test_formatting():
    assert mv.fmt_ci(0.78234, 0.7011, 0.84) == "0.782 [0.701, 0.840]"
    assert mv.fmt_ci(0.5, None, None) == "0.500"
    assert mv.fmt_ci(None, 0.1, 0.2) == "—"
    assert mv.fmt(math.nan) == "—" and mv.fmt(12345) == "12,345"
    assert mv.pct(0.8829) == "88.3%" and mv.pct(None) == "—"
    table = pd.DataFrame(
        {
            "statistic": ["pearson", "auroc"],
            "n": [8, 8],
            "value": [0.9, 0.8],
            "ci_low": [0.2, None],
            "ci_high": [1.0, None],
            "p": [0.0001, None],
            "note": ["", ""],
        }
    )
    shown = mv.correlations_display(table)
    assert shown["statistic"].tolist() == ["Pearson r", "AUROC"]
    assert shown["value [95% CI]"].tolist() == ["0.900 [0.200, 1.000]", "0.800"]
    assert shown["p"].tolist() == ["<0.001", "—"]
