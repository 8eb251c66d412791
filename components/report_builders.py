"""One builder per report kind: read a run or study through its services, draw it with the pure figure
functions, and return a services.reports.Report (which services.reports.to_html writes as one file).

Each kind plugs in by one function registered in BUILDERS: `builder(engine, ref_id) -> Report`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from components.dcr_views import make_rounds_figure, rounds_frame
from components.metaeval_views import (
    baselines_display,
    correlations_display,
    make_figure3_figure,
    make_histograms_figure,
    make_scatter_figure,
    make_share_figure,
)
from components.nli_figures import ALL_METHOD_LABELS, method_name
from components.report_figures import make_method_accuracy_figure
from db.models import BatchItem, DatasetItem, Document
from services import metaeval, nli, runs, stats
from services.dcr import CONVERTER_LABELS, METHOD_LABELS, REFERENCE_NOUN, TASK_LABELS, Round
from services.errors import InputError
from services.reports import (
    Example,
    ExampleRewrite,
    ExampleRound,
    ExampleSentence,
    FigureSpec,
    Headline,
    Report,
    Table,
)

Builder = Callable[..., Report]
BUILDERS: dict[str, Builder] = {}
N_EXAMPLES = 3


def register(kind: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        BUILDERS[kind] = fn
        return fn

    return deco


def build(engine: Engine, kind: str, ref_id: int, **options: Any) -> Report:
    """The report of `kind` for `ref_id`; InputError when the kind is unknown or the subject does not exist."""
    fn = BUILDERS.get(kind)
    if fn is None:
        raise InputError(f"No report for {kind!r} in this version; available: {', '.join(sorted(BUILDERS))}.")
    return fn(engine, ref_id, **options)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rounds_example(title: str, rounds: list[Round], fields: list[tuple[str, str]]) -> Example:
    return Example(
        title=title,
        fields=fields,
        rounds=[
            ExampleRound(
                label=f"Round {r.index}" + (" (before any rewrite)" if r.index == 0 else ""),
                score=r.evaluation.score.z_hat if r.evaluation.score else None,
                sentences=[
                    ExampleSentence(text=s.text, verdict=s.verdict, reason=s.reason or s.error or "")
                    for s in r.evaluation.sentences
                ],
                rewrites=[
                    ExampleRewrite(index=w.index, before=w.before, after=w.after, reason=w.reason) for w in r.rewrites
                ],  # fmt: skip
            )
            for r in rounds
        ],
    )


# -- a DCR run ---------------------------------------------------------------------------------------
@register("run")
def run_report(engine: Engine, run_id: int, **_: Any) -> Report:
    """One evaluation run: the document, its sentence verdicts and the rewrite rounds with changes highlighted."""
    d = runs.load(engine, run_id)
    if d is None:
        raise InputError(f"Run {run_id} does not exist (deleted?).")
    r = d.run
    first = d.rounds[0].evaluation if d.rounds else None
    last = d.rounds[-1].evaluation if d.rounds else None
    noun = REFERENCE_NOUN.get(r.task, "reference")
    heads = [
        Headline(label="Score Ẑ before any rewrite", value=first.score.z_hat if first and first.score else None,
                 n=len(first.sentences) if first else None, note="Eq. 3 over the judged sentences"),
        Headline(label="Score Ẑ after the last round", value=last.score.z_hat if last and last.score else None,
                 n=len(last.sentences) if last else None),
        Headline(label="Rounds", value=float(len(d.rounds)), digits=0),
        Headline(label="Model calls", value=float(d.usage.get("calls", 0)), digits=0,
                 note=f"{d.usage.get('prompt_tokens', 0) + d.usage.get('completion_tokens', 0):,} tokens"),
    ]  # fmt: skip
    figures, tables = [], []
    if d.rounds:
        rf = rounds_frame(d.rounds)
        figures.append(FigureSpec.of("Verdicts and score per round", make_rounds_figure(rf),
                                     "Stacked: sentences by verdict; line: the score Ẑ (right axis)."))  # fmt: skip
        tables.append(Table.from_frame("Rounds", rf))
    config = {
        "run": {"id": r.id, "title": r.title, "source": r.source, "status": r.status,
                "created_at": r.created_at.isoformat()},
        "task": TASK_LABELS.get(r.task, r.task),
        "criteria": r.criteria or None,
        "method": METHOD_LABELS.get(r.method, r.method),
        "converter": CONVERTER_LABELS.get(r.amc, r.amc),
        "max_rounds": r.max_rounds,
        "model": {"backend": r.backend_kind, "model": r.model, "base_url": metaeval._public_url(r.base_url),
                  "params": metaeval._public_params(dict(r.params))},
        "prompts": [metaeval.prompt_record(role, pid) for role, pid in sorted(r.prompt_versions.items())],
        "documents": {f"{noun} sha256": _sha(d.reference), "candidate sha256": _sha(d.candidate)},
        "app": {"version": metaeval.app_version()},
    }  # fmt: skip
    fields = [(noun.capitalize(), d.reference), ("Candidate", d.candidate)]
    method = runs.load_method(engine, run_id) if nli.is_nli(r.method) else None
    if method is not None:  # Summ-NLI, Sent-NLI, QG-QA: the verdict with the reasoning of each window or pair
        heads[0] = Headline(label="Share of units judged consistent", value=method.score, n=method.n_units,
                            note=f"verdict: {method.label or 'none'}; {method.n_failed} unreadable")  # fmt: skip
        heads[1] = Headline(label="Units judged", value=float(method.n_units - method.n_failed), digits=0,
                            note=f"of {method.n_units} windows or question-answer pairs")  # fmt: skip
        fields.append((f"{method_name(r.method, method.window)} verdict and reasoning",
                       _verdict_text(method.detail)))  # fmt: skip
    else:
        fields.append(("Final text", runs.final_text(d)))
    example = _rounds_example("The document, its sentence verdicts and the rewrite rounds", d.rounds, fields)
    return Report(
        title=f"Run #{r.id}: {r.title or 'evaluation'}" + ("…" if len(r.title) >= 80 != len(d.candidate) else ""),
        kind="run",
        ref_id=r.id,
        summary=f"{METHOD_LABELS.get(r.method, r.method)} of a candidate against its {noun} with {r.model}, "
        f"{len(d.rounds)} round(s).",
        configuration=config,
        headlines=heads,
        figures=figures,
        tables=tables,
        examples=[example],
        notes=[f"The run failed: {r.error}"] if r.error else [],
    )


# -- a DCR / evidence batch with its meta-evaluation -----------------------------------------------
def _ci_headline(label: str, row: pd.Series | None, n: int | None = None) -> Headline:
    if row is None:
        return Headline(label=label, value=None)
    return Headline(label=label, value=_f(row.get("value")), ci_low=_f(row.get("ci_low")),
                    ci_high=_f(row.get("ci_high")), n=int(row.get("n") or 0) if n is None else n)  # fmt: skip


def _f(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def batch_examples(engine: Engine, batch_id: int, n: int = N_EXAMPLES) -> list[Example]:
    """A few finished items, the ones the judge flagged first (they show reasons and rewrites)."""
    with Session(engine) as s:
        rows = s.exec(
            select(BatchItem, DatasetItem, Document.text)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.batch_id == batch_id, BatchItem.status == "done")
            # Items that went through rewrite rounds first (they show the most), then the ones flagged hardest.
            .order_by(BatchItem.n_rounds.desc(), BatchItem.score, DatasetItem.idx)
            .limit(n)
        ).all()
    out = []
    for bi, di, ref in rows:
        result = bi.result or {}
        rounds = result.get("rounds") or []
        gold = {1: "consistent", 0: "inconsistent"}.get(di.human_label, "—")
        fields = [("Document", ref), ("Summary", di.candidate), ("Human label", gold)]
        if di.human_score is not None:
            fields.append(("Human score", f"{di.human_score:.3f}"))
        out.append(
            Example(
                title=f"Item {di.external_id or di.idx}",
                fields=fields,
                rounds=[
                    ExampleRound(
                        label=f"Round {rd.get('round', i)}" + (" (before any rewrite)" if i == 0 else ""),
                        score=rd.get("score"),
                        sentences=[
                            ExampleSentence(
                                text=x.get("text", ""),
                                verdict=x.get("verdict") or "unknown",
                                reason=x.get("reason") or x.get("error") or "",
                            )
                            for x in rd.get("sentences") or []
                        ],
                        rewrites=[
                            ExampleRewrite(
                                index=w.get("index", 0),
                                before=w.get("before", ""),
                                after=w.get("after", ""),
                                reason=w.get("reason") or "",
                            )
                            for w in rd.get("rewrites") or []
                        ],
                    )  # fmt: skip
                    for i, rd in enumerate(rounds)
                ],
            )
        )
    return out


@register("batch")
def batch_report(
    engine: Engine,
    batch_id: int,
    *,
    threshold: float = metaeval.DEFAULT_THRESHOLD,
    seed: int = metaeval.DEFAULT_SEED,
    n_boot: int = metaeval.DEFAULT_BOOT,
    other_batch_id: int | None = None,
    **_: Any,
) -> Report:
    """A batch (DCE + AMC, paragraph or the evidence checker) and its meta-evaluation against people; with
    `other_batch_id`, Figure 3 compares it with that batch on the same items."""
    data = metaeval.load_batch(engine, batch_id)
    bundle = metaeval.bundle(engine, batch_id, seed=seed, n_boot=n_boot, threshold=threshold)
    other = metaeval.load_batch(engine, other_batch_id) if other_batch_id is not None else None
    ids = data.done["item_id"].astype(int).tolist()
    rep = metaeval.build_report(
        data, threshold=threshold, seed=seed, n_boot=n_boot, baseline_values=metaeval.cached_baselines(engine, ids),
        other=other,
    )  # fmt: skip
    b = data.batch
    corr = rep.summary.correlations.frame().set_index("statistic")
    row = lambda name: corr.loc[name] if name in corr.index else None  # noqa: E731
    c = rep.summary.classification
    h = rep.agreement.among_humans
    mv = rep.agreement.model_vs_majority
    rai = rep.rai.iloc[0] if len(rep.rai) else None
    heads = [
        _ci_headline("Pearson r with the human score", row("pearson")),
        _ci_headline("Spearman ρ", row("spearman")),
        _ci_headline("Kendall τ (b)", row("kendall")),
        _ci_headline("AUROC against the human label", row("auroc")),
        Headline(label=f"Balanced accuracy at score < {threshold:g}", value=c.balanced_accuracy, n=c.n,
                 note="consistent = positive class"),
        Headline(label="F1 (consistent = positive)", value=c.f1, n=c.n),
        Headline(label="Krippendorff's α among the human raters", value=h.alpha if h else None,
                 ci_low=h.ci_low if h else None, ci_high=h.ci_high if h else None,
                 n=h.n_pairable if h else None, note="sentences with two or more votes"),
        Headline(label="α between the model and the human majority", value=mv.alpha if mv else None,
                 ci_low=mv.ci_low if mv else None, ci_high=mv.ci_high if mv else None,
                 n=mv.n_pairable if mv else None),
    ]  # fmt: skip
    if rai is not None and int(rai["rounds_run"]) > 0:
        heads.append(Headline(label="RAI improvement rate (Table 4)", value=_f(rai["improvement_rate"]),
                              percent=True, n=int(rai["inconsistent"])))  # fmt: skip
    done = data.done
    figures = [
        FigureSpec.of("Score vs human score", make_scatter_figure(done),
                      "One bubble per distinct (human, model) pair, sized by how many items share it."),
        FigureSpec.of("Figure 3", make_figure3_figure(rep.figure3.frame),
                      "Precision, recall and F1 at summary level; consistent is the positive class (Fig. 3)."),
    ]  # fmt: skip
    if len(rep.rounds.share) > 1:
        figures.append(FigureSpec.of("Fully consistent after each round", make_share_figure(rep.rounds.share)))
    if len(rep.rounds.scores):
        figures.append(FigureSpec.of("Scores per round", make_histograms_figure(rep.rounds.scores)))
    tables = [
        Table.from_frame("Summary level: correlations and AUROC", correlations_display(corr.reset_index())),
        Table.from_frame("Classification at the threshold", metaeval.classification_frame(c)),
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
        examples=batch_examples(engine, batch_id),
        notes=notes,
    )


# -- a ConsEval study --------------------------------------------------------------------------------
def _public_models(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "base_url": metaeval._public_url(m.get("base_url"))} for m in models]


@register("conseval")
def conseval_report(engine: Engine, study_id: int, **_: Any) -> Report:
    """A ConsEval study: self- and inter-consistency with intervals, Table 5, the radar, a few ratings."""
    from components.conseval_figures import make_ic_figure, make_matrix_figure, make_radar_figure, make_sc_figure
    from services import conseval
    from services.prompts import conseval as cprompts

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
            where = " · ".join(str(best[c]) for c in ("model", "variant", "criterion", "granularity", "scale")
                               if best.get(c) not in (None, ""))  # fmt: skip
            heads.append(Headline(label=f"Best {label}", value=_f(best["value"]), ci_low=_f(best["ci_low"]),
                                  ci_high=_f(best["ci_high"]), n=int(best["n"] or 0), note=where))  # fmt: skip
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
        cols = ["kind", "model", "variant", "criterion", "granularity", "scale", "value", "ci_low", "ci_high", "n",
                "note"]  # fmt: skip
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
        examples.append(Example(title=f"Item {int(it['idx']) + 1} ({it['criterion']})",
                                fields=[("Query", str(it["query"])), ("Response", str(it["response"])),
                                        ("Ratings (first 12)", answers or "none yet")]))  # fmt: skip
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


# -- an NLI comparison: the methods run over one dataset, side by side ------------------------------
@dataclass(frozen=True)
class BalancedAccuracy:
    """Balanced accuracy of binary verdicts against gold labels, with a seeded percentile bootstrap interval."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


