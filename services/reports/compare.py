"""The report of systems compared: each system's consistency rate by one judge (classical and PPI, with n and
intervals) and every pair's difference with its Bonferroni-adjusted MOVER interval and what it shows
(services.judges.compare), from a saved comparison (services.judges.systems)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from services.datasets.store import get_dataset
from services.figures.compare import make_compare_figure
from services.formats import percent
from services.judges import LABEL_SOURCES, JudgeInfo, compare, systems
from services.judges.card import judge_name
from services.judges.data import batches
from services.reports.model import FigureSpec, Headline, Report, Table


def _judge(engine: Engine, ref: int | str) -> str:
    if isinstance(ref, str):
        return JudgeInfo.of_column(ref).name
    return judge_name(batches(engine, [int(ref)])[0])


def build(engine: Engine, panel_id: int, **_: Any) -> Report:
    """The report of a saved comparison of systems."""
    c, panel = systems.compare_panel(engine, panel_id)
    level, pair_level = 1.0 - c.alpha, 1.0 - c.pair_alpha
    ds = get_dataset(engine, panel.dataset_id)
    ds_name = f"{ds.name} (dataset #{ds.id})" if ds else f"dataset #{panel.dataset_id}"
    judge = _judge(engine, panel.batch_ids[0])
    headlines = [
        Headline(
            label=f"{s.system}: {'consistency rate, labels only' if s.ppi.labels_only else 'PPI consistency rate'}",
            value=s.ppi.estimate,
            ci_low=s.ppi.ci_low,
            ci_high=s.ppi.ci_high,
            n=s.n_labelled,
            percent=True,
            note=f"{s.ppi.basis + '; ' if s.ppi.basis else ''}{s.n_labelled} labelled of {s.n} items; the judge "
            f"alone says {'—' if s.judge_rate is None else f'{s.judge_rate:.1%}'}",
        )
        for s in c.systems
    ]
    sysf = compare.systems_frame(c)
    diff = compare.differences_frame(c)
    notes = [
        f"Each system's intervals are {level:.0%}. Each difference's is {percent(pair_level)} (Bonferroni over "
        f"{c.n_pairs} pair(s)), so that all of them hold together at least {level:.0%} of the time; it combines "
        "the two systems' intervals by MOVER (Zou and Donner 2008; Newcombe 1998), with the correlation of "
        "systems that summarize the same references.",
        compare.reading_note(c),
        *[d.sentence for d in c.differences],
        *[
            f"{s.system}'s rate rests on its labels only ({s.ppi.basis.split(': ', 1)[-1]}): PPI was not used, and "
            "its PPI column is the labels' own rate and interval."
            for s in c.systems
            if s.ppi.labels_only
        ],
        *c.notes,
    ]
    return Report(
        title=panel.name or f"Systems compared on {ds_name}",
        kind="compare",
        ref_id=panel_id,
        summary=f"{len(c.systems)} system(s) of {ds_name} judged by {judge}; labels from: "
        f"{LABEL_SOURCES.get(panel.options.get('source', 'all'), '')}.",
        configuration={
            "dataset": ds_name,
            "judge": judge,
            "systems": [s.system for s in c.systems],
            "alpha": c.alpha,
            "alpha per pair": f"{c.alpha:g} / {c.n_pairs} pair(s) = {c.pair_alpha:.4g}",  # Bonferroni, read
            "reading": c.mode,
            **({"labels a system planned": c.budget} if c.budget else {}),
            "labels": panel.options.get("source", "all"),
            **({"labels kept (budget)": panel.options["budget"]} if panel.options.get("budget") is not None else {}),
        },
        headlines=headlines,
        figures=[FigureSpec.of("Systems compared", make_compare_figure(sysf, diff, level=level, reading=c.mode))],
        tables=[
            Table.from_frame("Systems (rates with their intervals)", sysf.round(4)),
            Table.from_frame("Differences, a minus b (adjusted intervals)", diff.round(4)),
        ],
        notes=notes,
        interval_note=f"Brackets: {level:.0%} interval of the prediction-powered estimate, or of the labels alone "
        "where a system's rate says labels only (PPI not used)"
        + ("; valid at every number of labels (live)." if c.mode == "live" else "; read once (planned)."),
    )
