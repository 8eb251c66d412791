"""The report of a batch (DCE + AMC, paragraph or the evidence checker) with its meta-evaluation against people."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from db import reports as db
from db.engine import get_session
from services import metaeval
from services.figures.metaeval import (
    baselines_display,
    correlations_display,
    make_figure3_figure,
    make_histograms_figure,
    make_scatter_figure,
    make_share_figure,
)
from services.figures.nli import ALL_METHOD_LABELS
from services.reports.common import GOLD, N_EXAMPLES, as_float, ci_headline, stored_rounds_example
from services.reports.model import Example, FigureSpec, Headline, Report, Table


def examples(engine: Engine, batch_id: int, n: int = N_EXAMPLES) -> list[Example]:
    """A few finished items, the ones the judge flagged first (they show reasons and rewrites)."""
    with get_session(engine) as s:
        rows = db.batch_examples(session=s, batch_id=batch_id, limit=n)
    out = []
    for bi, di, ref in rows:
        fields = [("Document", ref), ("Summary", di.candidate), ("Human label", GOLD.get(di.human_label, "—"))]
        if di.human_score is not None:
            fields.append(("Human score", f"{di.human_score:.3f}"))
        rounds = (bi.result or {}).get("rounds") or []
        out.append(stored_rounds_example(f"Item {di.external_id or di.idx}", rounds, fields))
    return out


def build(
    engine: Engine,
    batch_id: int,
    *,
    threshold: float | None = None,
    seed: int = metaeval.DEFAULT_SEED,
    n_boot: int = metaeval.DEFAULT_BOOT,
    other_batch_id: int | None = None,
    **_: Any,
) -> Report:
    """A batch and its meta-evaluation against people; with `other_batch_id`, Figure 3 compares it with that
    batch on the same items. `threshold` None: the method's own (services.metaeval.binary)."""
    data = metaeval.load_batch(engine, batch_id)
    threshold = metaeval.binary.resolve_threshold(data.batch.method, threshold)
    bundle = metaeval.bundle(engine, batch_id, seed=seed, n_boot=n_boot, threshold=threshold)
    other = metaeval.load_batch(engine, other_batch_id) if other_batch_id is not None else None
    ids = data.done["item_id"].astype(int).tolist()
    rep = metaeval.build_report(
        data,
        threshold=threshold,
        seed=seed,
        n_boot=n_boot,
        baseline_values=metaeval.cached_baselines(engine, ids),
        other=other,
    )
    b = data.batch
    corr = rep.summary.correlations.frame().set_index("statistic")
    row = lambda name: corr.loc[name] if name in corr.index else None  # noqa: E731
    c = rep.summary.classification
    sm, vm = rep.score_measure, rep.verdicts
    assert sm is not None and vm is not None  # build_report always measures both
    positive = "consistent" if c.positive == 1 else "inconsistent"
    h = rep.agreement.among_humans
    mv = rep.agreement.model_vs_majority
    rai = rep.rai.iloc[0] if len(rep.rai) else None
    heads = [
        ci_headline("Pearson r with the human score", row("pearson")),
        ci_headline("Spearman ρ", row("spearman")),
        ci_headline("Kendall τ (b)", row("kendall")),
        ci_headline("AUROC against the human label", row("auroc")),
        Headline(label=sm.name, value=sm.value, n=c.n, note=f"{sm.rests_on}; {positive} = positive class"),
        Headline(label=f"F1 of the score at {sm.threshold:g} ({positive} = positive)", value=c.f1, n=c.n),
        Headline(
            label=vm.name,
            value=vm.value,
            ci_low=vm.metric.ci_low,
            ci_high=vm.metric.ci_high,
            n=vm.metric.n,
            note=vm.rests_on + (f"; {vm.metric.note}" if vm.metric.note else ""),
        ),
        Headline(
            label="Krippendorff's α among the human raters",
            value=h.alpha if h else None,
            ci_low=h.ci_low if h else None,
            ci_high=h.ci_high if h else None,
            n=h.n_pairable if h else None,
            note="sentences with two or more votes",
        ),
        Headline(
            label="α between the model and the human majority",
            value=mv.alpha if mv else None,
            ci_low=mv.ci_low if mv else None,
            ci_high=mv.ci_high if mv else None,
            n=mv.n_pairable if mv else None,
        ),
    ]
    if rai is not None and int(rai["rounds_run"]) > 0:
        heads.append(
            Headline(
                label="RAI improvement rate (Table 4)",
                value=as_float(rai["improvement_rate"]),
                percent=True,
                n=int(rai["inconsistent"]),
            )
        )
    done = data.done
    figures = [
        FigureSpec.of(
            "Score vs human score",
            make_scatter_figure(done),
            "One bubble per distinct (human, model) pair, sized by how many items share it.",
        ),
        FigureSpec.of(
            "Figure 3",
            make_figure3_figure(rep.figure3.frame),
            f"Precision, recall and F1 at summary level; {positive} is the positive class (Fig. 3).",
        ),
    ]
    if len(rep.rounds.share) > 1:
        figures.append(FigureSpec.of("Fully consistent after each round", make_share_figure(rep.rounds.share)))
    if len(rep.rounds.scores):
        figures.append(FigureSpec.of("Scores per round", make_histograms_figure(rep.rounds.scores)))
    tables = [
        Table.from_frame("Summary level: correlations and AUROC", correlations_display(corr.reset_index())),
        Table.from_frame(f"Classification: {sm.name}", metaeval.classification_frame(c), sm.rests_on),
        Table.from_frame("Figure 3 table", rep.figure3.frame),
        Table.from_frame("Against local baselines on the same items (Tables 1-3)", baselines_display(rep.baselines)),
        Table.from_frame("RAI (Table 4)", rep.rai),
        Table.from_frame("Human agreement (Krippendorff's α)", metaeval.alpha_frame(rep.agreement)),
    ]
    ds = data.dataset
    notes = list(dict.fromkeys([*rep.notes, *rep.summary.correlations.notes, *rep.figure3.notes, *rep.agreement.notes]))
    return Report(
        title=f"Batch #{b.id}: {b.name or ALL_METHOD_LABELS.get(b.method, b.method)}",
        kind="batch",
        ref_id=b.id,
        summary=f"{ALL_METHOD_LABELS.get(b.method, b.method)} with {b.model} over "
        f"{ds.name if ds else 'a deleted dataset'}: {len(done):,} of {len(data.items):,} items scored, compared "
        "with the human judgments of the dataset.",
        configuration=bundle,
        headlines=heads,
        figures=figures,
        tables=tables,
        examples=examples(engine, batch_id),
        notes=notes,
    )