def balanced_accuracy(pred: np.ndarray, gold: np.ndarray, *, seed: int = 0, n_boot: int = 1000) -> BalancedAccuracy:
    """Mean recall of both classes; the interval resamples items (None when a resample lacks a class)."""
    pred, gold = np.asarray(pred, dtype=int), np.asarray(gold, dtype=int)
    n = int(gold.size)

    def ba(p: np.ndarray, g: np.ndarray) -> float | None:
        pos, neg = g == 1, g == 0
        if not pos.any() or not neg.any():
            return None
        return float(((p[pos] == 1).mean() + (p[neg] == 0).mean()) / 2)

    value = ba(pred, gold) if n else None
    if value is None or n_boot <= 0:
        return BalancedAccuracy(value, None, None, n)
    rng = np.random.default_rng(seed)
    boots = [ba(pred[i], gold[i]) for i in rng.integers(0, n, size=(n_boot, n))]
    ok = np.array([b for b in boots if b is not None])
    if len(ok) < n_boot / 2:
        return BalancedAccuracy(value, None, None, n)
    return BalancedAccuracy(value, float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5)), n)


def _verdict_text(result: dict[str, Any] | None) -> str:
    """A method's verdict on one item with its reasoning, from the stored record."""
    r = result or {}
    if "label" not in r and r.get("rounds"):
        rd = r["rounds"][0]
        lines = [f"#{s.get('index', i) + 1} {s.get('verdict')}: {s.get('reason') or s.get('error') or ''}"
                 for i, s in enumerate(rd.get("sentences") or [])]  # fmt: skip
        score = rd.get("score")
        head = "consistent" if score is not None and score >= metaeval.CONSISTENT_AT else "inconsistent"
        shown = "no verdict" if score is None else f"{head} (Ẑ = {score:.3f})"
        return shown + "\n" + "\n".join(lines)
    label = r.get("label") or "no verdict"
    parts = []
    if r.get("summary"):
        parts.append(r["summary"].get("reasoning") or r["summary"].get("error") or "")
    for w in r.get("windows") or []:
        parts.append(f"[{w.get('label') or '?'}] {w.get('text', '')} — {w.get('reasoning') or w.get('error') or ''}")
    for p in r.get("pairs") or []:
        parts.append(f"[{p.get('judgement') or '?'}] Q: {p.get('question')} A: {p.get('expected_answer')} — "
                     f"{p.get('reasoning') or p.get('error') or ''}")  # fmt: skip
    return label + ("\n" + "\n".join(x for x in parts if x) if parts else "")


