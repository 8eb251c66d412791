"""Paper 003 (zero-shot factual-inconsistency paradigms) held to its text: Eq. 1-4, Appendix B retrieval, the
evaluation protocol (balanced accuracy, Pearson) of Sec. 3.4. Each test names the section it checks."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sqlmodel import Session

from db.models import Dataset, DatasetItem, Document
from services import stats
from services.metaeval import methods
from services.nli import distill, retrieval
from services.nli import paradigms as nli
from services.prompts import distill as distill_prompts
from services.prompts import nli as P
from services.text import estimate_tokens
from tests.conformance.paper import flat, paper
from tests.support.waiting import HEALTHY_TIMEOUT

DOC = (
    "Ollie asked Jane whether she was in Warsaw. Jane said she was just back in Warsaw. "
    "Jane invited Ollie to dinner on the 19th. Ollie declined the invitation."
)
GOOD = "Jane is in Warsaw."
BAD = "Ollie accepted the dinner invitation."
SUMMARY = f"{GOOD} {BAD} Jane invited Ollie."


def first_user(body: dict) -> str:
    return body["messages"][0]["content"]


def judge(body: dict) -> dict:
    """Judges a text inconsistent when it holds "accepted"; QG asks one question per window; QA checks it."""
    prompt = first_user(body)
    m = re.search(
        r"### (?:One of the specified sentence in summary|Generated Summary):\n(.*)\n\n### Reasoning", prompt, re.S
    )
    if m:
        return {"reasoning": "r", "judgement": "Inconsistent" if "accepted" in m.group(1) else "Consistent"}
    if prompt.startswith("### Instruction:\n\nSuppose you are"):
        sent = re.search(r'"Specified sentences" : (.*)\n', prompt).group(1)
        parts = [p for p in re.split(r"(?<=\.) ", sent) if p]
        return {
            "pairs": [
                {"question": f"What about: {p}", "answer": "accepted" if "accepted" in p else "Jane"} for p in parts
            ]
        }
    pairs = re.findall(
        r"A\d+: (\S+)", re.search(r"### Question-answer pairs:\n\n(.*)\n\nPlease refer", prompt, re.S).group(1)
    )
    return {
        "results": [
            {
                "question": "q",
                "answer": a,
                "reasoning": "r",
                "judgement": "Inconsistent" if a == "accepted" else "Consistent",
            }
            for a in pairs
        ]
    }


def test_eq1_summ_nli_judges_the_whole_summary_in_one_call(fake, client):
    """Eq. 1: y = LLM(D_i, S_i) with Figure 4's prompt."""
    fake.responder = judge
    res = nli.summ_nli(client, DOC, SUMMARY)
    assert len(fake.requests) == 1 and res.label == "inconsistent"
    prompt = first_user(fake.requests[0])
    assert DOC in prompt and SUMMARY in prompt and prompt.startswith(P.SUMM_NLI.template.split("{")[0])


@pytest.mark.parametrize(("window", "n_windows"), [(1, 3), (2, 2), (3, 1)])
def test_eq2_sent_nli_is_any_over_windows_of_a_few_sentences(fake, client, window, n_windows):
    """Eq. 2: y = any_j LLM(D_i, W_ij) over consecutive windows of the summary."""
    fake.responder = judge
    res = nli.sent_nli(client, DOC, SUMMARY, window=window)
    assert len(res.windows) == n_windows == len(fake.requests)
    assert res.label == "inconsistent"
    assert nli.sent_nli(client, DOC, f"{GOOD} Jane invited Ollie.", window=window).label == "consistent"


def test_eq2_an_unread_window_is_not_counted_as_consistent():
    """Eq. 2's any(): an inconsistent window decides; otherwise a window that could not be read leaves no verdict."""
    assert nli._any_inconsistent(["consistent", None, "inconsistent"]) == "inconsistent"
    assert nli._any_inconsistent(["consistent", None]) is None
    assert nli._any_inconsistent(["consistent", "consistent"]) == "consistent"


