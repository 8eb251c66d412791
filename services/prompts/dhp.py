"""The DHP paper's prompts: Auto-CoT perturbation prompts (Appendix B) and G-Eval style rating prompts
(Appendix E), one per task and metric.

The paper quotes two prompts in full: the Minor Fictional Named Entities perturbation for summaries and the
Coherence rating of summaries. Those are reproduced word for word (for summaries; other tasks put their own
nouns in the same places); the others follow the same structure (task, criterion or adjustment, numbered
steps, the text) with the descriptions of Table 2 and Appendix A. As in the paper, a perturbation prompt ends
with "Revised Summary:" and a rating prompt with Appendix E's last line, "Evaluation Score (please don't give any
feedback, just give a score ONLY) - Coherence:" (the metric's name in place of Coherence), and the reply is read
as written; asking for JSON instead (`STRUCTURED`) is an option of this app, labelled so, which appends one line
asking for it after the paper's prompt.
"""

from __future__ import annotations

from services.prompts.base import Prompt

SOURCE = "DHP paper (Wang et al.), Appendix B (perturbation) and Appendix E (evaluation)"

# -- perturbation (Appendix B) --------------------------------------------------------------------
_PERTURB_HEAD = """You will be given one {text_noun} written for {a_source}. Your task is to adjust the {text_noun} by implementing a specific change.

Please make sure you read and understand these instructions carefully.

Adjustment: {adjustment}

Adjustment Steps:

{steps}

{text_label}:

{text}

Revised {text_label}:"""
PERTURB_JSON_LINE = """

Reply with JSON only, in the form {"revised": "the revised {text_noun}"}."""
STRUCTURED = "structured"
ANSWER_FORMATS = {
    "plain": "Plain reply, read as written (the paper's prompts, Appendices B and E)",
    STRUCTURED: "Structured JSON reply (an extra line asks for it; not the paper's prompt)",
}

