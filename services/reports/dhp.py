"""The report of a DHP benchmark run: discernment per perturbation, D_avg and D_min, the Wilcoxon tests."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from db.engine import get_session
from services import dhp, metaeval
from services.dhp import survey as sv
from services.errors import InputError
from services.figures.dhp import make_discernment_figure, make_perturbation_figure, overall_frame
from services.reports.common import N_EXAMPLES, model_config, sha256
from services.reports.model import Example, ExampleRewrite, ExampleRound, FigureSpec, Headline, Report, Table


def build(engine: Engine, run_id: int, **_: Any) -> Report:
    """A DHP benchmark run: discernment per perturbation (D, and D_EW with a closed survey's expert weights),
    D_avg and D_min, the Wilcoxon tests, and a few original / perturbed pairs with the change highlighted."""
    with get_session(engine) as s:
        run = dhp.get_run(run_id, session=s)
        if run is None:
            raise InputError(f"DHP run {run_id} does not exist (deleted?).")
        dset = dhp.get_set(run.set_id, session=s)
        closed = sv.closed_weights(dset.task, session=s) if dset else None
        res = dhp.run_result(run_id, session=s, weights=closed[1].weights if closed else None)
        texts = dhp.texts_frame(run.set_id, session=s) if dset else pd.DataFrame()
        scores = dhp.scores_frame(run_id, session=s)
    notes = []
    if run.status != "done":
        notes.append(f"Run #{run.id} is {run.status}: {run.n_done:,} of {run.n_total:,} scores so far.")
    if run.error:
        notes.append(f"The run stopped with an error: {run.error}")
    if closed is None:
        notes.append("No closed expert survey for this task: D_EW needs one (DHP page).")
    heads, figures, tables = [], [], []
    if res is None:
        notes.append("No paired scores yet: nothing to test.")
    else:
        if res.avg_note:
            notes.append(f"D_avg: {res.avg_note}.")
        summary = dhp.summary_frame([res])
        heads, figures, tables = _headlines(res), _figures(res, summary), _tables(res, summary)
    return Report(
        title=f"DHP benchmark run #{run.id}: {run.model}",
        kind="dhp",
        ref_id=run.id,
        summary="Discernment of Hierarchical Perturbation (DHP): does the evaluator score texts lower once they "
        "are damaged? One-sided Wilcoxon tests per metric, combined by the harmonic mean p, D = log_0.05(p).",
        configuration=_configuration(run, dset, closed),
        headlines=heads,
        figures=figures,
        tables=tables,
        examples=_examples(texts, scores),
        notes=notes,
    )


def _headlines(res: dhp.DiscernmentResult) -> list[Headline]:
    return [
        Headline(
            label="D_avg (level-weighted)",
            value=res.d_avg,
            digits=2,
            note="D = log_0.05(p), p = 1 / sum_j (1/p_j) (the paper's); 1 at p = 0.05",
        ),
        Headline(label="D_min", value=res.d_min, digits=2),
        Headline(label="D_EW avg (expert weights)", value=res.d_ew_avg, digits=2),
        Headline(label="D_EW min", value=res.d_ew_min, digits=2),
        Headline(
            label="D_wilson avg (extra, not the paper's)", value=res.d_wilson_avg, digits=2, note=dhp.D_WILSON_FORMULA
        ),
        Headline(label="D_wilson min (extra)", value=res.d_wilson_min, digits=2),
    ]


def _figures(res: dhp.DiscernmentResult, summary: pd.DataFrame) -> list[FigureSpec]:
    per = summary[summary["level"] != "overall"]
    figures = [
        FigureSpec.of(
            "Discernment per perturbation",
            make_perturbation_figure(per.assign(value=per["D"])),
            "D = log_0.05(p) of the one-sided Wilcoxon tests combined by the harmonic mean p; D > 1 means p < 0.05.",
        )
    ]
    if per["D_EW"].notna().any():
        figures.append(
            FigureSpec.of(
                "Discernment per perturbation with expert weights (D_EW)",
                make_perturbation_figure(per.assign(value=per["D_EW"])),
            )
        )
    figures.append(
        FigureSpec.of(
            "D_avg, D_min, D_EW, D_wilson",
            make_discernment_figure(overall_frame([res])),
            f"{dhp.D_FORMULA}; {dhp.D_WILSON_FORMULA}",
        )
    )
    return figures


def _tables(res: dhp.DiscernmentResult, summary: pd.DataFrame) -> list[Table]:
    return [
        Table.from_frame("D, D_EW and D_wilson per perturbation", summary),
        Table.from_frame(
            "Wilcoxon tests per perturbation and metric", dhp.results_frame(res), note=res.zero_method_note
        ),
    ]


def _examples(texts: pd.DataFrame, scores: pd.DataFrame) -> list[Example]:
    """One perturbed text of each of the first N_EXAMPLES perturbations, with its mean scores."""
    examples = []
    if not len(texts):
        return examples
    pert = texts[(texts["perturbation"] != "original") & texts["error"].isna()]
    for _, t in pert.drop_duplicates("perturbation").head(N_EXAMPLES).iterrows():
        sc = scores[(scores["item_id"] == t["item_id"]) & (scores["perturbation"] == t["perturbation"])]
        lines = "\n".join(
            f"{r.metric}: original {r.original:.2f} → perturbed {r.perturbed:.2f}" for r in sc.itertuples()
        )
        examples.append(
            Example(
                title=f"{t['perturbation']} ({t['level']}) on item {t['item_id']}",
                fields=[("Mean scores", lines or "not scored yet"), ("Detail", str(t["detail"] or ""))],
                rounds=[
                    ExampleRound(
                        label="The perturbation, changes highlighted",
                        rewrites=[ExampleRewrite(index=0, before=str(t["original"]), after=str(t["text"]))],
                    )
                ],
            )
        )
    return examples


def _configuration(run: Any, dset: Any, closed: Any) -> dict[str, Any]:
    """What the run was: its model, prompts, perturbation set (with a hash of its items) and expert weights."""
    items_hash = sha256(json.dumps(dset.items, sort_keys=True, ensure_ascii=False)) if dset else None
    return {
        "run": {
            "id": run.id,
            "status": run.status,
            "repeats": run.repeats,
            "seed": run.seed,
            "created_at": run.created_at.isoformat(),
        },
        "model": model_config(run.backend_kind, run.model, run.base_url, run.params),
        "prompts": [{"role": k, "id": v} for k, v in sorted(run.prompt_versions.items())],
        "set": None
        if dset is None
        else {
            "id": dset.id,
            "name": dset.name,
            "task": dset.task,
            "seed": dset.seed,
            "items": len(dset.items),
            "items sha256": items_hash,
            "perturbed by": dset.model or "rules only",
        },
        "expert weights": None if closed is None else {"survey": closed[0].id, "title": closed[0].title},
        "app": {"version": metaeval.app_version()},
    }
