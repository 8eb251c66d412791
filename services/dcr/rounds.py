"""Algorithm 1 of the DCR paper: evaluate, improve the inconsistent sentences, evaluate again, for up to m rounds."""

from __future__ import annotations

from collections.abc import Callable

from services.dcr.config import DCRConfig
from services.dcr.dce import evaluate
from services.dcr.rai import apply_rewrites, improve
from services.dcr.results import Round
from services.llm import LLMClient


def first_round(client: LLMClient, reference: str, sentences: list[str], cfg: DCRConfig) -> Round:
    """Round 0: evaluate the candidate as given."""
    return Round(index=0, sentences=list(sentences), evaluation=evaluate(client, reference, sentences, cfg))


def continue_rounds(
    client: LLMClient,
    reference: str,
    rounds: list[Round],
    cfg: DCRConfig,
    *,
    on_improved: Callable[[Round], None] | None = None,
    on_round: Callable[[Round], None] | None = None,
) -> list[Round]:
    """Algorithm 1 from the last round: improve and re-evaluate until all consistent or m rounds.

    Without a model (the evidence checker) there is nothing to rewrite with: the rounds are returned as they are.
    """
    if not cfg.uses_model:
        return rounds
    while rounds and rounds[-1].index < cfg.max_rounds:
        last = rounds[-1]
        if last.evaluation.fatal or last.evaluation.all_consistent:
            break
        last.rewrites, last.improve_error = improve(client, reference, last, cfg)
        if on_improved:
            on_improved(last)
        if not any(rw.changed for rw in last.rewrites):
            break
        sentences = apply_rewrites(last.sentences, last.rewrites)
        nxt = Round(index=last.index + 1, sentences=sentences, evaluation=evaluate(client, reference, sentences, cfg))
        rounds.append(nxt)
        if on_round:
            on_round(nxt)
    return rounds


def candidate_units(candidate: str, cfg: DCRConfig, sentences: list[str]) -> list[str]:
    """What is judged: the sentences, or the whole candidate as one unit for the paragraph method."""
    return [" ".join(sentences)] if cfg.method == "paragraph" else sentences
