"""The forest plot of systems compared: what it draws, read from fig.data and fig.layout."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from services.figures.compare import make_compare_figure
from services.judges import compare as cmp


@pytest.fixture(scope="module")
def comparison():
    rng = np.random.default_rng(0)
    parts = []
    for name, rate in (("old", 0.5), ("new", 0.95), ("same", 0.5)):
        y = (rng.random(400) < rate).astype(float)
        label = np.where(np.arange(400) < 80, y, np.nan)
        pred = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, 400), 0, 1)
        parts.append(pd.DataFrame({"system": name, "label": label, "prediction": pred}))
    return cmp.compare(pd.concat(parts, ignore_index=True))


def test_the_forest_plot_draws_each_rate_and_each_difference_with_its_interval(comparison):
    fig = make_compare_figure(cmp.systems_frame(comparison), cmp.differences_frame(comparison), level=0.9)
    by_name = {t.name: t for t in fig.data}
    ppi = by_name["PPI"]
    assert list(ppi.y) == ["old", "new", "same"]
    s = comparison.systems[1]
    assert ppi.x[1] == pytest.approx(s.ppi.estimate)
    assert ppi.error_x.array[1] == pytest.approx(s.ppi.ci_high - s.ppi.estimate)
    assert ppi.error_x.arrayminus[1] == pytest.approx(s.ppi.estimate - s.ppi.ci_low)
    sig, flat = by_name["difference"], by_name["no difference shown"]
    assert "old − new" in sig.y and "old − same" in flat.y
    k = list(sig.y).index("old − new")
    d = comparison.differences[0]
    assert sig.x[k] == pytest.approx(d.estimate) and sig.error_x.array[k] == pytest.approx(d.ci_high - d.estimate)
    assert sig.xaxis == "x2" and ppi.xaxis == "x"
    assert any(shape.x0 == 0 and shape.xref.startswith("x2") for shape in fig.layout.shapes)
    assert "90%" in fig.layout.annotations[0].text


def test_a_difference_that_is_unknown_is_left_out():
    systems = pd.DataFrame(
        {
            "system": ["a", "b"],
            "classical": [0.5, None],
            "classical low": [0.4, None],
            "classical high": [0.6, None],
            "PPI": [0.5, None],
            "PPI low": [0.4, None],
            "PPI high": [0.6, None],
        }
    )
    cols = ["a", "b", "difference", "low", "high", "significant", "shared references", "r", "what it shows"]
    diffs = pd.DataFrame([["a", "b", None, None, None, None, 0, 0.0, "Unknown"]], columns=cols)
    fig = make_compare_figure(systems, diffs)
    assert [t.name for t in fig.data] == ["classical", "PPI"]
    assert list(fig.data[0].y) == ["a"]
