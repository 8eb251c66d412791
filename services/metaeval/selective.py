"""Selective prediction for any judge that gives scores: the risk-coverage curve and the reliability diagram.

A judge's score in [0, 1] is read as its probability that the summary is consistent (services.stats.selective).
Where the judge also gives its own verdict and may withhold it (the evidence checker abstains), its own share
decided and accuracy there are the point it chose on the curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from services.metaeval.common import numeric
from services.stats import selective as sel


@dataclass(frozen=True)
class Selective:
    """The curve and the bins over `n` items with a score and a binary human label; `own`: the judge's own
    verdicts (share decided, accuracy on them, and how many), when it gives any."""

    risk_coverage: sel.RiskCoverageResult
    reliability: sel.ReliabilityResult
    own: tuple[float, float | None, int] | None
    notes: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return self.risk_coverage.n


def selective(items: pd.DataFrame) -> Selective:
    """Risk-coverage and reliability of the items' round-0 score against their binary human label."""
    done = items[items["status"] == "done"] if "status" in items else items
    score, label = numeric(done["score"]), numeric(done["human_label"])
    keep = ~np.isnan(score) & ~np.isnan(label)
    notes = []
    rc = sel.risk_coverage(score[keep], label[keep])
    rel = sel.reliability(score[keep], label[keep])
    notes += [n for n in (rc.note, rel.note) if n]
    own = None
    if "model_is_consistent" in done:
        flag = done["model_is_consistent"].to_numpy(dtype=object)[keep]
        decided = np.array([f is not None and f is not pd.NA for f in flag], dtype=bool)
        if keep.any() and decided.any():
            pred = np.array([bool(f) for f in flag[decided]], dtype=float)
            accuracy = float(np.mean(pred == label[keep][decided]))
            own = (float(decided.mean()), accuracy, int(decided.sum()))
    return Selective(rc, rel, own, tuple(notes))
