"""Bootstrap interval of balanced accuracy (the NLI comparison report's brackets)."""

from __future__ import annotations

import numpy as np
import pytest

from services import stats


def test_interval_is_the_percentile_bootstrap_of_classification_over_resampled_items():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 60)
    scores = np.where(rng.random(60) < 0.8, labels, 1 - labels).astype(float)  # 80% right
    low, high = stats.balanced_accuracy_interval(scores, labels, 1.0, n_boot=300, seed=7)
    # The same resamples, one classification() each: the interval must be their 2.5th and 97.5th percentiles.
    idx = np.random.default_rng(7).integers(0, 60, size=(300, 60))
    boots = [stats.classification(scores[i], labels[i], 1.0).balanced_accuracy for i in idx]
    ok = np.array([b for b in boots if b is not None])
    assert (low, high) == pytest.approx(tuple(np.percentile(ok, [2.5, 97.5])))
    value = stats.classification(scores, labels, 1.0).balanced_accuracy
    assert low <= value <= high
    assert stats.balanced_accuracy_interval(scores, labels, 1.0, n_boot=300, seed=7) == (low, high)


def test_no_interval_without_both_classes_or_resamples():
    assert stats.balanced_accuracy_interval([1.0, 0.0, 1.0], [1, 1, 1], 1.0) == (None, None)
    assert stats.balanced_accuracy_interval([1.0, 0.0], [1, 0], 1.0, n_boot=0) == (None, None)
    assert stats.balanced_accuracy_interval([], [], 1.0) == (None, None)
    # Missing scores or labels are left out, as classification() does.
    low, high = stats.balanced_accuracy_interval([1.0, 0.0, np.nan, 1.0, 0.0], [1, 0, 1, 1, np.nan], 1.0, seed=1)
    assert low is not None and 0.0 <= low <= high <= 1.0
