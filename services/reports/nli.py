"""The NLI comparison report: the methods run over one dataset side by side (paper 003), from
metaeval.compare_method_batches, with bootstrap intervals from services.stats."""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from db import reports as db
from db.engine import get_session
from db.redact import redact_url
from services import metaeval, stats
from services.errors import InputError
from services.figures.nli import make_method_cost_figure
from services.figures.report import make_method_accuracy_figure
from services.jobs import batches as bsvc
from services.reports.common import GOLD, N_EXAMPLES, verdict_text
from services.reports.model import Example, FigureSpec, Headline, Report, Table

COLUMNS = [
    "method",
    "model",
    "n",
    "balanced accuracy [95% CI]",
    "precision",
    "recall",
    "f1",
    "pearson",
    "calls",
    "tokens",
]


def build(
    engine: Engine,
    batch_id: int,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    threshold: float | None = None,
    **_: Any,
) -> Report:
    """This batch beside every other finished batch over the same dataset (Summ-NLI, Sent-NLI, QG-QA, DCE...):
    the Meta-evaluation page's method comparison, with balanced-accuracy intervals and cost."""
    first = bsvc.progress(engine, batch_id)
    if first is None:
        raise InputError(f"Batch {batch_id} does not exist.")
    ds_id = first.batch.dataset_id
    peers = [
        b
        for b in bsvc.list_batches(engine, limit=1000)
        if b.dataset_id == ds_id and b.status in ("done", "cancelled") and b.id != batch_id
    ]
    chosen = [first.batch, *sorted(peers, key=lambda b: b.id)]
    comparison = metaeval.compare_method_batches(engine, [b.id for b in chosen], threshold=threshold)
    compared = {int(r.batch): r for r in comparison.table.itertuples(index=False)}
    chosen = [b for b in chosen if b.id in compared]  # a batch deleted meanwhile is left out (with a note)
    data = {b.id: metaeval.load_batch(engine, b.id, sentences=False) for b in chosen}
    rows = [_row(engine, b, compared[b.id], data[b.id], float(compared[b.id].threshold), seed, n_boot) for b in chosen]
    df = pd.DataFrame(rows)
    ds = data[batch_id].dataset
    notes = list(comparison.notes)
    if not any(r["n"] for r in rows):
        notes.append("No item has a gold label and a verdict yet: nothing to compare.")
    elif len(chosen) == 1:
        notes.append("Only this batch ran over the dataset: run the other methods over it to compare them.")
    else:
        notes.append("Each method over the labelled items it finished, as the Meta-evaluation page compares them.")
    heads = [
        Headline(
            label=f"Balanced accuracy · {r['method']}",
            value=r["value"],
            ci_low=r["ci_low"],
            ci_high=r["ci_high"],
            n=r["n"],
            note=f"{r['model']} · {r['calls']:,} calls",
        )
        for r in rows
    ]
    cells = [Headline(label="", value=r["value"], ci_low=r["ci_low"], ci_high=r["ci_high"]).text() for r in rows]
    table = df.assign(**{"balanced accuracy [95% CI]": cells})[COLUMNS] if rows else pd.DataFrame(columns=COLUMNS)
    figures = []
    if len(df):
        figures = [
            FigureSpec.of("Balanced accuracy per method", make_method_accuracy_figure(df)),
            FigureSpec.of("Cost per method", make_method_cost_figure(df)),
        ]
    return Report(
        title=f"NLI comparison on {ds.name if ds else 'a deleted dataset'} (batch #{batch_id})",
        kind="nli",
        ref_id=batch_id,
        summary="Zero-shot factual-inconsistency paradigms (Summ-NLI, Sent-NLI, QG-QA; paper 003) beside the other "
        "methods run over the same dataset, judged by balanced accuracy against the gold labels.",
        configuration=_configuration(ds, chosen, seed, n_boot, threshold),
        headlines=heads,
        figures=figures,
        tables=[Table.from_frame("Methods side by side", table)],
        examples=examples(engine, chosen, [r["method"] for r in rows], data),
        notes=notes,
    )


def _row(
    engine: Engine, b: Any, cmp: Any, data: metaeval.BatchData, threshold: float, seed: int, n_boot: int
) -> dict[str, Any]:
    """One method's row: the comparison's figures, a bootstrap interval on balanced accuracy, and its cost."""
    done = data.done
    low, high = stats.balanced_accuracy_interval(
        done["score"].to_numpy(float), done["human_label"].to_numpy(float), threshold, seed=seed, n_boot=n_boot
    )
    # Paper 003 finds errors: precision and F1 of the inconsistent class, beside the comparison's recall.
    c = stats.classification(done["score"].to_numpy(float), done["human_label"].to_numpy(float), threshold, positive=0)
    p = bsvc.progress(engine, b.id)
    return {
        "method": f"{cmp.method} #{b.id}",
        "model": b.model,
        "batch": b.id,
        "n": int(cmp.n),
        "value": cmp.balanced_accuracy,
        "ci_low": low,
        "ci_high": high,
        "precision": c.precision,
        "recall": cmp.recall,
        "f1": c.f1,
        "pearson": cmp.pearson,
        "calls": p.calls if p else 0,
        "tokens": p.tokens if p else 0,
    }


def _configuration(ds: Any, chosen: list, seed: int, n_boot: int, threshold: float | None) -> dict[str, Any]:
    """The dataset, each batch's method, model and prompts, and how the statistics were computed."""
    return {
        "dataset": None if ds is None else {"id": ds.id, "name": ds.name, "sha256": ds.sha256, "format": ds.format},
        "batches": [
            {
                "id": b.id,
                "method": b.method,
                "model": b.model,
                "base_url": redact_url(b.base_url),
                "params": metaeval.public_params(dict(b.params)),
                "prompt_versions": dict(b.prompt_versions),
            }
            for b in chosen
        ],
        "statistics": {
            "bootstrap_seed": seed,
            "bootstrap_resamples": n_boot,
            "verdict": f"consistent when the score is at least {threshold:g}"
            if threshold is not None
            else "consistent when the score is at least the method's own threshold: 1.0 (every unit consistent: "
            "Eq. 2/4; DCE: score 1), 0.5 for the evidence checker's probability",
            "positive_class": "inconsistent (precision, recall, F1), as paper 003 reports recall",
        },
        "app": {"version": metaeval.app_version()},
    }


def examples(engine: Engine, chosen: list, labels: list[str], data: dict[int, metaeval.BatchData]) -> list[Example]:
    """The first labelled items every batch finished, with each method's verdict and reasoning."""
    common: set[int] | None = None
    for d in data.values():
        ids = set(d.done.loc[d.done["human_label"].notna(), "item_id"].astype(int))
        common = ids if common is None else common & ids
    out = []
    with get_session(engine) as s:
        for item_id in sorted(common or [])[:N_EXAMPLES]:
            di, doc = db.item_with_document(session=s, item_id=item_id)
            fields = [("Document", doc.text), ("Summary", di.candidate), ("Gold label", GOLD.get(di.human_label, "—"))]
            for b, label in zip(chosen, labels, strict=True):
                bi = db.batch_item(session=s, batch_id=b.id, item_id=item_id)
                fields.append((label, verdict_text(bi.result if bi else None)))
            out.append(Example(title=f"Item {di.external_id or di.idx}", fields=fields))
    return out
