"""DHP figures, through fig.data and fig.layout: the line at D = 1, models side by side, the weights of Figure 6."""

from __future__ import annotations

import pandas as pd
import pytest

from services import dhp
from services.figures import dhp as figs


def _line_at_one(fig) -> bool:
    return any(s.type == "line" and s.y0 == 1.0 and s.y1 == 1.0 for s in fig.layout.shapes)


def test_discernment_figure_has_six_scores_per_model_and_the_threshold():
    res = [
        dhp.DiscernmentResult("gpt", (), 3.2, 1.4, 3.0, 0.8, d_wilson_avg=3.6, d_wilson_min=1.8),
        dhp.DiscernmentResult("llama", (), 0.7, 0.1, None, None, d_wilson_avg=1.1, d_wilson_min=0.5),
    ]
    fig = figs.make_discernment_figure(figs.overall_frame(res))
    assert [t.name for t in fig.data] == ["D avg", "D min", "D EW avg", "D EW min", "D wilson avg", "D wilson min"]
    assert list(fig.data[0].x) == ["gpt", "llama"] and list(fig.data[0].y) == [3.2, 0.7]
    assert list(fig.data[4].y) == [3.6, 1.1]  # Wilson's D, the extra, after the paper's, on the same threshold
    assert list(fig.data[2].y) == [3.0, None]  # no expert weights for llama: no bar, not a zero
    assert _line_at_one(fig) and fig.layout.barmode == "group"


def test_perturbation_figure_puts_models_side_by_side():
    df = pd.DataFrame(
        [
            {"model": "a", "perturbation": "typo:minor", "label": "C: Minor Random Typos", "value": 2.0},
            {"model": "a", "perturbation": "reorder", "label": "S: Reordering", "value": 0.5},
            {"model": "b", "perturbation": "typo:minor", "label": "C: Minor Random Typos", "value": None},
            {"model": "b", "perturbation": "reorder", "label": "S: Reordering", "value": 1.5},
        ]
    )
    fig = figs.make_perturbation_figure(df)
    assert [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[0].x) == ["C: Minor Random Typos", "S: Reordering"]
    assert list(fig.data[1].y) == [None, 1.5] and _line_at_one(fig)


def test_weights_figure_stacks_vote_shares_per_issue():
    df = pd.DataFrame(
        [
            {"issue": "Grammatical Errors", "metric": "Coherence", "votes": 4, "weight": 0.4},
            {"issue": "Grammatical Errors", "metric": "Consistency", "votes": 1, "weight": 0.1},
            {"issue": "Grammatical Errors", "metric": "Fluency", "votes": 5, "weight": 0.5},
            {"issue": "Random Typos", "metric": "Coherence", "votes": 0, "weight": None},
            {"issue": "Random Typos", "metric": "Consistency", "votes": 0, "weight": None},
            {"issue": "Random Typos", "metric": "Fluency", "votes": 0, "weight": None},
        ]
    )
    fig = figs.make_weights_figure(df)
    assert fig.layout.barmode == "stack" and [t.name for t in fig.data] == ["Coherence", "Consistency", "Fluency"]
    assert sum(t.x[0] for t in fig.data) == pytest.approx(1.0)
    assert list(fig.data[2].customdata) == [5, 0] and fig.data[0].orientation == "h"
    assert tuple(fig.layout.xaxis.range) == (0, 1)
