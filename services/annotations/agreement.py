"""Agreement: Krippendorff's alpha among the annotators and against models' verdicts, and the disagreements."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from db import annotations as queries
from db import batches as db_batches
from db.engine import get_session
from services.annotations.labels import LABELS
from services.annotations.verdicts import round0_records
from services.stats import AlphaResult, alpha_from_long, majority

VERDICT_CODES = {"consistent": 1, "inconsistent": 0}  # "unknown" and anything else: no verdict
Results = list[tuple[int, dict[str, Any] | None]]  # (item, result) of a batch's finished items
BatchResults = dict[int, Results]  # batch -> its results


def _batch_codes(results: Results, sizes: dict[int, int]) -> dict[tuple[int, int], int | None]:
    """(item, sentence) -> 1/0/None (unknown) from a batch's round 0; items without per-sentence verdicts absent."""
    out: dict[tuple[int, int], int | None] = {}
    for item_id, result in results:
        if item_id not in sizes:
            continue
        records = round0_records(result, sizes[item_id])
        for j, s in enumerate(records or []):
            out[(item_id, j)] = VERDICT_CODES.get(str(s.get("verdict")))
    return out


def _batch_verdict_words(results: Results, sizes: dict[int, int]) -> dict[tuple[int, int], str]:
    """(item, sentence) -> the batch's round-0 verdict word, for items with per-sentence verdicts."""
    return {
        (item_id, j): str(s.get("verdict") or "unknown")
        for item_id, result in results
        if item_id in sizes
        for j, s in enumerate(round0_records(result, sizes[item_id]) or [])
    }


@dataclass(frozen=True)
class _Units:
    """Every labelled (item, sentence) of a dataset with its labels, sentence text and position."""

    labels: dict[tuple[int, int], dict[str, int]]  # unit -> {annotator name: 1/0}
    text: dict[tuple[int, int], str]
    order: dict[int, tuple[int, str]]  # item -> (position, external_id)
    sizes: dict[int, int]  # item -> number of sentences


def _units(engine: Engine, dataset_id: int, batch_ids: list[int]) -> tuple[_Units, dict[int, str], BatchResults]:
    """The dataset's labelled units, the names of those of the batches that exist, and their finished results."""
    labels: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    text: dict[tuple[int, int], str] = {}
    order: dict[int, tuple[int, str]] = {}
    with get_session(engine) as session:
        for r in queries.label_rows(session=session, dataset_id=dataset_id):
            unit = (r.item_id, r.sentence_idx)
            labels[unit][r.annotator] = int(r.label)
            text[unit] = r.sentence
            order[r.item_id] = (r.idx, r.external_id)
        names = db_batches.batch_names(session=session, batch_ids=batch_ids)
        # Verdicts are looked up for labelled sentences only: the other items' results (every item's JSON on a
        # large batch) are not read, nor anything when nobody has labelled yet.
        labelled = sorted(order)
        sizes = queries.sentence_counts(session=session, dataset_id=dataset_id) if labelled else {}
        results = {
            b: queries.done_results(session=session, batch_id=b, item_ids=labelled) if labelled else []
            for b in batch_ids
            if b in names
        }
    return _Units(dict(labels), text, order, sizes), names, results


