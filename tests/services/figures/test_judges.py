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
