"""The reliability diagram and the risk-coverage curve, read through fig.data."""

import pandas as pd
import pytest

from services.figures.calibration import make_reliability_figure, make_risk_coverage_figure
from services.stats import selective


def test_reliability_figure_draws_the_bins_with_their_intervals_and_the_diagonal() -> None:
    r = selective.reliability([0.1, 0.15, 0.8, 0.85, 0.9], [0, 0, 1, 0, 1])
    fig = make_reliability_figure(r.bins, ece=r.ece, n=r.n)
    diagonal, bins = fig.data
    assert list(diagonal.x) == [0, 1] and list(diagonal.y) == [0, 1]
    assert list(bins.x) == pytest.approx(list(r.bins["mean_score"]))
    assert list(bins.y) == pytest.approx([0.0, 0.5, 1.0])
    upper = list(bins.error_y.array)
    assert upper == pytest.approx(list(r.bins["ci_high"] - r.bins["observed"]))
    assert "n = 5" in fig.layout.title.subtitle.text and f"ECE {r.ece:.3f}" in fig.layout.title.subtitle.text


def test_reliability_figure_without_bins_keeps_the_diagonal() -> None:
    fig = make_reliability_figure(pd.DataFrame(columns=selective.BIN_COLUMNS))
    assert len(fig.data) == 1


def test_risk_coverage_figure_plots_accuracy_against_share_decided_and_the_judges_own_point() -> None:
    rc = selective.risk_coverage([0.95, 0.05, 0.6, 0.45], [1, 0, 0, 0])
    fig = make_risk_coverage_figure(rc.curve, own=(0.5, 1.0, 2))
    band, line, own = fig.data
    assert list(line.x) == pytest.approx(list(rc.curve["coverage"] * 100))
    assert list(line.y) == pytest.approx(list(rc.curve["accuracy"]))
    assert len(band.x) == 2 * len(rc.curve) and band.fill == "toself"
    assert list(own.x) == [50.0] and list(own.y) == [1.0] and "n=2" in own.name
    assert fig.layout.xaxis.title.text == "Share decided (%)"


def test_reliability_figure_draws_a_bin_at_either_end_whole() -> None:
    """A bin whose share consistent is 0 or 1 sits on the axis's end: its dot is not cut in half."""
    r = selective.reliability([0.02, 0.05, 0.97, 0.99], [0, 0, 1, 1])
    bins = make_reliability_figure(r.bins, ece=r.ece, n=r.n).data[1]
    assert min(bins.y) == 0.0 and max(bins.y) == 1.0
    assert bins.cliponaxis is False