def test_eq3_question_generation_sees_the_summary_window_only(fake, client):
    """Eq. 3 / Sec. 3.3: QG "is only conditioned on a summary window without accessing the document"."""
    fake.responder = judge
    nli.qg_qa(client, DOC, SUMMARY, window=1)
    qg = [first_user(r) for r in fake.requests if first_user(r).startswith("### Instruction:\n\nSuppose you are")]
    assert len(qg) == 3 and all(DOC not in p for p in qg)


def test_eq4_qg_qa_is_any_over_the_answers_verified_on_the_document(fake, client):
    """Eq. 4: y = any_k LLM-QA(D_i, q_k, e_k); Figure 7 lists a window's pairs in one prompt."""
    fake.responder = judge
    res = nli.qg_qa(client, DOC, SUMMARY, window=3)
    assert res.label == "inconsistent" and len(res.pairs) == 3
    qa = [first_user(r) for r in fake.requests if first_user(r).startswith("Now you are one of the greatest")]
    assert len(qa) == 1 and DOC in qa[0] and "Q3:" in qa[0]
    assert nli.qg_qa(client, DOC, f"{GOOD} Jane invited Ollie.", window=1).label == "consistent"


def test_appendix_b_retrieval_maximises_rouge1_plus_rouge2_recall_within_the_budget():
    """Appendix B: for long documents, sentences that maximise ROUGE-1 + ROUGE-2 recall toward the summary are
    retrieved, up to 1k tokens (Summ-NLI) or n sentences per window (Sent-NLI, QG-QA)."""
    sentences = [
        "The committee met on Tuesday.",
        "Revenue grew by ten percent in the third quarter.",
        "The weather was mild.",
        "A new factory opened in Ohio in March.",
    ]
    target = "The new Ohio factory opened in March, and revenue grew by ten percent."
    assert retrieval.select_context(sentences, target, n_sentences=2).indices == (1, 3)
    ctx = retrieval.select_context(sentences, target, budget_tokens=12)
    assert sum(estimate_tokens(s) for s in ctx.sentences) <= 12
    assert (retrieval.CONTEXT_BUDGET_TOKENS, retrieval.WINDOW_CONTEXT_SENTENCES) == (1024, 5)  # Table 8


def test_appendix_b_retrieval_scores_rouge1_plus_rouge2_not_either_alone():
    """Appendix B: "maximize the recall of ROUGE-1 and ROUGE-2": a sentence rich in the target's words but none of
    its word pairs loses to one with its pairs (ROUGE-1 alone would pick it), and a lone shared pair does not beat
    every word of the target (ROUGE-2 alone would pick it)."""
    target = "the red car hit the blue van"
    scrambled, pairs = "van blue the car red hit", "the red car hit a tree"
    assert retrieval.select_context([scrambled, pairs], target, n_sentences=1).sentences == (pairs,)
    all_words, one_pair = "van blue the car red hit the", "a red car stopped"
    assert retrieval.select_context([one_pair, all_words], target, n_sentences=1).sentences == (all_words,)


def test_appendix_b_retrieval_is_for_long_documents_only():
    """Sec. 3.4: retrieval is applied to GovReport (~3.8k words) and SQuALITY (~5k words), not to news articles."""
    news = "Officials said the new bridge would open next spring after two years of work. " * 60  # ~700 words
    report = news * 6  # ~4.2k words
    assert not retrieval.needs_retrieval(news) and retrieval.needs_retrieval(report)


def test_sec34_balanced_accuracy_is_the_mean_recall_of_both_classes():
    """Sec. 3.4: Balanced Accuracy for the binary datasets (FRANK, DiaSumFact, CONFIT)."""
    labels = np.array([1, 1, 1, 1, 0, 0])
    pred = np.array([1, 1, 1, 0, 0, 1])
    want = (3 / 4 + 1 / 2) / 2
    for positive in (0, 1):
        assert stats.classification(pred, labels, 0.5, positive=positive).balanced_accuracy == pytest.approx(want)