@register("nli")
def nli_report(engine: Engine, batch_id: int, *, seed: int = 0, n_boot: int = 1000, **_: Any) -> Report:
    """This batch beside every other finished batch over the same dataset (Summ-NLI, Sent-NLI, QG-QA, DCE...):
    balanced accuracy against the gold label with intervals on the items all of them finished, and cost."""
    from components.nli_figures import make_method_cost_figure
    from services import batches as bsvc

    first = bsvc.progress(engine, batch_id)
    if first is None:
        raise InputError(f"Batch {batch_id} does not exist.")
    ds_id = first.batch.dataset_id
    peers = [b for b in bsvc.list_batches(engine, limit=1000)
             if b.dataset_id == ds_id and b.status in ("done", "cancelled") and b.id != batch_id]  # fmt: skip
    chosen = [first.batch, *sorted(peers, key=lambda b: b.id)]
    data = {b.id: metaeval.load_batch(engine, b.id, sentences=False) for b in chosen}
    common = None
    for d in data.values():
        ids = set(d.done.loc[d.done["human_label"].notna(), "item_id"].astype(int))
        common = ids if common is None else common & ids
    common = sorted(common or [])
    rows, notes = [], []
    for b in chosen:
        d = data[b.id].done.set_index("item_id").loc[common] if common else data[b.id].done.iloc[0:0]
        pred = (d["score"] >= metaeval.CONSISTENT_AT).astype(int).to_numpy()
        gold = d["human_label"].astype(int).to_numpy()
        ba = balanced_accuracy(pred, gold, seed=seed, n_boot=n_boot)
        c = stats.classification(d["score"].to_numpy(float), d["human_label"].to_numpy(float),
                                          metaeval.CONSISTENT_AT, positive=metaeval.POSITIVE)  # fmt: skip
        p = bsvc.progress(engine, b.id)
        window = (b.params or {}).get("window")
        rows.append({
            "method": f"{method_name(b.method, window)} #{b.id}", "model": b.model, "batch": b.id, "n": ba.n,
            "value": ba.value, "ci_low": ba.ci_low, "ci_high": ba.ci_high, "precision": c.precision,
            "recall": c.recall, "f1": c.f1, "calls": p.calls if p else 0, "tokens": p.tokens if p else 0,
        })  # fmt: skip
    df = pd.DataFrame(rows)
    ds = data[batch_id].dataset
    if not common:
        notes.append("No item has a gold label and a verdict from every batch: nothing to compare yet.")
    elif len(chosen) == 1:
        notes.append("Only this batch ran over the dataset: run the other methods over it to compare them.")
    else:
        notes.append(f"Compared on the {len(common):,} labelled items every batch finished.")
    heads = [
        Headline(
            label=f"Balanced accuracy · {r['method']}",
            value=r["value"],
            ci_low=r["ci_low"],
            ci_high=r["ci_high"],
            n=r["n"],
            note=f"{r['model']} · {r['calls']:,} calls",
        )  # fmt: skip
        for r in rows
    ]
    cells = [Headline(label="", value=r["value"], ci_low=r["ci_low"], ci_high=r["ci_high"]).text() for r in rows]
    table = df.assign(**{"balanced accuracy [95% CI]": cells})
    table = table[["method", "model", "n", "balanced accuracy [95% CI]", "precision", "recall", "f1", "calls",
                   "tokens"]]  # fmt: skip
    examples = []
    with Session(engine) as s:
        for item_id in common[:N_EXAMPLES]:
            di = s.get(DatasetItem, item_id)
            doc = s.get(Document, di.reference_id)
            fields = [("Document", doc.text), ("Summary", di.candidate),
                      ("Gold label", {1: "consistent", 0: "inconsistent"}.get(di.human_label, "—"))]  # fmt: skip
            for b in chosen:
                bi = s.exec(select(BatchItem).where(BatchItem.batch_id == b.id, BatchItem.item_id == item_id)).first()
                fields.append((rows[chosen.index(b)]["method"], _verdict_text(bi.result if bi else None)))
            examples.append(Example(title=f"Item {di.external_id or di.idx}", fields=fields))
    config = {
        "dataset": None if ds is None else {"id": ds.id, "name": ds.name, "sha256": ds.sha256, "format": ds.format},
        "batches": [
            {
                "id": b.id,
                "method": b.method,
                "model": b.model,
                "base_url": metaeval._public_url(b.base_url),
                "params": metaeval._public_params(dict(b.params)),
                "prompt_versions": dict(b.prompt_versions),
            }
            for b in chosen
        ],  # fmt: skip
        "statistics": {
            "bootstrap_seed": seed,
            "bootstrap_resamples": n_boot,
            "verdict": "consistent when every unit is (Eq. 2/4; DCE: score 1)",
            "positive_class": "consistent (precision, recall, F1)",
        },  # fmt: skip
        "app": {"version": metaeval.app_version()},
    }
    figures = []
    if len(df):
        figures = [FigureSpec.of("Balanced accuracy per method", make_method_accuracy_figure(df)),
                   FigureSpec.of("Cost per method", make_method_cost_figure(df))]  # fmt: skip
    return Report(
        title=f"NLI comparison on {ds.name if ds else 'a deleted dataset'} (batch #{batch_id})",
        kind="nli",
        ref_id=batch_id,
        summary="Zero-shot factual-inconsistency paradigms (Summ-NLI, Sent-NLI, QG-QA; paper 003) beside the other "
        "methods run over the same dataset, judged by balanced accuracy against the gold labels.",
        configuration=config,
        headlines=heads,
        figures=figures,
        tables=[Table.from_frame("Methods side by side", table)],
        examples=examples,
        notes=notes,
    )


