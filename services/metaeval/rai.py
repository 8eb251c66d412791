"""RAI: Table 4 (inconsistent items corrected, improvement rate) and Figure 4 (share consistent per round)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from services.metaeval.common import CONSISTENT_AT
from services.metaeval.loading import BatchData, load_batch


# -- RAI: Table 4 and Figure 4 ------------------------------------------------------------------------
def rai_table(df: pd.DataFrame) -> pd.DataFrame:
    """Table 4: items inconsistent at round 0 (score < 1), corrected by one RAI round (score 1 after it) and the
    consistency improvement rate = corrected / inconsistent. With more rounds, `corrected_after_m` and
    `rate_after_m` count the items consistent after the last round (Figure 4 follows them round by round)."""
    done = df[(df["status"] == "done") & df["score"].notna()]
    bad = done[done["score"] < CONSISTENT_AT]
    improved = bad[bad["n_rounds"] > 1]
    after_one = bad["score_r1"] if "score_r1" in bad else pd.Series(np.nan, index=bad.index)
    corrected = int((after_one >= CONSISTENT_AT).sum())
    corrected_m = int((bad["final_score"] >= CONSISTENT_AT).sum())
    return pd.DataFrame(
        [
            {
                "evaluated": len(done),
                "inconsistent": len(bad),
                "improved": len(improved),
                "corrected": corrected,
                "improvement_rate": corrected / len(bad) if len(bad) else None,
                "rounds_run": int(done["n_rounds"].max() - 1) if len(done) else 0,
                "corrected_after_m": corrected_m,
                "rate_after_m": corrected_m / len(bad) if len(bad) else None,
            }
        ]
    )


@dataclass(frozen=True)
class RoundsResult:
    """Figure 4: the share of items fully consistent after each round, and every item's score per round."""

    share: pd.DataFrame  # round, n, consistent, share
    scores: pd.DataFrame  # round, item_id, score (an item that stopped keeps its last score)
    notes: tuple[str, ...] = ()


def rounds_of(df: pd.DataFrame) -> RoundsResult:
    """Per round r: each item's score after r rounds of RAI (carried forward once it stopped), and Figure 4's
    consistency improvement rate: the share of the items inconsistent at round 0 that are consistent after r."""
    done = df[(df["status"] == "done") & df["score"].notna()]
    cols = sorted((c for c in done.columns if c.startswith("score_r")), key=lambda c: int(c[7:]))
    if done.empty or not cols:
        empty = pd.DataFrame(columns=["round", "n", "consistent", "share"])
        return RoundsResult(empty, pd.DataFrame(columns=["round", "item_id", "score"]), ("No finished item yet.",))
    # An item stops when it is fully consistent or nothing changed: later rounds keep its last score.
    mat = done[cols].ffill(axis=1).to_numpy(dtype=float)
    n_rounds = mat.shape[1]
    bad = mat[mat[:, 0] < CONSISTENT_AT]  # the items Table 4 counts as inconsistent before any rewrite
    share = pd.DataFrame(
        {
            "round": np.arange(n_rounds),
            "n": np.full(n_rounds, len(bad)),
            "consistent": (bad >= CONSISTENT_AT).sum(axis=0),
        }
    )
    share["share"] = share["consistent"] / share["n"].where(share["n"] > 0)
    scores = pd.DataFrame(
        {
            "round": np.repeat(np.arange(n_rounds), len(done)),
            "item_id": np.tile(done["item_id"].astype(int).to_numpy(), n_rounds),
            "score": mat.T.reshape(-1),
        }
    )
    notes = []
    if n_rounds == 1:
        notes.append("No improvement round ran (rounds = 0, or every item was consistent at round 0).")
    return RoundsResult(share, scores[np.isfinite(scores["score"])].reset_index(drop=True), tuple(notes))


def rounds_table(
    engine: Engine | None = None, batch_id: int | None = None, *, data: BatchData | None = None
) -> RoundsResult:
    """Figure 4 for a batch: share fully consistent after each round and the per-round scores."""
    data = data or load_batch(engine, batch_id)  # type: ignore[arg-type]
    return rounds_of(data.items)