def test_sec34_pearson_for_score_labelled_datasets():
    """Sec. 3.4: Pearson correlation for GovReport and SQuALITY, whose labels are scores."""
    x, y = np.array([0.0, 0.5, 1.0, 1.0, 0.0]), np.array([0.1, 0.4, 0.9, 0.7, 0.3])
    want = np.sum((x - x.mean()) * (y - y.mean())) / np.sqrt(np.sum((x - x.mean()) ** 2) * np.sum((y - y.mean()) ** 2))
    assert stats.correlation(x, y, "pearson", n_boot=0).r == pytest.approx(want)


# -- the prompts, against the paper's own text (Figures 4-7) ------------------------------------------
FIGURES = [
    ("## Summ-NLI", "Figure 4: Prompt for Summ-NLI.", P.SUMM_NLI),
    ("## Sent-NLI", "Figure 5: Prompt for Sent-NLI.", P.SENT_NLI),
    ("## Questions Generation", "Figure 6: Prompt for QG.", P.QG),
    ("## Questions Answering", "Figure 7: Prompt for QA.", P.QA),
]


def _figure(start: str, end: str) -> str:
    """A prompt as the paper prints it, with the extraction's escapes undone ("Your\\_Task", "### ###")."""
    text = paper("003").replace("\\_", "_")
    i = text.index(start) + len(start)
    return flat(text[i : text.index(end, i)]).replace("### ###", "###")


@pytest.mark.parametrize(("start", "end", "prompt"), FIGURES, ids=[f[2].name for f in FIGURES])
def test_figures_4_to_7_prompts_are_the_papers_word_for_word(start, end, prompt):
    """Figures 4-7: each paradigm's prompt is the paper's, word for word (the JSON format note is appended apart)."""
    assert flat(prompt.template) == _figure(start, end)


def test_sec_3_1_summ_nli_score_mode_rewords_only_the_verdict_parts_of_figure_4(fake, client):
    """Sec. 3.1: Summ-NLI can "produce a consistency score within a range, according to the specific dataset". The
    paper prints no prompt for it: the score prompt is Figure 4 with the criteria, the last step and the answer
    lines asking for a score in the range; every other line is the paper's. The label is consistent only at the
    top of the range."""
    figure4 = _figure(*FIGURES[0][:2])
    score = flat(P.SUMM_NLI_SCORE.template)
    for part in (P._SUMM_CRITERIA, P._SUMM_LAST_STEP, P._SUMM_ANSWER):
        figure4 = figure4.replace(flat(part), "")
        assert flat(part) not in score
    for part in (P.SCORE_CRITERIA, P.SCORE_LAST_STEP, P.SCORE_ANSWER):
        score = score.replace(flat(part), "")
    assert score == figure4  # the rest is Figure 4's
    fake.responder = lambda body: {"reasoning": "r", "score": 3.5}
    res = nli.summ_nli(client, DOC, SUMMARY, score_range=(1, 5))
    prompt = first_user(fake.requests[0])
    assert "a consistency score from 1 to 5" in prompt and "reply Consistent or Inconsistent" not in prompt
    assert (res.score, res.label) == (3.5, "inconsistent")
    rec = nli.result_record(res, "summ-nli", SUMMARY)
    assert rec["score"] == pytest.approx((3.5 - 1) / 4) and rec["summary"]["score"] == 3.5
    fake.responder = lambda body: {"reasoning": "r", "score": 7}
    assert nli.summ_nli(client, DOC, GOOD, score_range=(1, 5)).parse_error  # outside the range: no score
    fake.responder = lambda body: {"reasoning": "r", "score": 5}
    assert nli.summ_nli(client, DOC, GOOD, score_range=(1, 5)).label == "consistent"


