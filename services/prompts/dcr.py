"""The DCR paper's prompts (Tables 7-12), quoted from its appendix E.2."""

from services.prompts.base import Prompt

SEMANTIC_DCE = Prompt(
    name="dce-semantic",
    version="1",
    source="DCR paper, Table 7: Semantic Consistency Divide-Conquer Evaluator Prompt",
    template="""You are an evaluator. You will be given a true answer and an attempt answer.
True answer is the ground truth answer. Attempt answer is the answer you want to evaluate.

Criteria:

Your task is to evaluate whether the attempt answer is consistent with the true answer. You will evaluate it by:

* Listing all the aspects in the attempt answer
* Compare if each aspects exist in the true answer
* If it does, compare if the information in attempt answer is consistent with what is in the true answer
* It is OK that not all information from true answer exist in attempt answer

Given:

True Answer

{reference}

Attempt Answer

{candidate}

Task

Work in a step by step way to make sure we get the right answer. You will format the output in json as follows:

{"reason": [{"sentence": "original sentence", "reason": "why this sentence is or is not consistent with the true answer"}], "is_consistent" : true/false}

Here is the evaluation in JSON format:""",
)

SUMMARIZATION_DCE = Prompt(
    name="dce-summarization",
    version="1",
    source="DCR paper, Table 8: Summarization Consistency Divide-Conquer Evaluator Prompt",
    template="""You are an evaluator. You will be given an article and a summary.
Summary contains a summarized version of the article.

Criteria:

Your task is to evaluate whether the summary is consistent with the article. You will evaluate it by going through each sentence of the summary and check against the following procedures:

* Understands all the aspects in the sentence, who is doing what at when and where and what are the impact etc.
* Compare if each aspects exist in the article
* If it does, compare if the information in this sentence is consistent with what is in the article
* Compare if all the information in this sentence can be directly inferred or entailed from what is in the article, including but not limited to who, what, when, where etc.
* It is OK that not all information from article exist in this summary

Given:

Article

{reference}

Summary

{candidate}

Task

Work in a step by step way to make sure we get the right answer. You will format the output in json as follows:

{"reason": [{"sentence": "original sentence", "reason": "why this sentence is or is not consistent with the article. You should start with 'this sentence is consistent with the article' or 'this sentence is not consistent with the article'}], "is_consistent" : true/false}

Here is the evaluation in JSON format:""",
)

CUSTOM_DCE = Prompt(
    name="dce-custom",
    version="1",
    source="Table 8's structure with the user's criteria in place of its procedure",
    template="""You are an evaluator. You will be given a reference and a candidate.

Criteria:

Your task is to evaluate whether the candidate is consistent with the reference. You will evaluate it by going through each sentence of the candidate and check against the following criteria:

{criteria}

Given:

Reference

{reference}

Candidate

{candidate}

Task

Work in a step by step way to make sure we get the right answer. You will format the output in json as follows:

{"reason": [{"sentence": "original sentence", "reason": "why this sentence is or is not consistent with the reference. You should start with 'this sentence is consistent with the reference' or 'this sentence is not consistent with the reference'}], "is_consistent" : true/false}

Here is the evaluation in JSON format:""",
)

AMC = Prompt(
    name="amc",
    version="1",
    source="DCR paper, Table 9: Auto-Metric Converter Prompt",
    template="""You are an evaluator. You will be given a list of paragraphs about "attempt answer". Your job is to:

* Identify whether each paragraph is positive or negative
* If the paragraph is positive, mark it as 1,
* If the paragraph is negative, mark it as -1.
* Output the mark for each paragraph in a json array

Example

Given paragraphs:

*"The attempt answer is incorrect as it states that employees in the US are not eligible to participate in the ESPP, which contradicts the true answer. So it is incorrect",
*"The attempt answer adds a new aspect that is not in the true answer.",
*"Yet it does list the correct article.And that is helpful."

Thought:

The first paragraph is negative as it mentions the attempt answer is wrong. Thus mark -1
The second paragraph is negative as it adds something that is not in true answer. Thus mark -1
The third paragraph is positive. Thus mark 1

Answer:

{"reason": ["The first paragraph is negative as it mentions the attempt answer is wrong. Thus mark -1", "The second paragraph is negative as it adds something that is not in true answer. Thus mark -1", "The third paragraph is positive. Thus mark +1"], "answer": [-1, -1, 1]}

Given:

Attempt Answer:
{paragraphs}

Answer:""",
)

RAI = Prompt(
    name="rai",
    version="1",
    source="DCR paper, Table 10: Reason-Assisted Improver Prompt",
    template="""You are a good writer. You will be given:

* An article
* A list of objects, each have two fields: sentence and reason
** sentence: These sentences are summaries for the given article.
** reason: These are the reasons why the sentence is consistent with the article or not.

Your job is to rewrite these sentences:

* If the sentence is consistent with the article, you can keep it as it is
* If the sentence is not consistent with the article, you can re-write it to make it consistent with the article based on the reasons given.

Article

{reference}

Sentences

{sentences}

Task

Work in a step by step way to make sure we get the right answer. You will format the output in json as follows:

[{"sentence": "original sentence", "improved_sentence": "improved sentence", "reason": "if it is improved, how it is improved. if not, say 'ALREADY CONSISTENT'"}]""",
)

PARAGRAPH_DCE = Prompt(
    name="paragraph-evaluator",
    version="1",
    source="DCR paper, Table 11: Paragraph Level Evaluator Prompt",
    template="""You are an evaluator. You will be given an article and a summary.
Summary contains a summarized version of the article.

Criteria:

Your task is to evaluate whether the summary is consistent with the article. You will evaluate it by going through the summary and check against the following procedures:

* Understands all the aspects in the summary, who is doing what at when and where and what are the impact etc.
* Compare if each aspects exist in the article
* If it does, compare if the information in this summary is consistent with what is in the article
* Compare if all the information in this summary can be directly inferred or entailed from what is in the article, including but not limited to who, what, when, where etc.
* It is OK that not all information from article exist in this summary

Given:

Article
{reference}
Summary
{candidate}

Task

Work in a step by step way to make sure we get the right answer. You will format the output in json as follows:

{"reason": {"sentence": "original sentence", "reason": "why this summary is or is not consistent with the article. You should start with this summary is consistent with the article or this summary is not consistent with the article"}, "is_consistent" : true/false}

Here is the evaluation in JSON format:""",
)

PARAGRAPH_RAI = Prompt(
    name="paragraph-improver",
    version="1",
    source="DCR paper, Table 12: Paragraph Level Reason Assisted Improver Prompt",
    template="""You are a good writer. You will be given:

* an article
* a summary of the article
* a reason listing why the summary is or is not consistent with the article

Your job is to rewrite this summary:

* if the summary is consistent with the article, you can keep it as it is
* if the summary is not consistent with the article, you can rewrite it to make it consistent with the article based on the reasons given.

Article

{reference}

Summary

{candidate}

Reason

{reason}

Task

Work in a step by step way to make sure we get the right answer. You will format the output in json as follows:

{"sentence": "original summary", "improved_summary": "improved summary", "reason": "if it is improved, how it is improved. if not, say 'ALREADY CONSISTENT'"}""",
)

ALL = [SEMANTIC_DCE, SUMMARIZATION_DCE, CUSTOM_DCE, AMC, RAI, PARAGRAPH_DCE, PARAGRAPH_RAI]
