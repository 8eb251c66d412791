"""The judges report: judges over one dataset side by side (a saved comparison, services.judges.panels),
with the consistency rate three ways, agreement with intervals, rates of unknown and failed answers, and cost."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from services import judges
from services.datasets.store import get_dataset
from services.errors import InputError
from services.figures.judges import make_judges_rate_figure
from services.judges import tables
from services.judges.estimate import LIVE_NAME, planned_name
from services.reports.model import FigureSpec, Headline, Report, Table


def build(engine: Engine, panel_id: int, **_: Any) -> Report:
    """The report of a saved comparison of judges."""
    panel = judges.get_panel(engine, panel_id)
    if panel is None:
        raise InputError(f"Judge comparison {panel_id} does not exist.")
    if panel.options.get("view") == "compare":  # services.judges.systems.VIEW
        raise InputError(f"{panel_id} is a comparison of systems, not of judges: its report is of kind compare.")
    opts = panel.options
    prices = {str(k): tuple(v) for k, v in (opts.get("prices") or {}).items()}
    cards = judges.build_cards(
        engine,
        list(panel.batch_ids),
        dataset_id=panel.dataset_id,
        source=opts.get("source", "all"),
        budget=opts.get("budget"),
        seed=int(opts.get("seed", 0)),
        alpha=float(opts.get("alpha", 0.05)),
        prices=prices,  # type: ignore[arg-type]
    )
    level = 1.0 - cards[0].alpha
    ds = get_dataset(engine, panel.dataset_id)
    ds_name = f"{ds.name} (dataset #{ds.id})" if ds else f"dataset #{panel.dataset_id}"
    headlines = []
    for c in cards:
        p, live = c.rates.ppi, c.rates.read("live")[1]
        live_ci = "" if live.ci_low is None else f"; {LIVE_NAME}: [{live.ci_low:.3f}, {live.ci_high:.3f}]"
        headlines.append(
            Headline(
                label=f"{c.judge}: {'consistency rate, labels only' if p.labels_only else 'PPI consistency rate'}",
                value=p.estimate,
                ci_low=p.ci_low,
                ci_high=p.ci_high,
                n=c.n_labelled,
                percent=True,
                note=f"{p.basis + '; ' if p.basis else ''}{c.n_labelled} labelled of {c.n} items "
                f"({c.n_not_random} not a random draw); classical width "
                f"{'—' if c.rates.classical.width is None else f'{c.rates.classical.width:.3f}'}, PPI width "
                f"{'—' if p.width is None else f'{p.width:.3f}'}{live_ci}",
            )
        )
    notes = [
        f"Intervals are {level:.0%}: if the labelled items are a random draw, intervals made this way hold the "
        "dataset's true consistency rate at least that often. PPI (prediction-powered inference, ppi-python with "
        "PPI++ tuning) adds the judge's verdicts on every item and corrects their bias with the labelled ones. "
        "Labels not drawn at random count as the known values of their items; the intervals rest on the random ones.",
        *[f"{c.judge}: {n}" for c in cards for n in c.notes],
    ]
    linked = [
        [c.judge, x.what, f"{x.page} #{x.ref_id}", x.value, x.n, x.ci_low, x.ci_high] for c in cards for x in c.linked
    ]
    tabs = [Table.from_frame("Judge cards (★ best of each row)", tables.measures_frame(cards))]
    if linked:
        tabs.append(
            Table(
                title="Measured elsewhere", columns=["judge", "what", "where", "value", "n", "low", "high"], rows=linked
            )
        )
    return Report(
        title=panel.name or f"Judges compared on {ds_name}",
        kind="judges",
        ref_id=panel_id,
        summary=f"{len(cards)} judge(s) over {ds_name}, labels from: "
        f"{judges.LABEL_SOURCES.get(opts.get('source', 'all'), '')}.",
        configuration={
            "dataset": ds_name,
            "judges": [c.judge for c in cards],
            "alpha": cards[0].alpha,
            "labels": opts.get("source", "all"),
            **({"labels kept (budget)": opts["budget"]} if opts.get("budget") is not None else {}),
        },
        headlines=headlines,
        figures=[
            FigureSpec.of("Consistency rate", make_judges_rate_figure(tables.intervals_frame(cards), level=level))
        ],
        tables=tabs,
        notes=notes,
        interval_note=f"Brackets: {level:.0%} interval of the prediction-powered estimate (PPI++ with Student's t "
        "where each class has 15 random labels, else the labels' exact Clopper-Pearson interval), in the "
        f"{planned_name(cards[0].rates.budget)} reading; each headline's note adds the live one (a confidence "
        "sequence, valid at every number of labels at once, however often the card is read as labels arrive).",
    )