def _graded_dataset(engine, n: int = 10) -> int:
    """A dataset scored on SummEval's 1-5 scale (stored as 0-1): item k's summary says "grade k"."""
    with Session(engine) as session:
        ds = Dataset(name="graded", format="summeval", sha256="graded", n_items=n, meta={"score_range": [1, 5]})
        session.add(ds)
        session.flush()
        for i in range(n):
            ref = Document(sha256=f"g{i}", text=f"Report {i}. The vote passed.", n_chars=30)
            session.add(ref)
            session.flush()
            cand = f"Report {i} has grade {i % 5}."
            session.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=str(i),
                    reference_id=ref.id,
                    candidate=cand,
                    sentences=[cand],
                    human_score=(i % 5) / 4,
                    human_label=int(i % 5 == 4),
                )
            )
        session.commit()
        return ds.id


def test_sec_3_4_summ_nli_scores_in_the_datasets_range_and_pearson_is_on_the_score(engine, fake, backend):
    """Sec. 3.1 and 3.4: on a dataset labelled with scores, Summ-NLI asks for a score in the dataset's range and
    Pearson is computed on that score, not on a 0/1 share."""
    from services import dcr, metaeval
    from services.jobs import batches

    def respond(body: dict) -> dict:
        prompt = first_user(body)
        grade = int(re.search(r"has grade (\d)", prompt).group(1))
        if "a consistency score from 1 to 5" in prompt:
            return {"reasoning": "r", "score": 1 + grade}
        return {"reasoning": "r", "judgement": "Consistent" if grade >= 2 else "Inconsistent"}

    fake.responder = respond
    ds = _graded_dataset(engine)
    scored = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"))
    labelled = batches.create_batch(
        engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"), summ_nli_mode="label"
    )
    for b in (scored, labelled):
        batches.process_batch(engine, b)
    t = metaeval.compare_method_batches(engine, [scored, labelled]).table.set_index("batch")
    assert t.loc[scored, "pearson"] == pytest.approx(1.0)  # graded answers, on the graded human scores
    assert t.loc[labelled, "pearson"] < 0.95  # a 0/1 verdict cannot follow a graded score
    assert sum("a consistency score from 1 to 5" in first_user(r) for r in fake.requests) == 10


# -- Tables 4 and 5, Figure 2 ---------------------------------------------------------------------------
def test_table_4_is_the_standard_deviation_over_repeated_runs():
    """Table 4: the standard deviation of one configuration over repeated runs (three in the paper)."""
    table = pd.DataFrame(
        {
            "method": ["Sent-NLI · run 1", "Sent-NLI · run 2", "Sent-NLI · run 3", "Summ-NLI"],
            "repeat_group": ["g", "g", "g", None],
            "balanced_accuracy": [0.50, 0.60, 0.70, 0.9],
            "pearson": [0.1, 0.2, 0.6, 0.5],
            "calls_per_doc": [2.0, 2.0, 2.0, 1.0],
        }
    )
    spread = methods._repeat_spread(table).iloc[0]
    assert spread["method"] == "Sent-NLI" and spread["runs"] == 3
    assert spread["balanced_accuracy_mean"] == pytest.approx(0.6)
    assert spread["balanced_accuracy_std"] == pytest.approx(0.1)  # sqrt(((-.1)^2 + 0 + .1^2) / (3 - 1))
    assert spread["pearson_std"] == pytest.approx(np.std([0.1, 0.2, 0.6], ddof=1))


