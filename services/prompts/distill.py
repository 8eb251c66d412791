"""Training prompts for distilling a smaller judge (paper 003, section 4.1).

"Prompts with reasoning" are the Summ-NLI prompt (Figure 4) unchanged: the student learns the teacher's
reasoning, then the label. "Prompts without reasoning" are "still largely similar to Summ-NLI, except that
now it explicitly instructs to directly produce the classification label without any reasoning": the
same instruction, criteria and steps, with the answer section asking for the judgement alone. The
completions use the answer lines the prompts ask for ("Reasoning process: ...", "Judgement: ...").
"""

from services.prompts.base import Prompt
from services.prompts.nli import SUMM_NLI

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

ALL = (WITH_REASONING, WITHOUT_REASONING)


def completion_with_reasoning(reasoning: str, label: str) -> str:
    """The output a prompt with reasoning teaches: the teacher's reasoning, then the label."""
    return f"Reasoning process: {reasoning.strip()}\nJudgement: {label.capitalize()}"


def completion_without_reasoning(label: str) -> str:
    """The output a prompt without reasoning teaches: the gold label alone."""
    return f"Judgement: {label.capitalize()}"
