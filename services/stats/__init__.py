"""Statistics for the meta-evaluation: correlations, AUROC, classification metrics, Krippendorff's alpha.

Every function takes plain arrays (or a DataFrame), an explicit seed for its bootstrap, and returns a frozen
dataclass. Degenerate data (too few pairs, a constant input, one class, one rater) never raise and never
return a bare NaN: the number is None and `note` says why in plain language. Programming errors (lists
of different lengths, an unknown method) raise ValueError.

correlation: Pearson, Spearman, Kendall and per-document correlations; classification: AUROC, metrics at a
threshold, the balanced-accuracy interval; agreement: Krippendorff's alpha, rating-slot matrices and majority
vote; common: the input checks and the percentile bootstrap interval they share.
"""

from services.stats.agreement import (
    MIN_PAIRABLE_UNITS,
    AlphaResult,
    alpha_from_long,
    binary_slot_matrix,
    krippendorff_alpha,
    majority,
    slot_matrix,
)
from services.stats.classification import (
    AurocResult,
    ClassificationResult,
    auroc,
    balanced_accuracy_interval,
    classification,
)
from services.stats.common import LEVELS, METHODS, Level, Method
from services.stats.correlation import (
    CorrelationResult,
    GroupedCorrelation,
    correlation,
    per_group_correlation,
    tabulated,
)

__all__ = [
    "LEVELS",
    "METHODS",
    "MIN_PAIRABLE_UNITS",
    "AlphaResult",
    "AurocResult",
    "ClassificationResult",
    "CorrelationResult",
    "GroupedCorrelation",
    "Level",
    "Method",
    "alpha_from_long",
    "auroc",
    "balanced_accuracy_interval",
    "binary_slot_matrix",
    "classification",
    "correlation",
    "krippendorff_alpha",
    "majority",
    "per_group_correlation",
    "slot_matrix",
    "tabulated",
]