# -- a DHP expert survey --------------------------------------------------------------------------------
@register("survey")
def survey_report(engine: Engine, survey_id: int, *, seed: int = 0, n_boot: int = 1000, **_: Any) -> Report:
    """An expert-weight survey: agreement among experts with its interval, the weights per quality issue."""
    from components.dhp_figures import make_weights_figure
    from services import survey as sv

    with Session(engine) as s:
        survey = sv.get_survey(survey_id, session=s)
        if survey is None:
            raise InputError(f"Survey {survey_id} does not exist (deleted?).")
        w = sv.weights(survey_id, session=s)
        wf = sv.weights_frame(w, survey)
        alpha = sv.agreement(survey_id, session=s, n_boot=n_boot, seed=seed)
        answers = sv.answers_matrix(survey_id, session=s)
        n_invited = len(sv.experts(survey_id, session=s))
    answered = len(w.weights)
    heads = [
        Headline(label="Krippendorff's α among experts", value=alpha.alpha, ci_low=alpha.ci_low,
                 ci_high=alpha.ci_high, n=alpha.n_pairable, note=alpha.note or "nominal; questions are the units"),
        Headline(label="Experts who voted", value=float(w.n_experts_voted), digits=0, note=f"of {n_invited} invited"),
        Headline(label="Questions with a vote", value=float(answered), digits=0,
                 note=f"of {len(survey.questions)} quality issues"),
    ]  # fmt: skip
    figures = [FigureSpec.of("Expert weights", make_weights_figure(wf))] if len(wf) else []
    examples = []
    for q in survey.questions[:N_EXAMPLES]:
        counts = w.counts.get(q["key"], {})
        votes = "\n".join(f"{m}: {n}" for m, n in counts.items()) or "none"
        examples.append(Example(title=f"Question: {q.get('name', q['key'])}",
                                fields=[("Quality issue", str(q.get("issue", ""))), ("Votes", votes)]))  # fmt: skip
    config = {
        "survey": {"id": survey.id, "title": survey.title, "status": survey.status, "task": survey.task,
                   "created_at": survey.created_at.isoformat(),
                   "closed_at": survey.closed_at.isoformat() if survey.closed_at else None},
        "task_definition": survey.task_definition,
        "metrics": survey.metrics,
        "statistics": {"bootstrap_seed": seed, "bootstrap_resamples": n_boot, "weights": "vote shares per question"},
        "app": {"version": metaeval.app_version()},
    }  # fmt: skip
    notes = [] if survey.status == "closed" else ["The survey is still open: weights can change as experts vote."]
    return Report(
        title=f"Expert survey #{survey.id}: {survey.title}",
        kind="survey",
        ref_id=survey.id,
        summary="Which metric each quality issue impacts most, by expert vote (DHP, Figure 5); the vote shares "
        "are the expert weights of D_EW.",
        configuration=config,
        headlines=heads,
        figures=figures,
        tables=[
            Table.from_frame("Weights per question", wf),
            Table.from_frame("Answers per expert", answers, index=True),
        ],  # fmt: skip
        examples=examples,
        notes=notes,
    )