_ADJUST: dict[tuple[str, str], tuple[str, str]] = {
    ("fictional_entities", "minor"): (
        "Please substitute only one critical named entity within the {text_noun} (e.g., a name, a location, a "
        "specific number, a technical term, etc.) with a fictional counterpart.",
        """1. Identify the critical named entity within the {text_noun}. This could be a person's name, a location, a specific number, or any other specific detail that is crucial to the {text_noun}.

2. Create a fictional counterpart for the identified entity. This could be a fictional name, a fictional location, a fictional number, a fictional technical term etc. Make sure that the fictional counterpart is appropriate and fits within the context of the {text_noun}.

3. Replace the identified entity with its fictional counterpart in the {text_noun}. Ensure that the replacement is grammatically correct and maintains the overall meaning and flow of the {text_noun}.

4. Review the adjusted {text_noun} to ensure that it still makes sense and conveys the main points of the {source_noun}, despite the change in one critical named entity.""",
    ),
    ("fictional_entities", "major"): (
        "Please substitute two or more critical named entities within the {text_noun} (e.g., names, locations, "
        "specific numbers, technical terms, etc.) with fictional counterparts.",
        """1. Identify the critical named entities within the {text_noun}. These could be people's names, locations, specific numbers, or any other specific details that are crucial to the {text_noun}.

2. Create a fictional counterpart for each identified entity. Make sure that each fictional counterpart is appropriate and fits within the context of the {text_noun}.

3. Replace each identified entity with its fictional counterpart in the {text_noun}. Ensure that the replacements are grammatically correct and maintain the overall flow of the {text_noun}.

4. Review the adjusted {text_noun} to ensure that it still reads naturally, despite the changed named entities.""",
    ),
    ("fictional_entities", "single"): (
        "Please substitute one critical named entity within the {text_noun} (e.g., a name, a location, a specific "
        "number, etc.) with a fictional counterpart.",
        """1. Identify the critical named entity within the {text_noun}. This could be a person's name, a location, a specific number, or any other specific detail that is crucial to the {text_noun}.

2. Create a fictional counterpart for the identified entity that fits within the context of the {text_noun}.

3. Replace the identified entity with its fictional counterpart. Ensure that the replacement is grammatically correct.

4. Review the adjusted {text_noun} to ensure that it still reads naturally, despite the change in one critical named entity.""",
    ),
    ("grammar", "minor"): (
        "Please modify the {text_noun} to create one grammatical error, such as subject-verb disagreement, "
        "noun-pronoun disagreement, incorrect verb tense, misuse of preposition, or a sentence fragment.",
        """1. Read the {text_noun} and choose one place where a grammatical error can be introduced.

2. Choose the type of error: subject-verb disagreement, noun-pronoun disagreement, incorrect verb tense, misuse of preposition, or a sentence fragment.

3. Introduce the error at the chosen place, changing as few words as possible and keeping the content the same.

4. Review the adjusted {text_noun} to ensure that it contains exactly this grammatical error and still conveys the same information.""",
    ),
    ("grammar", "major"): (
        "Please modify the {text_noun} to create two or more grammatical errors, such as subject-verb disagreement, "
        "noun-pronoun disagreement, incorrect verb tense, misuse of preposition, and sentence fragment, etc.",
        """1. Read the {text_noun} and choose two or more places where grammatical errors can be introduced.

2. For each place, choose the type of error: subject-verb disagreement, noun-pronoun disagreement, incorrect verb tense, misuse of preposition, or a sentence fragment.

3. Introduce the errors at the chosen places, keeping the content the same.

4. Review the adjusted {text_noun} to ensure that it contains the grammatical errors and still conveys the same information.""",
    ),
    ("rewrite_insert", "minor"): (
        "Please select one sentence from the {text_noun}, rephrase it, and insert the rewritten version immediately "
        "after the original sentence.",
        """1. Read the {text_noun} and select one sentence.

2. Rephrase the selected sentence with different words and structure, keeping its meaning.

3. Insert the rephrased sentence immediately after the original sentence. Leave every other sentence unchanged.

4. Review the adjusted {text_noun} to ensure that both the original and the rephrased sentence are present.""",
    ),
    ("rewrite_insert", "major"): (
        "Please select two or more sentences from the {text_noun}, rephrase them, and insert the rewritten versions "
        "immediately after the original sentences.",
        """1. Read the {text_noun} and select two or more sentences.

2. Rephrase each selected sentence with different words and structure, keeping its meaning.

3. Insert each rephrased sentence immediately after its original sentence. Leave every other sentence unchanged.

4. Review the adjusted {text_noun} to ensure that the original and the rephrased sentences are all present.""",
    ),
}
_ADJUST[("grammar", "single")] = _ADJUST[("grammar", "minor")]
_ADJUST[("rewrite_insert", "single")] = _ADJUST[("rewrite_insert", "minor")]


_ADJUST[("grammar", "one_or_more")] = (
    "Please modify the {text_noun} to create one or more grammatical errors, such as subject-verb disagreement, "
    "noun-pronoun disagreement, incorrect verb tense, misuse of preposition, and sentence fragment, etc.",
    """1. Read the {text_noun} and choose one or more places where grammatical errors can be introduced.

2. For each place, choose the type of error: subject-verb disagreement, noun-pronoun disagreement, incorrect verb tense, misuse of preposition, or a sentence fragment.

3. Introduce the errors at the chosen places, keeping the content the same.

4. Review the adjusted {text_noun} to ensure that it contains the grammatical errors and still conveys the same information.""",
)
_ADJUST[("grammar", "every_sentence")] = (
    "Please modify the {text_noun} for creating two or more grammatical errors, spread over its sentences (at "
    "least one in every sentence), such as subject-verb disagreement, noun-pronoun disagreement, incorrect verb "
    "tense, misuse of preposition, and sentence fragment, etc.",
    """1. Read the {text_noun} sentence by sentence.

2. In every sentence, choose at least one place where a grammatical error can be introduced, and its type: subject-verb disagreement, noun-pronoun disagreement, incorrect verb tense, misuse of preposition, or a sentence fragment.

3. Introduce the errors at the chosen places, keeping the content the same.

4. Review the adjusted {text_noun} to ensure that every sentence contains a grammatical error and the text still conveys the same information.""",
)
# Table 2 words Grammatical Errors per task: "two or more" errors in summaries and translations, "one or more"
# in answers, one in story endings; it gives one wording for both degrees, so that wording is the minor
# degree and the major one asks for more (errors spread over every sentence; answers: two or more).
_GRAMMAR: dict[tuple[str, str], str] = {
    **{(t, "minor"): "major" for t in ("summarization", "sumpubmed", "translation")},
    **{(t, "major"): "every_sentence" for t in ("summarization", "sumpubmed", "translation")},
    ("qa", "minor"): "one_or_more",
    ("story", "single"): "minor",
}
PERTURB_VERSION = "2"


