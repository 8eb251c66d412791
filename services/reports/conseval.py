"""The report of a ConsEval study: self- and inter-consistency with intervals, Table 5, the radar, ratings."""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from db.redact import redact_url
from services import conseval, metaeval
from services.errors import InputError
from services.figures.conseval import make_ic_figure, make_matrix_figure, make_radar_figure, make_sc_figure
from services.prompts import conseval as cprompts
from services.reports.common import N_EXAMPLES, as_float
from services.reports.model import Example, FigureSpec, Headline, Report, Table


def _public_models(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "base_url": redact_url(m.get("base_url"))} for m in models]


def build(engine: Engine, study_id: int, **_: Any) -> Report:
    """A ConsEval study: self- and inter-consistency with intervals, Table 5, the radar, a few ratings."""
    st_ = conseval.get_study(engine, study_id)
    if st_ is None:
        raise InputError(f"ConsEval study {study_id} does not exist (deleted?).")
    cfg = dict(st_.config)
    df = conseval.results_frame(st_.results)
    notes = []
    if st_.status != "done":
        notes.append(f"Study #{st_.id} is {st_.status}: results cover what has finished.")
    if st_.error:
        notes.append(f"The study stopped with an error: {st_.error}")
    heads: list[Headline] = []
    for kind, label in (("SC", "Self-consistency α"), ("IC1", "Inter-consistency α (IC1)"), ("ACC", "Accuracy r")):
        d = df[(df["kind"] == kind) & df["value"].notna()] if len(df) else df
        if len(d):
            best = d.sort_values("value", ascending=False).iloc[0]
            where = " · ".join(
                str(best[c])
                for c in ("model", "variant", "criterion", "granularity", "scale")
                if best.get(c) not in (None, "")
            )
            heads.append(
                Headline(
                    label=f"Best {label}",
                    value=as_float(best["value"]),
                    ci_low=as_float(best["ci_low"]),
                    ci_high=as_float(best["ci_high"]),
                    n=int(best["n"] or 0),
                    note=where,
                )
            )
    figures, tables = [], []
    if len(df):
        base = df[(df["method"] == "base")] if "method" in df else df
        if (base["kind"] == "SC").any():
            figures.append(FigureSpec.of("Self-consistency (Figure 2)", make_sc_figure(base)))
        if base["kind"].isin(["IC1", "IC2", "IC3", "IC4", "GS"]).any():
            figures.append(FigureSpec.of("Inter-consistency (Figure 3)", make_ic_figure(base)))
        for crit in cfg.get("criteria", []):
            m = conseval.model_method_matrix(df, crit)
            if len(m):
                figures.append(FigureSpec.of(f"Table 5: {crit}", make_matrix_figure(m)))
                tables.append(Table.from_frame(f"Model × method (Table 5): {crit}", m.round(3), index=True))
        radar = conseval.radar_frame(df)
        if len(radar):
            figures.append(FigureSpec.of("Figure 4", make_radar_figure(radar)))
        cols = [
            "kind",
            "model",
            "variant",
            "criterion",
            "granularity",
            "scale",
            "value",
            "ci_low",
            "ci_high",
            "n",
            "note",
        ]
        tables.append(Table.from_frame("Every α and accuracy", df[[c for c in cols if c in df.columns]]))
    else:
        notes.append("No results yet: the study has not finished any analysis.")
    examples = []
    items = conseval.items_frame(engine, study_id).head(N_EXAMPLES)
    ratings = conseval.ratings_frame(engine, study_id)
    for _, it in items.iterrows():
        r = ratings[ratings["item_id"] == it["id"]].head(12)
        answers = "\n".join(
            f"{x.rater} · {x.method} · {x.granularity} · {x.scale} · sample {x.sample}: "
            + (f"{x.value:g}" if pd.notna(x.value) else f"missing ({x.problem or x.raw})")
            for x in r.itertuples()
        )
        examples.append(
            Example(
                title=f"Item {int(it['idx']) + 1} ({it['criterion']})",
                fields=[
                    ("Query", str(it["query"])),
                    ("Response", str(it["response"])),
                    ("Ratings (first 12)", answers or "none yet"),
                ],
            )
        )
    config = {
        "study": {"id": st_.id, "name": st_.name, "status": st_.status, "created_at": st_.created_at.isoformat()},
        **{k: v for k, v in cfg.items() if k not in ("models", "oracle_model")},
        "models": _public_models(cfg.get("models", [])),
        "prompts": [{"id": f"{n}@{v}"} for n, v in cprompts.PROMPT_VERSIONS.items()],
        "calls": {"planned": st_.n_planned, "done": st_.n_done, "model calls": st_.calls, "cache hits": st_.cache_hits},
        "app": {"version": metaeval.app_version()},
    }
    return Report(
        title=f"ConsEval study #{st_.id}: {st_.name or 'study'}",
        kind="conseval",
        ref_id=st_.id,
        summary="How consistent LLM evaluators are with themselves (across samples) and across scales, "
        "with Krippendorff's α and 95% bootstrap intervals (ConsEval paper).",
        configuration=config,
        headlines=heads,
        figures=figures,
        tables=tables,
        examples=examples,
        notes=notes,
    )
