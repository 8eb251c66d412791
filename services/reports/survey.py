"""The report of a DHP expert survey: agreement among experts with its interval, the weights per quality issue."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from db.engine import get_session
from services import metaeval
from services.dhp import survey as sv
from services.errors import InputError
from services.figures.dhp import make_weights_figure
from services.reports.common import N_EXAMPLES
from services.reports.model import Example, FigureSpec, Headline, Report, Table


def build(engine: Engine, survey_id: int, *, seed: int = 0, n_boot: int = 1000, **_: Any) -> Report:
    """An expert-weight survey: agreement among experts with its interval, the weights per quality issue."""
    with get_session(engine) as s:
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
        Headline(
            label="Krippendorff's α among experts",
            value=alpha.alpha,
            ci_low=alpha.ci_low,
            ci_high=alpha.ci_high,
            n=alpha.n_pairable,
            note=alpha.note or "nominal; questions are the units",
        ),
        Headline(label="Experts who voted", value=float(w.n_experts_voted), digits=0, note=f"of {n_invited} invited"),
        Headline(
            label="Questions with a vote",
            value=float(answered),
            digits=0,
            note=f"of {len(survey.questions)} quality issues",
        ),
    ]
    figures = [FigureSpec.of("Expert weights", make_weights_figure(wf))] if len(wf) else []
    examples = []
    for q in survey.questions[:N_EXAMPLES]:
        counts = w.counts.get(q["key"], {})
        votes = "\n".join(f"{m}: {n}" for m, n in counts.items()) or "none"
        examples.append(
            Example(
                title=f"Question: {q.get('name', q['key'])}",
                fields=[("Quality issue", str(q.get("issue", ""))), ("Votes", votes)],
            )
        )
    config = {
        "survey": {
            "id": survey.id,
            "title": survey.title,
            "status": survey.status,
            "task": survey.task,
            "created_at": survey.created_at.isoformat(),
            "closed_at": survey.closed_at.isoformat() if survey.closed_at else None,
        },
        "task_definition": survey.task_definition,
        "metrics": survey.metrics,
        "statistics": {"bootstrap_seed": seed, "bootstrap_resamples": n_boot, "weights": "vote shares per question"},
        "app": {"version": metaeval.app_version()},
    }
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
        ],
        examples=examples,
        notes=notes,
    )
