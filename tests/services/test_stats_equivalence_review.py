"""Statistics results that once passed for "cannot change": r's interval at perfect correlation, r of a
nearly constant but not constant resample, and a raters x units frame of Python objects."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest

from services import stats
from services.stats.correlation import _rowwise_pearson


def test_pearsons_interval_stays_within_minus_one_and_one_at_perfect_correlation():
    """r lies in [-1, 1]; with y = 5x + 0.3 some resamples compute num / den as 1.0000000000000002 by rounding,
    and the interval must still end at 1 (these x are such a case)."""
    x = [-0.65, -0.13, 0.78, 1.49, 0.2, -1.1]
    y = [5 * v + 0.3 for v in x]
    res = stats.correlation(x, y, "pearson", n_boot=500, seed=0)
    assert res.r == pytest.approx(1.0)
    assert res.ci_high is not None and res.ci_high <= 1.0 and res.ci_low <= 1.0


def test_a_resample_with_a_small_but_real_spread_has_its_r():
    """r is undefined only for a constant resample: values spread by under a millionth (sum of squares 1.5e-12)
    still correlate perfectly with themselves."""
    s = math.sqrt(0.75e-12)
    x = np.array([[0.0, s, 2 * s]])
    assert ((x - x.mean()) ** 2).sum() == pytest.approx(1.5e-12)
    assert _rowwise_pearson(x, x)[0] == pytest.approx(1.0)
    assert np.isnan(_rowwise_pearson(np.array([[0.5, 0.5, 0.5]]), x)[0])  # constant: undefined


def test_a_frame_of_numbers_held_as_objects_is_read_as_numbers():
    """A raters x units DataFrame whose cells are Python numbers and None (object dtype, as JSON gives) is the
    same data as its float version: None is a missing rating."""
    rows = [[1, 2, 3, None, 2], [1, 2, 2, 4, None], [None, 3, 3, 4, 2]]
    frame = pd.DataFrame(rows, dtype=object)
    assert frame.dtypes.eq(object).all()
    res = stats.krippendorff_alpha(frame, "interval", n_boot=0)
    want = krippendorff.alpha(np.array(rows, dtype=float), level_of_measurement="interval")
    assert res.alpha == pytest.approx(want)
