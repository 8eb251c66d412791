"""The report of one evaluation run: the document, its sentence verdicts and the rewrite rounds."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from services import metaeval, runs
from services.dcr import CONVERTER_LABELS, METHOD_LABELS, REFERENCE_NOUN, TASK_LABELS
from services.errors import InputError
from services.figures.dcr import make_rounds_figure, rounds_frame
from services.figures.nli import method_name
from services.nli import paradigms as nli
from services.reports.common import model_config, rounds_example, sha256, verdict_text
from services.reports.model import FigureSpec, Headline, Report, Table


def build(engine: Engine, run_id: int, **_: Any) -> Report:
    """One evaluation run: the document, its sentence verdicts and the rewrite rounds with changes highlighted."""
    d = runs.load(engine, run_id)
    if d is None:
        raise InputError(f"Run {run_id} does not exist (deleted?).")
    r = d.run
    first = d.rounds[0].evaluation if d.rounds else None
    out = runs.delivered(d)
    noun = REFERENCE_NOUN.get(r.task, "reference")
    heads = [
        Headline(
            label="Score Ẑ before any rewrite",
            value=first.score.z_hat if first and first.score else None,
            n=len(first.sentences) if first else None,
            note="Eq. 3 over the judged sentences",
        ),
        Headline(
            label="Score Ẑ of the delivered text" if out.judged else "Score Ẑ of the delivered text: not judged",
            value=out.z_hat,
            n=len(out.sentences) if out.judged else None,
            note=out.score_note(),
        ),
        Headline(label="Rounds", value=float(len(d.rounds)), digits=0),
        Headline(
            label="Model calls",
            value=float(d.usage.get("calls", 0)),
            digits=0,
            note=f"{d.usage.get('prompt_tokens', 0) + d.usage.get('completion_tokens', 0):,} tokens; "
            + (
                f"{d.usage['answered']:,} answered, {d.usage['retries']:,} retried or failed"
                if d.usage.get("answered") is not None
                else "answered and retried requests not counted (an older run)"
            ),
        ),
    ]
    figures, tables = [], []
    if d.rounds:
        rf = rounds_frame(d.rounds)
        figures.append(
            FigureSpec.of(
                "Verdicts and score per round",
                make_rounds_figure(rf),
                "Stacked: sentences by verdict; line: the score Ẑ (right axis).",
            )
        )
        tables.append(Table.from_frame("Rounds", rf))
    config = {
        "run": {
            "id": r.id,
            "title": r.title,
            "source": r.source,
            "status": r.status,
            "created_at": r.created_at.isoformat(),
        },
        "task": TASK_LABELS.get(r.task, r.task),
        "criteria": r.criteria or None,
        "method": METHOD_LABELS.get(r.method, r.method),
        "converter": CONVERTER_LABELS.get(r.amc, r.amc),
        "max_rounds": r.max_rounds,
        "model": model_config(r.backend_kind, r.model, r.base_url, r.params),
        "prompts": [metaeval.prompt_record(role, pid) for role, pid in sorted(r.prompt_versions.items())],
        "documents": {f"{noun} sha256": sha256(d.reference), "candidate sha256": sha256(d.candidate)},
        "app": {"version": metaeval.app_version()},
    }
    fields = [(noun.capitalize(), d.reference), ("Candidate", d.candidate)]
    method = runs.load_method(engine, run_id) if nli.is_nli(r.method) else None
    if method is not None:  # Summ-NLI, Sent-NLI, QG-QA: the verdict with the reasoning of each window or pair
        heads[0] = Headline(
            label="Share of units judged consistent",
            value=method.score,
            n=method.n_units,
            note=f"verdict: {method.label or 'none'}; {method.n_failed} unreadable",
        )
        heads[1] = Headline(
            label="Units judged",
            value=float(method.n_units - method.n_failed),
            digits=0,
            note=f"of {method.n_units} windows or question-answer pairs",
        )
        fields.append((f"{method_name(r.method, method.window)} verdict and reasoning", verdict_text(method.detail)))
    else:
        n_left = len(out.left_out)
        fields.append(
            (
                "Delivered text (every accepted rewrite applied"
                + (f"; {n_left} rewrite(s) left out)" if n_left else ")"),
                out.text,
            )
        )
        if out.left_out:
            tables.append(
                Table(
                    title="Rewrites left out of the delivered text",
                    columns=["round", "sentence", "rewrite proposed", "why it is left out"],
                    rows=[[x.round, x.index + 1, x.after, x.why] for x in out.left_out],
                    note="A rejected rewrite keeps its sentence as it was; rewrites built on it are not applied.",
                )
            )
    notes = []
    if method is None and d.rounds and out.left_out:
        notes.append(
            f"{len(out.left_out)} rewrite(s) were rejected or left out, so the delivered text is not the last "
            f"round's text. {out.score_note()}"
        )
    example = rounds_example("The document, its sentence verdicts and the rewrite rounds", d.rounds, fields)
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
        notes=([f"The run failed: {r.error}"] if r.error else []) + notes,
    )
