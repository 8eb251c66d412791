"""ConsEval's result table: the value with its interval stands beside what it measures."""

from __future__ import annotations

import pandas as pd

from components import conseval as view


def test_alpha_comes_third_so_a_1280_px_screen_shows_it():
    df = pd.DataFrame(
        {
            "kind": ["SC"],
            "model": ["a-long-model-name-served-somewhere"],
            "variant": ["base"],
            "criterion": ["Coherence"],
            "granularity": ["none"],
            "scale": ["5-P"],
            "oracle": [None],
            "value": [0.8123],
            "ci_low": [0.7],
            "ci_high": [0.9],
            "n": [12],
            "level": ["interval"],
            "note": [None],
        }
    )
    t = view.table(df)
    assert list(t.columns)[:4] == ["measure", "scale(s)", "α or r [95% CI]", "n"]
    assert t.loc[0, "α or r [95% CI]"] == "0.812 [0.700, 0.900]"