def perturbation_prompt(kind: str, degree: str, task_key: str | None = None, *, structured: bool = False) -> Prompt:
    """The adjustment prompt of an LLM-based perturbation at a degree (Table 2's wording for the task)."""
    key = (kind, _GRAMMAR.get((task_key or "", degree), degree)) if kind == "grammar" else (kind, degree)
    try:
        adjustment, steps = _ADJUST[key]
    except KeyError:
        raise ValueError(f"no LLM prompt for {kind} ({degree})") from None
    template = _PERTURB_HEAD.replace("{adjustment}", adjustment).replace("{steps}", steps)
    if structured:
        template += PERTURB_JSON_LINE
    name = f"dhp-perturb-{kind}-{degree}" + ("-json" if structured else "")
    return Prompt(name=name, version=PERTURB_VERSION, source=SOURCE + ", Table 2", template=template)


# -- evaluation (Appendix E) ------------------------------------------------------------------------
_EVAL = """You will be given {a_text} written for {a_source}. Your task is to rate the {text_noun} on one metric. Please make sure you read and understand these instructions carefully. Please keep this document open while reviewing, and refer to it as needed.

Evaluation Criterion: {criterion}

Evaluation Steps:

{steps}

{source_block}{text_label}:

{text}

{score_line}"""
# Appendix E's last line, with the metric's name after the dash.
SCORE_LINE = "Evaluation Score (please don't give any feedback, just give a score ONLY) - {metric}:"
EVAL_JSON_LINE = """

Reply with JSON only, in the form {"score": N}, where N is your rating, an integer from 1 to 5."""

_COHERENCE_SUMMARY = (
    "Coherence (1-5) - the collective quality of all sentences. We align this dimension with the DUC quality "
    "question of structure and coherence whereby the summary should be well-structured and well-organized. The "
    "summary should not just be a heap of related information, but should build from sentence to sentence to a "
    "coherent body of information about a topic."
)
_COHERENCE_SUMMARY_STEPS = """1. Read the Summary Thoroughly: Before diving into the evaluation, ensure that you have a clear understanding of the entire summary. Reading it more than once might be necessary.

2. Identify the Central Topic: A coherent summary will have a clear central topic or theme. Identify this topic and see if the subsequent information revolves around it.

3. Check for Logical Flow: Review the summary for logical sequencing. Sentences should follow one another in a way that makes sense and allows the reader to easily follow the progression of information.

4. Look for Transitional Elements: Coherent summaries often have clear transitions between sentences or ideas. This could be in the form of transitional words, phrases, or connecting ideas that tie one sentence to the next.

5. Identify Redundancies: Check if the same information is repeated in different sentences. Redundancies can disrupt the flow and coherence of a summary.

6. Note Any Gaps or Jumps: If there are sudden jumps in topics or if crucial information seems to be missing, this can harm the coherence of the summary. A well-organized summary should present a holistic view of the topic without leaving the reader with questions.

7. Assess Clarity: Even if the content is technically accurate, if it's written in a convoluted or unclear manner, it can disrupt coherence. The sentences should be clear and easily understandable.

8. Consider the Conclusion: A coherent summary often wraps up or comes to a conclusion that ties the presented information together. It doesn't necessarily need a formal conclusion, but the end should feel natural and not abrupt.

9. Rate the Summary: Based on the above steps, assign a score between 1-5 for coherence. - 1: Very incoherent. The summary lacks structure, has sudden jumps, and is difficult to follow. - 2: Somewhat incoherent. The summary has some semblance of structure, but has significant flaws in flow and organization. - 3: Neutral. The summary is decently organized, with minor issues in flow and structure. - 4: Mostly coherent. The summary is well-structured with very few minor coherence issues. - 5: Highly coherent. The summary is excellently organized, flows seamlessly, and builds information logically from start to end."""


