"""Percentages that rounding does not misstate: the distance to 0% or 100% shown within 5% of itself."""

from __future__ import annotations

import math

import pytest

from services.formats import percent


@pytest.mark.parametrize(
    ("x", "decimals", "shown"),
    [
        (1 - 0.05 / 36, 1, "99.86%"),  # 9 systems' Bonferroni level: "99.9%" says alpha 0.1%, it is 0.139%
        (1 - 0.05 / 15, 1, "99.67%"),  # "99.7%" says 0.3%, it is 0.333%
        (1 - 0.05 / 3, 1, "98.3%"),  # 1.7% for 1.667%: within 5%
        (1 - 0.05 / 6, 1, "99.2%"),  # 0.8% for 0.833%: within 5%
        (1 - 0.05 / 10, 1, "99.5%"),
        (0.95, 0, "95%"),
        (0.999, 0, "99.9%"),  # never "100%"
        (0.9996, 1, "99.96%"),
        (0.0004, 1, "0.04%"),  # never "0.0%"
        (0.123456, 1, "12.3%"),
        (0.5, 1, "50.0%"),
        (1.0, 1, "100.0%"),
        (0.0, 1, "0.0%"),
        (1 - 1e-12, 1, ">99.999999%"),
        (1e-12, 1, "<0.000001%"),
        (math.nan, 1, "—"),
    ],
)
def test_a_percentage_shows_its_distance_to_0_or_100_within_5_percent(x, decimals, shown):
    assert percent(x, decimals) == shown


def test_the_rule_holds_for_every_bonferroni_level_and_never_reads_100():
    for alpha in (0.2, 0.1, 0.05, 0.01, 0.001):
        for k in range(2, 30):
            level = 1 - alpha / (k * (k - 1) // 2)
            text = percent(level)
            shown = float(text.rstrip("%"))
            assert shown < 100 and abs((100 - shown) - 100 * (1 - level)) <= 0.05 * 100 * (1 - level) + 1e-9, text
