"""Summary level (DCR Tables 1-3): correlations of the score with the human score, and AUROC."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from services import stats
from services.metaeval.classification import at_threshold
from services.metaeval.common import DEFAULT_BOOT, DEFAULT_SEED, DEFAULT_THRESHOLD, numeric


# -- summary level -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Correlations:
    """Correlations of the score with the human score, and AUROC against the human label."""

    n_items: int
    correlations: tuple[stats.CorrelationResult, ...]
    auroc: stats.AurocResult
    n_boot: int
    seed: int
    notes: tuple[str, ...] = ()
    per_document: tuple[stats.GroupedCorrelation, ...] = ()  # Table 2 (SummEval): mean of per-document values

    def frame(self) -> pd.DataFrame:
        """One row per statistic: name, n, value, 95% interval, p, note. Pooled rows are over all items; rows
        named "... (per document)" average each document's correlation (DCR Table 2, as G-Eval computes it)."""
        rows = [
            {
                "statistic": c.method,
                "n": c.n,
                "value": c.r,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "p": c.p,
                "note": ((c.note or "") + (" Pooled over all items." if self.per_document else "")).strip(),
            }
            for c in self.correlations
        ]
        rows += [
            {
                "statistic": f"{g.method} (per document)",
                "n": g.n_items,
                "value": g.r,
                "ci_low": None,
                "ci_high": None,
                "p": None,
                "note": (g.note or f"Mean over {g.n_groups} documents; {g.n_skipped} skipped (one side constant)."),
            }
            for g in self.per_document
        ]
        a = self.auroc
        rows.append(
            {
                "statistic": "auroc",
                "n": a.n_pos + a.n_neg,
                "value": a.auc,
                "ci_low": a.ci_low,
                "ci_high": a.ci_high,
                "p": None,
                "note": a.note or "",
            }
        )
        return pd.DataFrame(rows)


def correlations(
    df: pd.DataFrame, *, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_BOOT, score: str = "score"
) -> Correlations:
    """Pearson, Spearman, Kendall of `score` against human_score, and AUROC against human_label."""
    d = df[df[score].notna()] if score in df else df.iloc[0:0]
    x, hs, hl = numeric(d[score]), numeric(d["human_score"]), numeric(d["human_label"])
    notes = []
    if not np.isfinite(hs).any():
        notes.append("This dataset has no human scores: correlations need them (QAGS, SummEval or a score column).")
    if not np.isfinite(hl).any():
        notes.append("This dataset has no binary human labels: AUROC and the classification need them.")
    corr = tuple(stats.correlation(x, hs, m, n_boot=n_boot, seed=seed) for m in stats.METHODS)  # type: ignore[arg-type]
    auc = stats.auroc(x, hl, n_boot=n_boot, seed=seed)
    per_doc: tuple[stats.GroupedCorrelation, ...] = ()
    if "document_id" in d and d["document_id"].duplicated().any():  # several summaries per document (SummEval)
        per_doc = tuple(stats.per_group_correlation(x, hs, d["document_id"].to_numpy(), m) for m in stats.METHODS)  # type: ignore[arg-type]
        notes.append(
            "Several summaries share a document: the per-document rows average each document's correlation, as "
            "the DCR paper's Table 2 (after Zhong et al. and G-Eval) does; the pooled rows correlate all items at once."
        )
    return Correlations(len(d), corr, auc, n_boot, seed, tuple(notes), per_doc)


@dataclass(frozen=True)
class SummaryLevel:
    """Correlations with CIs, AUROC, and the classification at a threshold."""

    correlations: Correlations
    classification: stats.ClassificationResult


def summary_level(
    df: pd.DataFrame, *, threshold: float = DEFAULT_THRESHOLD, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_BOOT
) -> SummaryLevel:
    """The summary-level meta-evaluation of a batch_frame (done items with a score)."""
    done = df[(df["status"] == "done") & df["score"].notna()] if "status" in df else df
    return SummaryLevel(correlations(done, seed=seed, n_boot=n_boot), at_threshold(done, threshold))
