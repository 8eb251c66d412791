"""A dataset's systems compared by one judge: the items' systems (chosen at import), the judge's predictions and
the human labels read into the frame services.judges.compare takes, and the saved comparison behind a report."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db import datasets as db_datasets
from db.engine import get_session
from services.judges import columns, data
from services.judges.compare import Comparison, compare


def item_systems(engine: Engine, dataset_id: int) -> pd.DataFrame:
    """item_id, system (None when the item has none) and reference (the reference document's id) per item."""
    with get_session(engine) as session:
        rows = db_datasets.item_systems(session=session, dataset_id=dataset_id)
    return pd.DataFrame(rows, columns=["item_id", "system", "reference"])


def systems_of(engine: Engine, dataset_id: int) -> dict[str, int]:
    """Items per system of the dataset (empty: no system column was imported)."""
    with get_session(engine) as session:
        return db_datasets.system_counts(session=session, dataset_id=dataset_id)


def judge_items(engine: Engine, dataset_id: int, ref: int | str) -> pd.DataFrame:
    """The judge's frame: a batch (its id) or a score column (its stored name) over the dataset."""
    if isinstance(ref, str):
        return columns.column_frame(engine, dataset_id, ref)
    (batch,) = data.batches(engine, [int(ref)])
    return data.judge_frame(engine, batch)


def comparison_frame(
    engine: Engine,
    dataset_id: int,
    ref: int | str,
    *,
    source: data.LabelSource = "all",
    budget: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per item the judge ran on that has a system: id, item_id, system, reference, prediction, verdict,
    label (1/0, NaN when unlabelled)."""
    human = data.human_frame(engine, dataset_id, source=source, budget=budget, seed=seed)
    judge = judge_items(engine, dataset_id, ref)[["item_id", "prediction", "verdict"]]
    df = human.merge(judge, on="item_id").merge(item_systems(engine, dataset_id), on="item_id")
    df = df[df["system"].notna()]
    out = pd.DataFrame(
        {
            "id": df["external_id"].astype(str),
            "item_id": df["item_id"],
            "system": df["system"].astype(str),
            "reference": df["reference"],
            "prediction": df["prediction"].astype(float),
            "verdict": df["verdict"].astype(float),
            "label": df["label"].astype(float),
        }
    )
    return out.reset_index(drop=True)


def compare_dataset(
    engine: Engine,
    dataset_id: int,
    ref: int | str,
    *,
    source: data.LabelSource = "all",
    budget: int | None = None,
    seed: int = 0,
    alpha: float = 0.05,
    mode: str = "live",
    plan: int | None = None,
) -> Comparison:
    """The dataset's systems compared by one judge (InputError when it has fewer than two systems); `budget`
    keeps that many random labels (the labels source), `plan` is the planned reading's labels a system."""
    frame = comparison_frame(engine, dataset_id, ref, source=source, budget=budget, seed=seed)
    return compare(frame, alpha=alpha, mode=mode, budget=plan if mode == "planned" else None)


def strata(engine: Engine, dataset_id: int) -> pd.Series:
    """item_id -> system, for drawing labels per system ("Label next")."""
    df = item_systems(engine, dataset_id)
    df = df[df["system"].notna()]
    return pd.Series(df["system"].to_numpy(dtype=object), index=df["item_id"].to_numpy(dtype=np.int64))


VIEW = "compare"  # a saved panel's options["view"] for a comparison of systems (vs. judges side by side)


def save_comparison(
    engine: Engine,
    dataset_id: int,
    ref: int | str,
    *,
    source: str = "all",
    budget: int | None = None,
    seed: int = 0,
    alpha: float = 0.05,
    mode: str = "live",
    plan: int | None = None,
) -> int:
    """The id of the saved comparison of the dataset's systems by this judge (what its report and share link
    are built from); the same choices give the same id."""
    from services.judges.panels import save_panel

    options = {"view": VIEW, "source": source, "budget": budget, "seed": seed, "alpha": alpha, "mode": mode}
    if mode == "planned" and plan is not None:
        options["plan"] = int(plan)
    return save_panel(engine, dataset_id, [ref], options)


def comparison_panels(engine: Engine) -> list:
    """Saved comparisons of systems, newest first."""
    from services.judges.panels import list_panels

    return [p for p in list_panels(engine) if p.options.get("view") == VIEW]


def judge_panels(engine: Engine) -> list:
    """Saved comparisons of judges side by side (not of systems), newest first."""
    from services.judges.panels import list_panels

    return [p for p in list_panels(engine) if p.options.get("view") != VIEW]


def compare_panel(engine: Engine, panel_id: int) -> tuple[Comparison, object]:
    """The comparison a saved panel describes, with the panel; InputError when it is not one."""
    from services.errors import InputError
    from services.judges.panels import get_panel

    panel = get_panel(engine, panel_id)
    if panel is None or panel.options.get("view") != VIEW or len(panel.batch_ids) != 1:
        raise InputError(f"Comparison of systems {panel_id} does not exist.")
    o = panel.options
    c = compare_dataset(
        engine,
        panel.dataset_id,
        panel.batch_ids[0],
        source=o.get("source", "all"),
        budget=o.get("budget"),
        seed=int(o.get("seed", 0)),
        alpha=float(o.get("alpha", 0.05)),
        mode=o.get("mode", "live"),
        plan=o.get("plan"),
    )
    return c, panel
