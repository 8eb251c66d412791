"""The factual-inconsistency paradigms' prompts (paper 003: Summ-NLI, Sent-NLI, QG, QA), Figures 4-7.

Quoted from the paper's appendix. Two things are not the paper's: (1) extraction artifacts are undone
("Your\\_Task" is written "Your_Task", Figure 6's doubled "### ###" is one "###"); (2) each prompt
ends with an output-format note (the `*_FORMAT` prompts, versioned on their own), because the app's
one LLM seam (`LLMClient.chat_json`) reads JSON only: a free-text "Judgement: ..." answer cannot come
back through it. The JSON fields mirror the lines the paper's prompts ask for. Placeholders keep the
paper's names (`{source text}`, `{Sentence}`, `{Question-answer pairs}`, ...).
"""

from services.prompts.base import Prompt

_SIX_ERRORS = """Please consider the following six types of errors while conducting the evaluation:

- Predicate inconsistency in the summary compared to the source text
- The core arguments or their attributes in a semantic frame are wrong, such as the subjects and object
- Incorrect circumstantial information in the predicate
- A pronoun or a reference has a wrong antecedent or has no antecedents
- Errors that stray beyond the source text's content
- Logic Errors, such as Non Sequitur, Bait and Switch, sequence of events error, treating a possibility as a certainty."""

SIX_ERROR_TYPES = tuple(line[2:] for line in _SIX_ERRORS.splitlines() if line.startswith("- "))

SUMM_NLI = Prompt(
    name="summ-nli",
    version="1",
    source="Paper 003, Figure 4: Prompt for Summ-NLI",
    template=f"""### Instruction:
Now you are one of the greatest English linguist experts and Logicians. Below is an instruction for evaluating the consistency of a generated summary to the source text. Consistency measures whether a summary is factually consistent with the source text. The goal is to find possible factual errors in the sentences to ensure that people can get the correct information from the summary.

{_SIX_ERRORS}

### Evaluation Criteria:
Inconsistent: If the summary contains one of the errors listed above, please reply Inconsistent.
Consistent: If every information point in the sentence can be found in the source text and there are no factual errors, please reply Consistent.

### Evaluation Steps:

- Read the Source Text: Familiarize yourself with the content and key points of the source text.
- Analyze the Generated Summary: Carefully examine the generated summary. Look for factual accuracy of information points in summary to the source text.
- Provide Justification: Support the judgement with specific examples of inconsistencies or alignment between the summary and the source text. This helps justify the evaluation.
- Identify Factual Inconsistencies: Note any information in the summary that contradicts or misrepresents facts from the source text. This could include incorrect data, misinterpretation of events, wrong relationships between information points (possible-inevitable, cause-and-effect, etc.) or misleading statements.
- Consider tolerable mistakes: Sometimes, the summary might differ in wording or focus but still convey the same information as the source. In this case, it should be considered that there is no error.
- Based on your step-by-step reasoning process, reply Consistent or Inconsistent as your final judgement.

--- Your_Task---

### Source Text:
{{source text}}

### Generated Summary:
{{summary}}

### Reasoning process and final judgement:
Reasoning process: < Reasoning process >
Judgement: < Consistent or Inconsistent >

Please refer to the instruction, then finish Your_Task by showing your reasoning process and final judgement.""",
)

SENT_NLI = Prompt(
    name="sent-nli",
    version="1",
    source="Paper 003, Figure 5: Prompt for Sent-NLI",
    template=f"""### Instruction:
Now you are one of the greatest English linguist experts and Logicians. Below is an instruction for evaluating the consistency of the specified sentences in a generated summary for the source text. Consistency measures whether a summary is factually consistent with the source. The goal is to find possible factual errors in the sentences to ensure that people can get the correct information from the summary.

{_SIX_ERRORS}

### Evaluation Criteria:
Inconsistent: If the summary contains one of the errors listed above, please reply Inconsistent.
Consistent: If every information point in the sentence can be found in the source text and there are no factual errors, please reply Consistent.

### Evaluation Steps:

- Read the Source Text: Familiarize yourself with the content and key points of the source text.
- Analyze the Generated Summary: Carefully examine the generated summary. Look for factual accuracy of information points in summary to the source text.
- Provide Justification: Support the judgement with specific examples of inconsistencies or alignment between the summary and the source text. This helps justify the evaluation.
- Identify Factual Inconsistencies: Note any information in the summary that contradicts or misrepresents facts from the source text. This could include incorrect data, misinterpretation of events, wrong relationships between information points (possible-inevitable, cause-and-effect, etc.) or misleading statements.
- Consider tolerable mistakes: First, the summary might differ in wording or focus but still convey the information as the source. In this case, it should be considered that there is no error. Second, it is permissible that the sentence does not contain some of the information points in the source text. All you need to judge is whether the content of the sentence itself is consistent or not.
- Based on your step-by-step reasoning process, reply Consistent or Inconsistent as your final judgement.

--- Your_Task---

### Source text:
{{source text}}

### One of the specified sentence in summary:
{{Sentence}}

### Reasoning process and final judgement:
Reasoning process: < Reasoning process >
Judgement: < Consistent or Inconsistent >

Please refer to the instruction, then finish Your_Task by showing your reasoning process and final judgement.""",
)