def _join_notes(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return " ".join(kept) if kept else None


def _with_note(result: AlphaResult, extra: str | None) -> AlphaResult:
    return replace(result, note=_join_notes(extra, result.note))


def agreement(
    engine: Engine, dataset_id: int, *, batch_ids: Iterable[int] = (), n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) among the annotators, and between their majority and each batch.

    Units are (item, sentence). Among annotators the raters are the annotators; a unit labelled once does
    not count (alpha needs pairs). Against a batch there are two raters: the annotators' majority label
    (ties left out) and the model's round-0 verdict (unknown verdicts left out). Each result carries a
    bootstrap interval over units and a note when it cannot be computed or should be read with care.
    """
    batch_ids = list(dict.fromkeys(batch_ids))
    u, names, results = _units(engine, dataset_id, batch_ids)
    codes = {b: _batch_codes(r, u.sizes) for b, r in results.items()}
    long = [
        {"unit": f"{i}:{j}", "rater": a, "value": v} for (i, j), votes in u.labels.items() for a, v in votes.items()
    ]
    annotators = sorted({a for votes in u.labels.values() for a in votes})
    if long:
        among = alpha_from_long(pd.DataFrame(long), "nominal", n_boot=n_boot, seed=seed)
    else:
        among = AlphaResult(None, "nominal", 0, 0, 0, note="No sentence of this dataset has a label yet.")
    majorities = {unit: majority(votes) for unit, votes in u.labels.items()}
    ties = sum(m is None for m in majorities.values())
    models = []
    for b in batch_ids:
        if b not in names:
            continue
        rows, unknown, absent = [], 0, 0
        for unit, m in majorities.items():
            if unit not in codes[b]:
                absent += 1
                continue
            v = codes[b][unit]
            if v is None:
                unknown += 1
            if m is None or v is None:
                continue
            key = f"{unit[0]}:{unit[1]}"
            rows += [{"unit": key, "rater": "annotators", "value": m}, {"unit": key, "rater": "model", "value": v}]
        extra = []
        if ties:
            extra.append(f"{ties} sentence(s) with tied annotator labels left out.")
        if unknown:
            extra.append(f"{unknown} sentence(s) the model left unknown left out.")
        if absent:
            extra.append(
                f"{absent} labelled sentence(s) have no per-sentence verdict in this batch (not done, or "
                "judged as one paragraph)."
            )
        if rows:
            res = alpha_from_long(pd.DataFrame(rows), "nominal", n_boot=n_boot, seed=seed)
        else:
            res = AlphaResult(None, "nominal", 0, 0, 0, note="No sentence has both a majority label and a verdict.")
        models.append(
            {"batch_id": b, "name": names[b], "n_compared": len(rows) // 2, "alpha": _with_note(res, " ".join(extra))}
        )
    return {
        "n_units": len(u.labels),
        "n_annotators": len(annotators),
        "annotators": annotators,
        "among_annotators": among,
        "models": models,
    }


def agreement_frame(result: dict[str, Any]) -> pd.DataFrame:
    """The agreement results as a table: comparison, alpha, interval, units, raters, note."""

    def row(what: str, r: AlphaResult) -> dict[str, Any]:
        return {
            "comparison": what,
            "alpha": r.alpha,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "pairable units": r.n_pairable,
            "raters": r.n_raters,
            "note": r.note or "",
        }

    rows = [row(f"among annotators ({result['n_annotators']})", result["among_annotators"])]
    rows += [row(f"annotators' majority vs batch #{m['batch_id']} {m['name']}", m["alpha"]) for m in result["models"]]
    return pd.DataFrame(rows)


def disagreements(engine: Engine, dataset_id: int, *, batch_ids: Iterable[int] = ()) -> pd.DataFrame:
    """The labelled sentences where annotators disagree, or where a model's verdict differs from their majority.

    One row per sentence: item position and external_id, sentence index (0-based) and text, each annotator's
    label, the majority, each batch's verdict and what differs. A model's unknown verdict is not a
    disagreement (it is not an answer).
    """
    batch_ids = list(dict.fromkeys(batch_ids))
    u, _, results = _units(engine, dataset_id, batch_ids)
    codes = {b: _batch_codes(r, u.sizes) for b, r in results.items()}
    verdicts = {b: _batch_verdict_words(r, u.sizes) for b, r in results.items()}
    annotators = sorted({a for votes in u.labels.values() for a in votes})
    rows = []
    for unit in sorted(u.labels, key=lambda k: (u.order[k[0]][0], k[0], k[1])):
        votes = u.labels[unit]
        m = majority(votes)
        why = []
        if len(set(votes.values())) > 1:
            why.append("annotators disagree")
        differing = [b for b in codes if m is not None and codes[b].get(unit) is not None and codes[b][unit] != m]
        if differing:
            why.append("model differs: " + ", ".join(f"#{b}" for b in differing))
        if not why:
            continue
        row = {
            "item": u.order[unit[0]][0],
            "external_id": u.order[unit[0]][1],
            "sentence_idx": unit[1],
            "sentence": u.text[unit],
        }
        row |= {f"@{a}": LABELS[votes[a]] if a in votes else "" for a in annotators}
        row["majority"] = LABELS[m] if m is not None else "tie"
        row |= {f"batch #{b}": verdicts[b].get(unit, "") for b in codes}
        row["differs"] = "; ".join(why)
        rows.append(row)
    cols = [
        "item",
        "external_id",
        "sentence_idx",
        "sentence",
        *[f"@{a}" for a in annotators],
        "majority",
        *[f"batch #{b}" for b in codes],
        "differs",
    ]
    return pd.DataFrame(rows, columns=cols)
