"""Human agreement: Krippendorff's alpha among the raters, and between the model and the human majority."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import metaeval as db
from services import stats
from services.metaeval.common import DEFAULT_BOOT, DEFAULT_SEED
from services.metaeval.loading import BatchData, load_batch, with_sentences


# -- human agreement ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanAgreement:
    """Krippendorff's alpha (nominal) among the human raters, and between the model and the human majority."""

    among_humans: stats.AlphaResult | None
    n_items: int  # items with per-sentence votes
    n_sentences: int  # sentences with at least one vote
    n_workers: int  # distinct rater ids
    model_vs_majority: stats.AlphaResult | None
    notes: tuple[str, ...] = ()


def _alpha_among(votes: np.ndarray, n_workers: int, *, seed: int, n_boot: int) -> stats.AlphaResult:
    # `votes` is a rating slots x units matrix (stats.slot_matrix): nominal alpha on it equals alpha on workers x
    # units; the raters it reports are the distinct workers.
    res = stats.krippendorff_alpha(votes, "nominal", n_boot=n_boot, seed=seed)
    return replace(res, n_raters=n_workers)


def _vote_matrix(label_lists: Iterable[list[dict[str, int]] | None]) -> tuple[np.ndarray, int, int]:
    units: list[list[int]] = []
    workers: set[str] = set()
    n_items = 0
    for labels in label_lists:
        if not labels:
            continue
        n_items += 1
        for votes in labels:
            if votes:
                workers.update(votes)
                units.append([int(v) for v in votes.values()])
    return stats.slot_matrix(units), len(workers), n_items


def human_agreement(
    engine: Engine | None = None,
    *,
    batch_id: int | None = None,
    dataset_id: int | None = None,
    data: BatchData | None = None,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
) -> HumanAgreement:
    """Alpha among humans (units = sentences, raters = worker ids, nominal) over a batch's items or a whole
    dataset; with a batch, also alpha between the model's round-0 verdicts and the human majority (2 raters)."""
    notes: list[str] = []
    if data is None and batch_id is not None:
        data = load_batch(engine, batch_id)  # type: ignore[arg-type]
    if data is not None:
        data = with_sentences(data)
        votes, n_workers, n_items = data.votes, data.n_workers, data.n_vote_items
    elif dataset_id is not None:
        with Session(engine) as session:
            labels = db.sentence_labels(session=session, dataset_id=dataset_id)
        votes, n_workers, n_items = _vote_matrix(labels)
    else:
        raise ValueError("give batch_id, dataset_id or data")
    n_sentences = int(votes.shape[1])
    among = None
    if n_sentences == 0:
        notes.append(
            "This dataset has no per-sentence human labels (QAGS worker votes, or a sentence_labels column): "
            "no agreement among humans to compute."
        )
    else:
        among = _alpha_among(votes, n_workers, seed=seed, n_boot=n_boot)
        if votes.shape[0] < 2:
            notes.append("Each sentence has a single human label: agreement needs two or more raters per sentence.")
    vs = None
    if data is not None and n_sentences:
        s = data.sentences[data.sentences["n_votes"] > 0]
        if data.is_paragraph:
            notes.append("A paragraph-level batch has no sentence verdicts to compare with the human majority.")
        elif s.empty:
            notes.append("No finished sentence verdict to compare with the human majority yet.")
        else:
            model = s["verdict"].map({"consistent": 1.0, "inconsistent": 0.0}).astype(float).to_numpy()
            pair = np.vstack([model, s["human"].to_numpy()])
            vs = stats.krippendorff_alpha(pair, "nominal", n_boot=n_boot, seed=seed)
            n_out = int((~np.isfinite(model) | ~np.isfinite(s["human"].to_numpy())).sum())
            if n_out:
                notes.append(
                    f"Model vs human majority: {n_out:,} sentence(s) with an unknown verdict or tied human votes "
                    "are left out."
                )
    return HumanAgreement(among, n_items, n_sentences, n_workers, vs, tuple(notes))


def alpha_frame(h: HumanAgreement) -> pd.DataFrame:
    """The two alphas as table rows: who, alpha, 95% interval, units, raters, note."""
    rows = []
    for who, a, raters in (
        ("among the human raters", h.among_humans, "workers"),
        ("model vs human majority", h.model_vs_majority, "model, majority"),
    ):
        if a is None:
            continue
        rows.append(
            {
                "agreement": who,
                "alpha": a.alpha,
                "ci_low": a.ci_low,
                "ci_high": a.ci_high,
                "units": a.n_pairable,
                "raters": a.n_raters,
                "rater ids": raters,
                "level": a.level,
                "note": a.note or "",
            }
        )
    return pd.DataFrame(
        rows, columns=["agreement", "alpha", "ci_low", "ci_high", "units", "raters", "rater ids", "level", "note"]
    )