def test_table_5_recall_of_each_error_type_and_of_none(engine, fake):
    """Table 5: the recall of each error type among the inconsistent summaries, and "None": the recall of the
    consistent summaries (judged consistent)."""
    from services import dcr, metaeval
    from services.config import BackendConfig
    from services.jobs import batches
    from tests.nli_fakes import nli_judge
    from tests.support.metaeval_methods import BAD, seed

    ds = seed(engine)  # 8 items: 4 consistent, 2 "number" and 2 "entity" errors
    backend = BackendConfig(kind="openai", base_url=fake.base_url, model="m", max_retries=1, timeout=HEALTHY_TIMEOUT)
    fake.responder = nli_judge(bad="the council")  # every summary judged inconsistent
    every = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="sent-nli"))
    batches.process_batch(engine, every)
    fake.responder = nli_judge(bad=BAD)  # right on every summary
    right = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="qg-qa"))
    batches.process_batch(engine, right)
    types = metaeval.compare_method_batches(engine, [every, right]).error_types
    wide = types.pivot_table(index="error_type", columns="batch", values="recall", sort=False)
    assert list(wide.index) == ["None", "entity", "number"]
    assert wide[every].to_dict() == {"None": 0.0, "entity": 1.0, "number": 1.0}
    assert wide[right].to_dict() == {"None": 1.0, "entity": 1.0, "number": 1.0}
    assert types.set_index(["batch", "error_type"]).loc[(every, "None"), "n"] == 4


def test_figure_2_accuracy_by_equal_count_length_buckets():
    """Figure 2: performance by document and summary length; the buckets hold equal counts, labelled by range."""
    words = pd.Series([10, 20, 30, 40, 50, 60, 70, 80])
    buckets = methods._buckets(words, 4)
    assert buckets.value_counts().tolist() == [2, 2, 2, 2]
    assert buckets.tolist() == [
        f"{r} words" for r in ("10–27", "10–27", "28–45", "28–45", "46–62", "46–62", "63–80", "63–80")
    ]


# -- section 4: distillation ----------------------------------------------------------------------------
def _labelled(n_docs: int, per_doc: int = 2) -> list[distill.LabelledItem]:
    judged = distill.Judgement(1, "summ-nli", "consistent", "All facts are in the document.")
    return [
        distill.LabelledItem(
            item_id=d * per_doc + k,
            dataset_id=1,
            dataset="d",
            document_id=d,
            external_id=f"{d}-{k}",
            document=f"Document {d}.",
            summary=f"Summary {k} of {d}.",
            gold="consistent",
            judgements=(judged,) if d < n_docs - 1 else (),  # the last document was never judged
        )
        for d in range(n_docs)
        for k in range(per_doc)
    ]


def test_sec_4_2_in_domain_split_is_80_20_by_document():
    """Sec. 4.2: "We randomly split 80% documents ... as the training set, and the other 20% for evaluation":
    every summary of a document on one side; items never judged go to training only."""
    items = _labelled(11)
    train, test = distill.split_in_domain(items, seed=3)
    test_docs = {x.document_id for x in test}
    assert len(test_docs) == 2  # 20% of the 10 judged documents
    assert not test_docs & {x.document_id for x in train}
    assert len(test) == 4 and len(train) == len(items) - 4
    assert 10 in {x.document_id for x in train}  # the unjudged document: training only


def test_sec_4_1_distillation_prompts_are_figure_4_with_and_without_reasoning():
    """Sec. 4.1: prompts with reasoning are Summ-NLI's (Figure 4); prompts without reasoning are Figure 4 asking
    for the label directly. A training pair judged right gets both; the teacher's reasoning is the completion."""
    figure4 = _figure(*FIGURES[0][:2])
    assert flat(distill_prompts.WITH_REASONING.template) == figure4
    without = flat(distill_prompts.WITHOUT_REASONING.template)
    assert without.startswith(figure4.split("### Reasoning process and final judgement:")[0])
    assert "without any reasoning" in without and "Reasoning process:" not in without
    item = _labelled(2)[0]
    forms = distill.examples_of(item, train=True, answer="text")
    assert [e.form for e in forms] == ["with-reasoning", "without-reasoning"]
    assert "All facts are in the document." in forms[0].completion and "Consistent" in forms[1].completion
