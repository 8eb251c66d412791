"""The Judges page's rate chart, read through fig.data and fig.layout."""

import pandas as pd

from services.figures.judges import make_judges_rate_figure


def test_a_rate_of_100_percent_shows_whole_with_the_100_percent_tick() -> None:
    """A judge that calls every item consistent has a raw rate of 1.0: its dot and the 100% tick both show."""
    df = pd.DataFrame(
        [
            {"judge": "a", "kind": "judge's raw rate", "estimate": 1.0, "low": None, "high": None},
            {"judge": "a", "kind": "PPI", "estimate": 0.5, "low": 0.4, "high": 0.6},
            {"judge": "b", "kind": "judge's raw rate", "estimate": 0.0, "low": None, "high": None},
        ]
    )
    fig = make_judges_rate_figure(df)
    low, high = fig.layout.xaxis.range
    assert low < 0.0 and high > 1.0
    assert all(t.cliponaxis is False for t in fig.data)
    assert fig.layout.xaxis.dtick == 0.2


def test_a_classical_interval_identical_to_the_ppi_one_is_not_hidden_behind_it() -> None:
    """With every item labelled PPI equals the classical estimate: the two sit apart in the judge's row."""
    df = pd.DataFrame(
        [
            {"judge": "a", "kind": "classical", "estimate": 0.6, "low": 0.5, "high": 0.7},
            {"judge": "a", "kind": "PPI", "estimate": 0.6, "low": 0.5, "high": 0.7},
            {"judge": "b", "kind": "classical", "estimate": 0.3, "low": 0.2, "high": 0.4},
            {"judge": "b", "kind": "PPI", "estimate": 0.3, "low": 0.2, "high": 0.4},
        ]
    )
    fig = make_judges_rate_figure(df)
    by = {t.name: t for t in fig.data}
    ya, yb = by["classical"].y, by["PPI"].y
    assert ya[0] != yb[0] and ya[1] != yb[1]
    # each stays within its judge's row: nearer its own tick than the other judge's
    ticks = dict(zip(fig.layout.yaxis.ticktext, fig.layout.yaxis.tickvals, strict=True))
    for y in (ya[0], yb[0]):
        assert abs(y - ticks["a"]) < abs(y - ticks["b"])
    for y in (ya[1], yb[1]):
        assert abs(y - ticks["b"]) < abs(y - ticks["a"])