QG = Prompt(
    name="qg",
    version="1",
    source="Paper 003, Figure 6: Prompt for QG",
    template="""### Instruction:

Suppose you are one of the greatest linguistics professors and English teachers. Now you are asked to list entities and noun phrase chunks and generate question-answer pairs from the given specified sentences. The context around the specified sentences is also provided. Steps to generate questions are shown as follows:

- 1: Please perform coreference parsing on the "Specified sentences" and replace pronouns with appropriate entity names. If multiple pronouns refer to the same entity, be sure to replace them with the correct entity name.
- 2: Then list important and complete named entities or noun phrase chunk (such as a person, location, organization, product, etc.) in the specified sentences which are relevant to factual consistency evaluation. Multiple entities connected by a conjunction should be regarded as a complete entity.
- 3: Please design Specified-sentences-specific questions with Wh-Questions format and subject-verb-object structure for each listed important entity or noun phrase chunk in step 2. Please ensure that:
  - (1) Don't generate follow-up question to other questions.
  - (2) Restrict the answer to a noun-phrase chunk or entity in sentence after coreference parsing, if entity and noun blocks have modifiers, include the modifiers as part of the answer.
  - (3) Don't generate open-end questions.
  - (4) Generate only one question that is the most relevant to factual error detection for each important entity or noun phrase chunk.
  - (5) The answer cannot be a restatement of the question.
4. Follow the example below and format your response as [Q1: <question>, A1: <answer>] for each question and entity pair as the final response.

### ---Example---

"Context": Gemma the pit bull was filmed at home in California being fed some treats. But in a bid to trick her, Mike throws a broccoli spear into the mix. Immediately the canine pulls a look of disgust as she chomps on the vegetable. She then proceeds to spit it out on her towel, Mike and Amy are laughing.

"Specified sentence" : she then proceeds to spit it out on her towel.

"Important named entities (or noun phrase chunks) in sentence after coreference parsing" : she (referring to gemma), it (referring to the vegetable), her towel (gemma's towel), Mike and Amy

"Response":

[Q1: Who then proceeds to spit broccoli out on the floor?, A1: she (gemma)]
[Q2: What is spit out on the floor by gemma ?, A2: it (the vegetable)]
[Q3: Where is gemma spit the vegetable?, A3: her towel (gemma's towel)]
[Q4: Who are laughing?, A4: Mike and Amy]

### ---Your Task---

"Context": {context}

"Specified sentences" : {sentence}

"Important named entities(or noun phrase chunk) in Sentence after coreference parsing" : < named entities or noun phrase chunks >

"Response": < Questions and answers >

Please refer to the instruction and example, then finish Your_Task. Please perform coreference parsing on the specified sentences, list the important entities and noun phrase chunks, and finally generate qualifying question-answer pairs. Make sure to follow the format as in the example.""",
)

QA = Prompt(
    name="qa",
    version="1",
    source="Paper 003, Figure 7: Prompt for QA",
    template="""Now you are one of the greatest English linguist experts and Logicians. I will show you part of the source text, question-answer pairs, respectively. For each question-answer pair, please first find out what is relevant to the question from the given source text, and then please judge whether the given answer matches the content of the source text. Instead of merely relying on a simple comparison between the answer and the source text, please THINK STEP BY STEP to fully engage your textual comprehension and reasoning abilities. The guideline and example are as below:

--- Reply Guideline---

Consistent: The question-answer pair aligns with or does not contradict the information provided in the text. Even if the answer is somewhat vague or generalized, it broadly corresponds to the theme or subject matter in the source text without directly conflicting with the information.

Inconsistent: The question-answer pair conflicts directly with or is contradicted by explicit information or assertions provided in the original text, or there is no sufficient basis for answering the question in the source text.

--- Example ---

### Source Text:

GAO also examined and analyzed key acquisition documents including contractor monthly status reports, earned value management data, and Defense Contract Management Agency reports to determine the performance and cost status of the development effort. In December 2015, we reviewed the program's Integrated Master Schedule (IMS) and compared it against best practices criteria in the GAO Schedule Assessment Guide and discussed the results of our schedule assessment with VH-92A program officials.

### Question-answer pairs

Q1: Who did GAO discuss the results of the schedule assessment with in December 2015? A1: Contract Management Agency

Q2: Who did GAO discuss the results of the schedule assessment with in December 2015? A2: program officials

.....

### Reasoning process and judgement:

Q1: Who did GAO discuss the results of the schedule assessment with? A1: Contract Management Agency

Reasoning process: The document mentions that the GAO discussed the results of the schedule assessment with VH-92A program officials. Answer "Contract Management Agency" is clearly contradicting the information in the text.

Judgement: Inconsistent

Q2: Who did GAO discuss the results of the schedule assessment with? A2: program officials

Reasoning process: The document mentions that the GAO discussed the results of the schedule assessment with VH-92A program officials. Although the answer "program officials" is a fairly generic response instead of a more specific answer "VH-92A program officials", it contains no error messages and does not contradict the information provided in the text.

Judgement: Consistent

.....

--- Your_Task ---

### Source Text:

{source text}

### Question-answer pairs:

{Question-answer pairs}

Please refer to the instruction and example, finish Your_Task by showing your reasoning process and final judgement in format ( Reasoning progress: < Your reasoning progress >, Judgement: < Consistent or Inconsistent > ) for each question-answer pair.""",
)

