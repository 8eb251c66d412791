"""Training prompts for distilling a smaller judge (paper 003, section 4.1).

"Prompts with reasoning" are the Summ-NLI prompt (Figure 4) unchanged: the student learns the teacher's
reasoning, then the label. "Prompts without reasoning" are "still largely similar to Summ-NLI, except that
now it explicitly instructs to directly produce the classification label without any reasoning": the
same instruction, criteria and steps, with the answer section asking for the judgement alone. The
completions use the answer lines the prompts ask for ("Reasoning process: ...", "Judgement: ...").

With answers as JSON (the default), each prompt ends with the app's JSON format note and the completion is
that JSON: the prompt with reasoning is then exactly what the app's Summ-NLI sends, so a trained student
answers the app's comparison pages like any other endpoint.
"""

import json

from services.prompts.base import Prompt
from services.prompts.nli import JUDGEMENT_FORMAT, SUMM_NLI

_ANSWER_WITH = """### Reasoning process and final judgement:
Reasoning process: < Reasoning process >
Judgement: < Consistent or Inconsistent >

Please refer to the instruction, then finish Your_Task by showing your reasoning process and final judgement."""

_ANSWER_WITHOUT = """### Final judgement:
Judgement: < Consistent or Inconsistent >

Please refer to the instruction, then finish Your_Task by directly giving your final judgement, without any \
reasoning."""

assert _ANSWER_WITH in SUMM_NLI.template, "the Summ-NLI prompt changed: update the distillation prompts"

WITH_REASONING = Prompt(
    name="distill-with-reasoning",
    version="1",
    source="Paper 003, section 4.1 'Prompts with reasoning': the Summ-NLI prompt (Figure 4)",
    template=SUMM_NLI.template,
)

WITHOUT_REASONING = Prompt(
    name="distill-without-reasoning",
    version="1",
    source="Paper 003, section 4.1 'Prompts without reasoning': Summ-NLI (Figure 4), answering with the label only",
    template=SUMM_NLI.template.replace(_ANSWER_WITH, _ANSWER_WITHOUT),
)

LABEL_FORMAT = Prompt(
    name="distill-label-json-format",
    version="1",
    source="Not in the paper: the 'Judgement' line alone as JSON, for the JSON-only LLM seam",
    template="""

Give your answer as JSON only, with the line above as a field:
{"judgement": "<Consistent or Inconsistent>"}""",
)

ALL = (WITH_REASONING, WITHOUT_REASONING, JUDGEMENT_FORMAT, LABEL_FORMAT)


def prompt_with_reasoning(document: str, summary: str, *, as_json: bool = True) -> tuple[str, str]:
    """(prompt, version id) of a prompt with reasoning: Summ-NLI, with the app's JSON note when `as_json`."""
    text = WITH_REASONING.render(**{"source text": document, "summary": summary})
    if as_json:
        return text + JUDGEMENT_FORMAT.template, f"{WITH_REASONING.id}+{JUDGEMENT_FORMAT.id}"
    return text, WITH_REASONING.id


def prompt_without_reasoning(document: str, summary: str, *, as_json: bool = True) -> tuple[str, str]:
    """(prompt, version id) of a prompt without reasoning."""
    text = WITHOUT_REASONING.render(**{"source text": document, "summary": summary})
    if as_json:
        return text + LABEL_FORMAT.template, f"{WITHOUT_REASONING.id}+{LABEL_FORMAT.id}"
    return text, WITHOUT_REASONING.id


def completion_with_reasoning(reasoning: str, label: str, *, as_json: bool = True) -> str:
    """The output a prompt with reasoning teaches: the teacher's reasoning, then the label."""
    if as_json:
        return json.dumps({"reasoning": reasoning.strip(), "judgement": label.capitalize()}, ensure_ascii=False)
    return f"Reasoning process: {reasoning.strip()}\nJudgement: {label.capitalize()}"


def completion_without_reasoning(label: str, *, as_json: bool = True) -> str:
    """The output a prompt without reasoning teaches: the gold label alone."""
    if as_json:
        return json.dumps({"judgement": label.capitalize()})
    return f"Judgement: {label.capitalize()}"
