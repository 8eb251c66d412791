"""What the meta-evaluation's parts share: the default threshold, seed and resamples, and the positive class."""

from __future__ import annotations

import numpy as np
import pandas as pd

from services.dcr.results import CONSISTENT_AT as CONSISTENT_AT  # the threshold of full consistency, beside Eq. 3

DEFAULT_THRESHOLD = 1.0
# Figure 3's reading (Appendix C.3): high recall with low precision means more candidates wrongly marked consistent,
# so "consistent" is the class precision, recall and F1 are about.
POSITIVE = 1
DEFAULT_SEED = 0
DEFAULT_BOOT = 1000


def numeric(values: pd.Series | np.ndarray) -> np.ndarray:
    """Numbers from a column or array: anything that is not a number becomes NaN."""
    return np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
