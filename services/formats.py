"""Numbers as people read them: percentages that rounding does not misstate."""

from __future__ import annotations

import math

TOLERANCE = 0.05  # the share of its distance to 0% or 100% by which a shown percentage may be off
MAX_DECIMALS = 6


def percent(x: float, decimals: int = 1) -> str:
    """x (a share, 0 to 1) as a percentage with at least `decimals` decimals, and with more where rounding to
    them would misstate how far x is from the nearer of 0% and 100% by more than TOLERANCE of that distance.

    A level of 99.861% (alpha 0.139%) reads "99.86%", not "99.9%" (which says alpha 0.1%); 99.96% never reads
    "100.0%", nor 0.04% "0.0%". Values that round well keep their decimals: 98.333% reads "98.3%", 95% "95%"
    at 0 decimals. Only 0% and 100% themselves read as 0% and 100%; a share nearer one of them than MAX_DECIMALS
    decimals show reads as "<0.000001%" or ">99.999999%"."""
    pct = 100.0 * float(x)
    if not math.isfinite(pct):
        return "—"
    low = pct <= 50.0
    gap = pct if low else 100.0 - pct
    for d in range(decimals, max(decimals, MAX_DECIMALS) + 1):
        shown = round(pct, d)
        shown_gap = shown if low else 100.0 - shown
        if abs(shown_gap - gap) <= TOLERANCE * abs(gap):
            return f"{shown:.{d}f}%"
    d = max(decimals, MAX_DECIMALS)
    return f"<{10.0**-d:.{d}f}%" if low else f">{100.0 - 10.0**-d:.{d}f}%"  # nearer a bound than d decimals show