# -- output-format notes (not in the paper; see the module docstring) ---------------------------
JUDGEMENT_FORMAT = Prompt(
    name="nli-json-format",
    version="1",
    source="Not in the paper: the Figure 4/5 answer lines as JSON, for the JSON-only LLM seam",
    template="""

Give your answer as JSON only, with the two lines above as fields:
{"reasoning": "<Reasoning process>", "judgement": "<Consistent or Inconsistent>"}""",
)

QG_FORMAT = Prompt(
    name="qg-json-format",
    version="1",
    source="Not in the paper: the Figure 6 response ([Qn: <question>, An: <answer>]) as JSON",
    template="""

Give your answer as JSON only:
{"entities": ["<named entity or noun phrase chunk after coreference parsing>"], "pairs": [{"question": "<Qn>", "answer": "<An>"}]}""",
)

QA_FORMAT = Prompt(
    name="qa-json-format",
    version="1",
    source="Not in the paper: the Figure 7 reply (Qn, An, Reasoning process, Judgement) as JSON",
    template="""

Give your answer as JSON only, one entry per question-answer pair:
{"results": [{"question": "<Qn>", "answer": "<An>", "reasoning": "<Reasoning process>", "judgement": "<Consistent or Inconsistent>"}]}""",
)

# -- Summ-NLI's score mode (section 3.1) -----------------------------------------------------------------
# Section 3.1: Summ-NLI yields "a binary label ... or ... a consistency score within a range, according to the
# specific dataset", and GovReport and SQuALITY are scored so (Pearson, Table 1). The paper prints only the
# binary prompt (Figure 4), so the score prompt is Figure 4 with three parts reworded by this app (not the
# paper's wording): the Evaluation Criteria, the last Evaluation Step and the answer lines ask for a score from
# {low} to {high} (the dataset's range) instead of Consistent or Inconsistent. Everything else is Figure 4's.
_SUMM_CRITERIA = """### Evaluation Criteria:
Inconsistent: If the summary contains one of the errors listed above, please reply Inconsistent.
Consistent: If every information point in the sentence can be found in the source text and there are no factual errors, please reply Consistent."""
_SUMM_LAST_STEP = (
    "- Based on your step-by-step reasoning process, reply Consistent or Inconsistent as your final judgement."
)
_SUMM_ANSWER = """Reasoning process: < Reasoning process >
Judgement: < Consistent or Inconsistent >"""
SCORE_CRITERIA = """### Evaluation Criteria:
Score the factual consistency of the summary with the source text on a scale from {low} to {high}: {low} if the summary contains many of the errors listed above, {high} if every information point in the summary can be found in the source text and there are no factual errors, and a score in between the fewer or the less serious its errors are."""
SCORE_LAST_STEP = "- Based on your step-by-step reasoning process, give a consistency score from {low} to {high} as your final judgement."
SCORE_ANSWER = """Reasoning process: < Reasoning process >
Score: < a number from {low} to {high} >"""
for _part in (_SUMM_CRITERIA, _SUMM_LAST_STEP, _SUMM_ANSWER):
    assert _part in SUMM_NLI.template, _part  # the score prompt rewords exactly these parts of Figure 4

SUMM_NLI_SCORE = Prompt(
    name="summ-nli-score",
    version="1",
    source=(
        "Paper 003, Figure 4 (Summ-NLI), with its criteria, last step and answer lines asking for a score in the "
        "dataset's range (section 3.1 describes this mode; the paper prints no prompt for it)"
    ),
    template=SUMM_NLI.template.replace(_SUMM_CRITERIA, SCORE_CRITERIA)
    .replace(_SUMM_LAST_STEP, SCORE_LAST_STEP)
    .replace(_SUMM_ANSWER, SCORE_ANSWER),
)

SCORE_FORMAT = Prompt(
    name="nli-score-json-format",
    version="1",
    source="Not in the paper: the score mode's answer lines as JSON, for the JSON-only LLM seam",
    template="""

Give your answer as JSON only, with the two lines above as fields:
{"reasoning": "<Reasoning process>", "score": <a number from {low} to {high}>}""",
)

ALL = [SUMM_NLI, SENT_NLI, QG, QA, JUDGEMENT_FORMAT, QG_FORMAT, QA_FORMAT, SUMM_NLI_SCORE, SCORE_FORMAT]