def _generic_steps(metric: str, text_noun: str, source_noun: str | None, definition: str) -> str:
    """Auto-CoT style steps for a metric the paper does not quote."""
    against = f" and the {source_noun.lower()}" if source_noun else ""
    return f"""1. Read the {text_noun}{against} carefully. Reading it more than once might be necessary.

2. Recall the criterion: {definition}

3. Go through the {text_noun} sentence by sentence and note every problem that bears on {metric.lower()}, and only on {metric.lower()}.

4. Weigh how much the problems you noted harm the {metric.lower()} of the {text_noun} as a whole.

5. Rate the {text_noun}: assign a score between 1-5 for {metric.lower()}. - 1: Very poor {metric.lower()}, with severe problems. - 2: Poor, with significant problems. - 3: Fair, with some problems. - 4: Good, with very few minor problems. - 5: Excellent, with no problem."""


_A = {
    "summarization": ("a summary", "an article"),
    "sumpubmed": ("a summary", "an article"),
    "story": ("an ending sentence", "a four-sentence story"),
    "qa": ("an answer", "a question"),
    "translation": ("a translation", "a source text"),
}
EVAL_VERSION = "3"
SUMMARY_TASKS = ("summarization", "sumpubmed")


def article_of(task_key: str, source_label: str | None) -> str:
    """What the text is written for, with its article ("an article" for summaries, as Appendix B says)."""
    if task_key in _A:
        return _A[task_key][1]
    noun = (source_label or "task").lower()
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def evaluation_prompt(
    task_key: str, text_label: str, source_label: str | None, metric: str, definition: str, *, structured: bool = False
) -> Prompt:
    """The G-Eval style rating prompt of one metric of a task (placeholders: {source}, {text}); it ends with
    Appendix E's "Evaluation Score (...) - <metric>:" line, and `structured` appends a line asking for {"score": N}."""
    noun = text_label.lower()
    a_text, a_source = _A.get(task_key, (f"a {noun}", f"a {(source_label or 'task').lower()}"))
    if task_key in SUMMARY_TASKS and metric == "Coherence":
        criterion, steps = _COHERENCE_SUMMARY, _COHERENCE_SUMMARY_STEPS
    else:
        criterion = f"{metric} (1-5) - {definition}"
        steps = _generic_steps(metric, noun, source_label, definition)
    shown = "Source Article" if task_key in SUMMARY_TASKS else source_label  # Appendix E's wording
    source_block = f"{shown}:\n\n{{source}}\n\n" if source_label else ""
    template = (
        _EVAL.replace("{criterion}", criterion)
        .replace("{steps}", steps)
        .replace("{source_block}", source_block)
        .replace("{a_text}", a_text)
        .replace("{a_source}", a_source)
        .replace("{text_noun}", noun)
        .replace("{text_label}", text_label)
        .replace("{score_line}", SCORE_LINE.replace("{metric}", metric))
    )
    if structured:
        template += EVAL_JSON_LINE
    slug = "".join(c if c.isalnum() else "-" for c in metric.lower()) + ("-json" if structured else "")
    return Prompt(name=f"dhp-eval-{task_key}-{slug}", version=EVAL_VERSION, source=SOURCE, template=template)
