"""What the other pages measured about a judge's model: ConsEval self-/inter-consistency alpha and DHP
discernment, found by the model's name; None when no study or run of that model exists."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Linked:
    """One number measured elsewhere: where (page and id), its value, n and interval."""

    what: str  # "ConsEval SC alpha", "ConsEval IC alpha", "DHP D (avg)"
    page: str  # the page's path, for a link
    ref_id: int
    value: float | None
    n: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None


def _conseval(engine: Engine, model: str) -> list[Linked]:
    from services import conseval

    out: list[Linked] = []
    for study in conseval.list_studies(engine):
        if study.status != "done" or not study.results:
            continue
        labels = {m.get("label") for m in study.config.get("models", []) if m.get("model") == model}
        rows = [r for r in study.results.get("rows", []) if r.get("model") in labels or r.get("model") == model]
        for kind, what in (("SC", "ConsEval self-consistency alpha"), ("IC1", "ConsEval inter-consistency alpha")):
            found = [r for r in rows if r.get("kind") == kind and r.get("value") is not None]
            found.sort(key=lambda r: r.get("method") != "base")  # the plain prompt first
            if found:
                r = found[0]
                ci = (r.get("ci_low"), r.get("ci_high"))
                out.append(Linked(what, "ConsEval", study.id, r["value"], r.get("n"), *ci))
        if out:
            return out
    return out


def _dhp(engine: Engine, model: str) -> list[Linked]:
    from services.dhp import benchmark

    for run in benchmark.runs(engine):
        if run.status != "done" or run.model != model:
            continue
        res = benchmark.discernment_of(engine, run.id)
        if res is not None and res.d_avg is not None:
            return [Linked("DHP discernment D (avg)", "DHP", run.id, res.d_avg, len(res.perturbations))]
    return []


def linked_results(engine: Engine, model: str) -> list[Linked]:
    """ConsEval and DHP results of this model (the newest finished study and run of each)."""
    if not model:
        return []
    out: list[Linked] = []
    for find in (_conseval, _dhp):
        try:
            out.extend(find(engine, model))
        except Exception:  # another page's store must never break a judge card
            log.exception("no %s results for %s", find.__name__, model)
    return out
