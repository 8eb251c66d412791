"""The forest plot of systems compared: what it draws, read from fig.data and fig.layout."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from services.figures.compare import make_compare_figure
from services.judges import compare as cmp


def _row_label(fig, axis: str, y: float) -> str:
    """The name of the row a point is drawn in: the nearest tick of its (numeric, labelled) row axis."""
    ax = fig.layout[axis]
    k = min(range(len(ax.tickvals)), key=lambda i: abs(ax.tickvals[i] - y))
    assert abs(ax.tickvals[k] - y) < 0.5
    return ax.ticktext[k]


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
    ppi, alone = by_name["PPI"], by_name["PPI column: labels only"]
    assert [_row_label(fig, "yaxis", y) for y in by_name["classical"].y] == ["old", "new", "same"]
    assert [_row_label(fig, "yaxis", y) for y in ppi.y] == ["old", "same"]
    # new, at 95%, has fewer than 15 inconsistent labels among its 80: its PPI column is its labels' interval
    assert [_row_label(fig, "yaxis", y) for y in alone.y] == ["new"]
    for trace, k, s in ((ppi, 1, comparison.systems[2]), (alone, 0, comparison.systems[1])):
        assert trace.x[k] == pytest.approx(s.ppi.estimate)
        assert trace.error_x.array[k] == pytest.approx(s.ppi.ci_high - s.ppi.estimate)
        assert trace.error_x.arrayminus[k] == pytest.approx(s.ppi.estimate - s.ppi.ci_low)
    assert alone.customdata[0][1] == "labels only: fewer than 15 of each class"
    sig, flat = by_name["difference"], by_name["no difference shown"]
    assert "old − new" in sig.customdata and "old − same" in flat.customdata
    assert [_row_label(fig, "yaxis2", y) for y in sig.y] == list(sig.customdata)
    k = list(sig.customdata).index("old − new")
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
    assert [_row_label(fig, "yaxis", y) for y in fig.data[0].y] == ["a"]


def _drawn(fig) -> dict[tuple[str, str], float]:
    """(trace, row name) -> the value drawn, read back from the figure's data."""
    out = {}
    for t in fig.data:
        if t.xaxis != "x":
            continue
        for x, y in zip(t.x, t.y, strict=True):
            out[(t.name, _row_label(fig, "yaxis", y))] = x
    return out


def test_each_rate_is_drawn_at_its_value_and_the_rows_are_kept_apart_on_the_row_axis(comparison):
    """The table says old's classical and PPI rates; the figure draws them at exactly those values (a grouping
    that shifts points along the value axis would not), apart from each other on the row axis only."""
    sysf = cmp.systems_frame(comparison)
    fig = make_compare_figure(sysf, cmp.differences_frame(comparison))
    drawn = _drawn(fig)
    for _, r in sysf.iterrows():
        assert drawn[("classical", r["system"])] == r["classical"]
        ppi = "PPI column: labels only" if r["PPI basis"].startswith("labels only") else "PPI"
        assert drawn[(ppi, r["system"])] == r["PPI"]
    assert fig.layout.scattermode != "group" and all(t.offsetgroup is None for t in fig.data)
    rows = {}
    for t in fig.data[:3]:
        for y in t.y:
            rows.setdefault(_row_label(fig, "yaxis", y), []).append(y)
    assert all(len(set(ys)) == 2 for ys in rows.values())  # a system's two points: apart, on its own row


def test_equal_rates_are_drawn_at_one_value():
    """A system whose classical and PPI rates are both 0.833 has both points at x = 0.833, neither moved."""
    systems = pd.DataFrame(
        {
            "system": ["bart", "pegasus"],
            "classical": [0.833, 0.7],
            "classical low": [0.6, 0.5],
            "classical high": [0.95, 0.85],
            "PPI": [0.833, 0.72],
            "PPI low": [0.6, 0.6],
            "PPI high": [0.95, 0.83],
            "PPI basis": [
                "labels only: fewer than 15 of each class",
                "prediction-powered: labels and the judge's scores",
            ],
        }
    )
    cols = ["a", "b", "difference", "low", "high", "significant", "shared references", "r", "what it shows"]
    diffs = pd.DataFrame([["bart", "pegasus", 0.113, -0.1, 0.3, False, 0, 0.0, "No difference"]], columns=cols)
    fig = make_compare_figure(systems, diffs)
    drawn = _drawn(fig)
    assert drawn[("classical", "bart")] == 0.833
    assert drawn[("PPI column: labels only", "bart")] == 0.833  # named for what it is, drawn where it is
    assert ("PPI", "bart") not in drawn
    assert drawn[("PPI", "pegasus")] == 0.72 and drawn[("classical", "pegasus")] == 0.7
    flat = next(t for t in fig.data if t.name == "no difference shown")
    assert list(flat.x) == [0.113] and _row_label(fig, "yaxis2", flat.y[0]) == "bart − pegasus"
    alone = next(t for t in fig.data if t.name == "PPI column: labels only")
    assert "fewer than 15 of each class" in alone.customdata[0][1]


@pytest.mark.parametrize(("mode", "words"), [("live", "live, valid at every look"), ("planned", "fixed-sample")])
def test_the_forest_plot_names_the_reading_of_its_intervals(mode, words):
    rng = np.random.default_rng(1)
    parts = [
        pd.DataFrame({"system": name, "label": (rng.random(40) < 0.7).astype(float), "prediction": rng.random(40)})
        for name in ("a", "b")
    ]
    c = cmp.compare(pd.concat(parts, ignore_index=True), mode=mode)
    fig = make_compare_figure(cmp.systems_frame(c), cmp.differences_frame(c), reading=c.mode)
    titles = [a.text for a in fig.layout.annotations[:2]]
    assert all(words in t for t in titles), titles
    other = "fixed-sample" if mode == "live" else "live"
    assert not any(other in t for t in titles)
