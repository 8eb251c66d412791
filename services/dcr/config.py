"""What a DCR run does (task, method, converter, rounds, Eq. 3's alpha and beta) and the labels the app shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from services.dcr.results import DEFAULT_ALPHA, DEFAULT_BETA
from services.prompts import dcr as P

Task = Literal["summarization", "semantic", "custom"]
Method = Literal["dce-amc", "paragraph", "evidence"]
Converter = Literal["llm", "rule"]

TASK_LABELS = {
    "summarization": "Summarization (article → summary, Table 8)",
    "semantic": "Semantic / QA answer (true answer → attempt, Table 7)",
    "custom": "Custom criteria",
}
METHOD_LABELS = {
    "dce-amc": "Sentence by sentence (DCE + AMC)",
    "paragraph": "Paragraph-level baseline (Tables 11, 12)",
    "evidence": "Evidence checker (offline, no model call)",
}
# What the reference is called in the evidence checker's reasons, by task.
REFERENCE_NOUN = {"summarization": "article", "semantic": "true answer", "custom": "reference"}
NO_IMPROVE_REASON = (
    "The evidence checker makes no model call, and improving needs a model to rewrite the sentences: "
    "choose another evaluator to improve a candidate."
)
CONVERTER_LABELS = {
    "rule": "Rule: the verdict field, else the verdict each reason states (no extra call)",
    "llm": "LLM: the paper's Auto-Metric Converter (Table 9, one call)",
}
# Beyond the paper: the DCE's structured output asks for an explicit verdict beside each reason, so the
# converter reads what the model decided instead of guessing it from prose. The part of the cache key
# that says so (the prompt text itself is the paper's, unchanged).
VERDICT_FIELD = "verdict-field@1"


@dataclass(frozen=True)
class DCRConfig:
    """What to run; recorded with every run."""

    task: Task = "summarization"
    criteria: str = ""
    method: Method = "dce-amc"
    amc: Converter = "rule"
    max_rounds: int = 3
    alpha: float = DEFAULT_ALPHA  # Eq. 3's alpha and beta as set by the user (Appendix C.1: both 0); the
    beta: float = DEFAULT_BETA  # offsets for paragraph-level reasons (Appendix E.4) are added to these

    @property
    def uses_model(self) -> bool:
        """Whether this configuration calls a model at all (the evidence checker does not)."""
        return self.method != "evidence"

    def dce_prompt(self) -> P.Prompt:
        if self.method == "paragraph":
            return P.PARAGRAPH_DCE
        return {"summarization": P.SUMMARIZATION_DCE, "semantic": P.SEMANTIC_DCE, "custom": P.CUSTOM_DCE}[self.task]

    def improve_prompt(self) -> P.Prompt:
        return P.PARAGRAPH_RAI if self.method == "paragraph" else P.RAI

    def prompt_versions(self) -> dict[str, str]:
        if self.method == "evidence":
            from services.dcr.evidence import VERSION

            return {"evaluator": VERSION}
        out = {"evaluator": self.dce_prompt().id, "improver": self.improve_prompt().id}
        out["converter"] = P.AMC.id if self.amc == "llm" else "rule@1"
        return out


def user_message(content: str) -> list[dict]:
    """A one-message conversation, as every DCR prompt is sent."""
    return [{"role": "user", "content": content}]