# -- a DHP benchmark run -----------------------------------------------------------------------------
@register("dhp")
def dhp_report(engine: Engine, run_id: int, **_: Any) -> Report:
    """A DHP benchmark run: discernment per perturbation (D, and D_EW with a closed survey's expert weights),
    D_avg and D_min, the Wilcoxon tests, and a few original / perturbed pairs with the change highlighted."""
    import json as _json

    from components.dhp_figures import make_discernment_figure, make_perturbation_figure, overall_frame
    from services import dhp
    from services import survey as sv

    with Session(engine) as s:
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
        heads = [
            Headline(
                label="D_avg (level-weighted)",
                value=res.d_avg,
                digits=2,
                note="D = log_0.05 of the combined p; 1 at p = 0.05",
            ),
            Headline(label="D_min", value=res.d_min, digits=2),
            Headline(label="D_paper avg", value=res.d_paper_avg, digits=2, note=dhp.D_PAPER_FORMULA),
            Headline(label="D_paper min", value=res.d_paper_min, digits=2),
            Headline(label="D_EW avg (expert weights)", value=res.d_ew_avg, digits=2),
            Headline(label="D_EW min", value=res.d_ew_min, digits=2),
        ]
        if res.avg_note:
            notes.append(f"D_avg: {res.avg_note}.")
        summary = dhp.summary_frame([res])
        per = summary[summary["level"] != "overall"]
        figures.append(FigureSpec.of("Discernment per perturbation",
                                     make_perturbation_figure(per.assign(value=per["D"])),
                                     "D = log_0.05(p) of the one-sided Wilcoxon tests combined by the harmonic "
                                     "mean p; D > 1 means p < 0.05."))  # fmt: skip
        if per["D_EW"].notna().any():
            figures.append(FigureSpec.of("Discernment per perturbation with expert weights (D_EW)",
                                         make_perturbation_figure(per.assign(value=per["D_EW"]))))  # fmt: skip
        figures.append(FigureSpec.of("D_avg, D_min, D_paper, D_EW", make_discernment_figure(overall_frame([res])),
                                     f"{dhp.D_FORMULA}; {dhp.D_PAPER_FORMULA}"))  # fmt: skip
        tables = [Table.from_frame("D, D_paper and D_EW per perturbation", summary),
                  Table.from_frame("Wilcoxon tests per perturbation and metric", dhp.results_frame(res),
                                   note=res.zero_method_note)]  # fmt: skip
    examples = []
    if len(texts):
        pert = texts[(texts["perturbation"] != "original") & texts["error"].isna()]
        for _, t in pert.drop_duplicates("perturbation").head(N_EXAMPLES).iterrows():
            sc = scores[(scores["item_id"] == t["item_id"]) & (scores["perturbation"] == t["perturbation"])]
            lines = "\n".join(f"{r.metric}: original {r.original:.2f} → perturbed {r.perturbed:.2f}"
                              for r in sc.itertuples())  # fmt: skip
            examples.append(Example(
                title=f"{t['perturbation']} ({t['level']}) on item {t['item_id']}",
                fields=[("Mean scores", lines or "not scored yet"), ("Detail", str(t["detail"] or ""))],
                rounds=[ExampleRound(label="The perturbation, changes highlighted",
                                     rewrites=[ExampleRewrite(index=0, before=str(t["original"]),
                                                              after=str(t["text"]))])],
            ))  # fmt: skip
    items_hash = _sha(_json.dumps(dset.items, sort_keys=True, ensure_ascii=False)) if dset else None
    config = {
        "run": {"id": run.id, "status": run.status, "repeats": run.repeats, "seed": run.seed,
                "created_at": run.created_at.isoformat()},
        "model": {"backend": run.backend_kind, "model": run.model, "base_url": metaeval._public_url(run.base_url),
                  "params": metaeval._public_params(dict(run.params))},
        "prompts": [{"role": k, "id": v} for k, v in sorted(run.prompt_versions.items())],
        "set": None if dset is None else {"id": dset.id, "name": dset.name, "task": dset.task, "seed": dset.seed,
                                           "items": len(dset.items), "items sha256": items_hash,
                                           "perturbed by": dset.model or "rules only"},
        "expert weights": None if closed is None else {"survey": closed[0].id, "title": closed[0].title},
        "app": {"version": metaeval.app_version()},
    }  # fmt: skip
    return Report(
        title=f"DHP benchmark run #{run.id}: {run.model}",
        kind="dhp",
        ref_id=run.id,
        summary="Discernment of Hierarchical Perturbation (DHP): does the evaluator score texts lower once they "
        "are damaged? One-sided Wilcoxon tests per metric, combined by the harmonic mean p, D = log_0.05(p).",
        configuration=config,
        headlines=heads,
        figures=figures,
        tables=tables,
        examples=examples,
        notes=notes,
    )
