"""Paper 003 (zero-shot factual-inconsistency paradigms) held to its text: Eq. 1-4, Appendix B retrieval, the
evaluation protocol (balanced accuracy, Pearson) of Sec. 3.4. Each test names the section it checks."""

from __future__ import annotations

import re

import numpy as np
import pytest

from services import stats
from services.nli import paradigms as nli
from services.nli import retrieval
from services.prompts import nli as P
from services.text import estimate_tokens

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
