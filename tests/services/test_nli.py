"""Paper 003's paradigms through the fake server: Summ-NLI, Sent-NLI (Eq. 2), QG-QA (Eq. 4), Appendix B retrieval."""

from __future__ import annotations

import re

import pytest

from services.llm import UsageLedger
from services.nli import paradigms as nli
from services.nli import replies, retrieval
from services.prompts import nli as P
from services.text import estimate_tokens
from tests.fakes import last_user

DOC = (
    "Ollie asked Jane whether she was in Warsaw. Jane said she was just back in Warsaw. "
    "Jane invited Ollie to dinner on the 19th. Ollie declined the invitation."
)
GOOD = "Jane is in Warsaw."
BAD = "Ollie accepted the dinner invitation."
SUMMARY = f"{GOOD} {BAD}"


def judged(label: str, why: str = "because") -> dict:
    return {"reasoning": why, "judgement": label}


def first_user(body: dict) -> str:
    return body["messages"][0]["content"]


def nli_judge(body: dict) -> dict:
    """Sent/Summ-NLI stand-in: inconsistent when the judged text says 'accepted'."""
    prompt = first_user(body)
    block = re.search(
        r"### (?:One of the specified sentence in summary|Generated Summary):\n(.*)\n\n### Reasoning", prompt, re.S
    )
    assert block, "not an NLI prompt"
    return judged("Inconsistent" if "accepted" in block.group(1) else "Consistent", block.group(1))


# -- Summ-NLI -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("reply", "label"), [("Consistent", "consistent"), ("Inconsistent", "inconsistent")])
def test_summ_nli_reads_the_judgement(fake, client, reply, label):
    fake.enqueue_json(judged(reply, "the reasons"))
    res = nli.summ_nli(client, DOC, SUMMARY)
    assert (res.label, res.reasoning, res.parse_error) == (label, "the reasons", None)
    assert res.context is None
    prompt = last_user(fake.requests[0])
    assert prompt.startswith("### Instruction:\nNow you are one of the greatest English linguist experts")
    assert DOC in prompt and SUMMARY in prompt and "{summary}" not in prompt and "{source text}" not in prompt
    assert res.usage["calls"] == 1 and res.usage["prompt_tokens"] > 0


def test_summ_nli_missing_judgement_is_a_parse_failure(fake, client):
    fake.enqueue_json({"reasoning": "It all checks out."})
    fake.enqueue_json({"reasoning": "Still no verdict.", "judgement": ""})
    res = nli.summ_nli(client, DOC, SUMMARY)
    assert res.label is None and res.reasoning is None
    assert res.parse_error and "Judgement" in res.parse_error
    assert res.usage["calls"] == 2 and res.usage["errors"] == 1


def test_summ_nli_judgement_other_than_the_two_words_is_not_guessed(fake, client):
    fake.enqueue_json(judged("Mostly consistent"))
    fake.enqueue_json(judged("Partially"))
    res = nli.summ_nli(client, DOC, SUMMARY)
    assert res.label is None and res.parse_error


# -- Sent-NLI, Eq. 2 ------------------------------------------------------------------------------
def test_sent_nli_window_1_any_inconsistent_makes_the_summary_inconsistent(fake, client):
    fake.responder = nli_judge
    res = nli.sent_nli(client, DOC, SUMMARY, window=1)
    assert [(w.start, w.end, w.label) for w in res.windows] == [(0, 1, "consistent"), (1, 2, "inconsistent")]
    assert res.windows[1].sentences == (BAD,)
    assert res.label == "inconsistent"
    assert res.usage["calls"] == 2 and res.n_failed == 0


def test_sent_nli_all_consistent(fake, client):
    fake.responder = nli_judge
    res = nli.sent_nli(client, DOC, f"{GOOD} Ollie declined the invitation.", window=1)
    assert res.label == "consistent" and all(w.label == "consistent" for w in res.windows)


def test_sent_nli_window_2_groups_sentences(fake, client):
    fake.responder = nli_judge
    summary = f"{GOOD} Jane invited Ollie to dinner. {BAD}"
    res = nli.sent_nli(client, DOC, summary, window=2)
    assert [(w.start, w.end) for w in res.windows] == [(0, 2), (2, 3)]
    assert res.windows[0].sentences == (GOOD, "Jane invited Ollie to dinner.")
    assert [w.label for w in res.windows] == ["consistent", "inconsistent"]
    assert res.label == "inconsistent"
    assert f"{GOOD} Jane invited Ollie to dinner." in first_user(fake.requests[0])


def test_sent_nli_failed_window_is_recorded_and_does_not_vote(fake, client):
    fake.enqueue_json(judged("Consistent"))
    fake.enqueue_json({"reasoning": "no verdict"})
    fake.enqueue_json({"reasoning": "no verdict again"})
    res = nli.sent_nli(client, DOC, SUMMARY, window=1)
    assert res.windows[0].label == "consistent"
    assert res.windows[1].label is None and res.windows[1].parse_error
    # 003 Eq. 2: any() over the windows; an unread window is never taken as consistent
    assert res.label is None and res.n_failed == 1
    rec = nli.result_record(res, "sent-nli", SUMMARY)
    assert rec["score"] is None and rec["partial_score"] == 1.0 and rec["n_failed"] == 1


def test_sent_nli_no_window_read_gives_no_label(fake, client):
    for _ in range(4):
        fake.enqueue_json({"reasoning": "no verdict"})
    res = nli.sent_nli(client, DOC, SUMMARY, window=1)
    assert res.label is None and res.n_failed == 2


def test_sent_nli_rejects_window_0(client):
    with pytest.raises(ValueError):
        nli.sent_nli(client, DOC, SUMMARY, window=0)


# -- QG-QA, Eq. 4 ---------------------------------------------------------------------------------
def qa_result(label: str, answer: str = "x") -> dict:
    return {"results": [{"question": "q", "answer": answer, "reasoning": "r", "judgement": label}]}


def qgqa_judge(body: dict) -> dict:
    """QG: one question per window, the window's own entity; QA: inconsistent if the entity is 'accepted'."""
    prompt = first_user(body)
    if prompt.startswith("### Instruction:\n\nSuppose you are"):
        sent = re.search(r'"Specified sentences" : (.*)\n', prompt).group(1)
        entity = "accepted" if "accepted" in sent else "Jane"
        return {"entities": [entity], "pairs": [{"question": f"What about {sent}?", "answer": entity}]}
    assert prompt.startswith("Now you are one of the greatest English linguist experts")
    pair = re.search(r"### Question-answer pairs:\n\n(.*)\n\nPlease refer", prompt, re.S).group(1)
    return qa_result("Inconsistent" if pair.endswith("A1: accepted") else "Consistent", pair.split("A1: ")[1])


def test_qg_qa_consistent_and_inconsistent(fake, client):
    fake.responder = qgqa_judge
    res = nli.qg_qa(client, DOC, SUMMARY, window=1)
    assert [(p.window, p.expected_answer, p.judgement) for p in res.pairs] == [
        (0, "Jane", "consistent"),
        (1, "accepted", "inconsistent"),
    ]
    assert res.pairs[0].answer == "Jane" and res.pairs[0].reasoning == "r"
    assert res.label == "inconsistent"
    assert res.usage["calls"] == 4  # QG + QA per window

    fake.clear_requests()
    assert nli.qg_qa(client, DOC, GOOD).label == "consistent"


def test_qg_qa_eq4_one_bad_answer_among_many(fake, client):
    fake.enqueue_json(
        {
            "entities": ["Jane", "Warsaw"],
            "pairs": [
                {"question": "Who is in Warsaw?", "answer": "Jane"},
                {"question": "Where is Jane?", "answer": "Warsaw"},
            ],
        }
    )
    fake.enqueue_json({"results": [qa_result("Consistent")["results"][0], qa_result("Inconsistent")["results"][0]]})
    res = nli.qg_qa(client, DOC, GOOD)
    assert [p.judgement for p in res.pairs] == ["consistent", "inconsistent"]
    assert res.label == "inconsistent"


TWO_PAIRS = {
    "pairs": [{"question": "Who is in Warsaw?", "answer": "Jane"}, {"question": "Where is Jane?", "answer": "Warsaw"}]
}


def test_qa_asks_a_windows_pairs_in_one_prompt_as_figure_7_lists_them(fake, client):
    fake.enqueue_json(TWO_PAIRS)
    fake.enqueue_json({"results": [qa_result("Consistent")["results"][0], qa_result("Consistent")["results"][0]]})
    res = nli.qg_qa(client, DOC, GOOD)
    _, qa_req = fake.requests
    text = first_user(qa_req)
    listed = re.search(r"### Question-answer pairs:\n\n(.*)\n\nPlease refer", text, re.S).group(1)
    assert listed == "Q1: Who is in Warsaw? A1: Jane\n\nQ2: Where is Jane? A2: Warsaw"
    assert res.label == "consistent"


def test_qa_reply_with_too_few_judgements_leaves_the_window_unknown(fake, client):
    fake.enqueue_json(TWO_PAIRS)
    fake.enqueue_json({"results": [qa_result("Consistent")["results"][0]]})
    fake.enqueue_json({"results": [qa_result("Consistent")["results"][0]]})
    res = nli.qg_qa(client, DOC, GOOD)
    assert [p.judgement for p in res.pairs] == [None, None] and res.label is None


def test_qa_runs_in_a_separate_conversation_per_question(fake, client):
    fake.enqueue_json(
        {
            "entities": ["Jane", "Warsaw"],
            "pairs": [
                {"question": "Who is in Warsaw?", "answer": "Jane"},
                {"question": "Where is Jane?", "answer": "Warsaw"},
            ],
        }
    )
    fake.enqueue_json(qa_result("Consistent"))
    fake.enqueue_json(qa_result("Consistent"))
    nli.qg_qa(client, DOC, GOOD, qa_per_pair=True)
    qg_req, *qa_reqs = fake.requests
    assert "Specified sentences" in first_user(qg_req) and DOC not in first_user(qg_req)  # QG never sees the document
    assert len(qa_reqs) == 2
    expected = ["Q1: Who is in Warsaw? A1: Jane", "Q1: Where is Jane? A1: Warsaw"]
    for req, pair in zip(qa_reqs, expected, strict=True):
        # a new conversation: one user message, no QG prompt or reply, only this question
        assert [m["role"] for m in req["messages"]] == ["user"]
        text = first_user(req)
        assert re.search(r"### Question-answer pairs:\n\n(.*)\n\nPlease refer", text, re.S).group(1) == pair
        assert "Specified sentences" not in text and DOC in text
    assert "Who is in Warsaw?" not in first_user(qa_reqs[1])


def test_qg_qa_window_2(fake, client):
    fake.responder = qgqa_judge
    summary = f"{GOOD} Jane invited Ollie to dinner. {BAD}"
    res = nli.qg_qa(client, DOC, summary, window=2)
    assert [p.window for p in res.pairs] == [0, 1]
    assert f'"Specified sentences" : {GOOD} Jane invited Ollie to dinner.' in first_user(fake.requests[0])
    assert res.label == "inconsistent"


def test_qg_with_no_questions_is_recorded(fake, client):
    fake.enqueue_json({"entities": [], "pairs": []})
    fake.enqueue_json({"entities": [], "pairs": []})
    res = nli.qg_qa(client, DOC, GOOD)
    assert len(res.pairs) == 1
    pair = res.pairs[0]
    assert pair.question is None and pair.judgement is None
    assert "no questions" in pair.parse_error
    assert res.label is None and res.n_failed == 1


def test_a_question_answered_twice_is_recorded(fake, client):
    fake.enqueue_json({"pairs": [{"question": "Who is in Warsaw?", "answer": "Jane"}]})
    twice = {"results": [qa_result("Consistent")["results"][0], qa_result("Inconsistent")["results"][0]]}
    fake.enqueue_json(twice)
    fake.enqueue_json(twice)
    res = nli.qg_qa(client, DOC, GOOD)
    pair = res.pairs[0]
    assert pair.question == "Who is in Warsaw?" and pair.judgement is None
    assert "2 judgement(s)" in pair.parse_error
    assert res.label is None


def test_qa_missing_judgement_is_recorded(fake, client):
    fake.enqueue_json({"pairs": [{"question": "Who is in Warsaw?", "answer": "Jane"}]})
    fake.enqueue_json({"results": [{"question": "q", "answer": "Jane", "reasoning": "r"}]})
    fake.enqueue_json({"results": [{"question": "q", "answer": "Jane", "reasoning": "r"}]})
    res = nli.qg_qa(client, DOC, GOOD)
    assert res.pairs[0].judgement is None and "Judgement" in res.pairs[0].parse_error


# -- ledger ---------------------------------------------------------------------------------------
def test_per_document_usage_also_counts_in_the_run_ledger(fake, backend):
    from services.llm import get_client

    run = UsageLedger()
    client = get_client(backend, ledger=run)
    fake.responder = nli_judge
    first = nli.sent_nli(client, DOC, SUMMARY)
    second = nli.summ_nli(client, DOC, SUMMARY)
    assert first.usage["calls"] == 2 and second.usage["calls"] == 1
    assert run.summary()["calls"] == 3
    assert run.summary()["prompt_tokens"] == first.usage["prompt_tokens"] + second.usage["prompt_tokens"]


# -- parsing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [None, "", "Consistent.", "yes", 1, "Consistent or Inconsistent"])
def test_parse_judgement_is_strict(value):
    with pytest.raises(ValueError):
        replies.parse_judgement(value)


def test_parse_judgement_accepts_the_two_words_in_any_case():
    assert replies.parse_judgement(" INCONSISTENT ") == "inconsistent"
    assert replies.parse_judgement("Consistent") == "consistent"


# -- Appendix B: long documents ---------------------------------------------------------------------
LONG = [
    "The committee met on Tuesday.",
    "Revenue grew by ten percent in the third quarter.",
    "The weather was mild.",
    "The new factory in Ohio opened in March.",
    "Staff enjoyed the annual picnic.",
    "Revenue from the Ohio factory exceeded forecasts.",
]
TARGET = "The new Ohio factory opened in March, and revenue grew by ten percent."


def test_select_context_picks_the_highest_recall_sentences():
    sel = retrieval.select_context(LONG, TARGET, n_sentences=2)
    assert sel.indices == (1, 3)  # together they cover the target's unigrams and bigrams best
    assert sel.sentences == (LONG[1], LONG[3])
    assert sel.text == f"{LONG[1]} {LONG[3]}"


def test_select_context_first_pick_is_the_single_best_sentence():
    assert retrieval.select_context(LONG, TARGET, n_sentences=1).indices == (1,)  # recall 7/13 + 4/12


def test_select_context_stops_when_nothing_adds_recall():
    sel = retrieval.select_context(LONG, "Revenue grew by ten percent.", n_sentences=5)
    assert sel.indices == (1,)


def test_select_context_respects_the_token_budget():
    budget = estimate_tokens(LONG[3])  # the best sentence (LONG[1]) does not fit
    sel = retrieval.select_context(LONG, TARGET, budget_tokens=budget)
    assert sum(estimate_tokens(s) for s in sel.sentences) <= budget
    assert sel.indices == (3,)
    whole = retrieval.select_context(" ".join(LONG), TARGET)  # the default 1024-token budget
    assert whole.indices[:2] == (1, 3) and 2 not in whole.indices  # "The weather was mild." adds nothing


def test_long_documents_are_cut_to_the_retrieved_context(fake, client):
    fake.responder = nli_judge
    doc = " ".join(LONG)
    short = nli.summ_nli(client, doc, TARGET)
    assert short.context is None and doc in first_user(fake.requests[0])

    fake.clear_requests()
    res = nli.sent_nli(client, doc, TARGET, budget_tokens=20, n_sentences=2, retrieval="always")
    ctx = res.windows[0].context
    assert ctx is not None and ctx.indices == (1, 3)
    prompt = first_user(fake.requests[0])
    assert LONG[1] in prompt and LONG[3] in prompt and LONG[2] not in prompt

    fake.clear_requests()
    res = nli.summ_nli(client, doc, TARGET, budget_tokens=30, retrieval="always")
    assert res.context is not None and sum(estimate_tokens(s) for s in res.context.sentences) <= 30
    assert LONG[4] not in first_user(fake.requests[0])


def test_prompts_are_versioned_and_quote_the_paper():
    for prompt in P.ALL:
        assert prompt.version and prompt.source
    assert len(P.SIX_ERROR_TYPES) == 6
    assert "Figure 7" in P.QA.source and "{Question-answer pairs}" in P.QA.template
    assert "Judgement: < Consistent or Inconsistent >" in P.SENT_NLI.template


def test_retrieval_is_for_documents_that_do_not_fit():
    """003 Appendix B retrieves for long documents (GovReport, SQuALITY); a news article is read whole."""
    article = "The council met on Tuesday to discuss the budget for next year. " * 80  # ~1,300 estimated tokens
    assert estimate_tokens(article) > retrieval.CONTEXT_BUDGET_TOKENS
    assert not retrieval.needs_retrieval(article)
    assert retrieval.needs_retrieval(article * 4)
    assert retrieval.needs_retrieval(article, retrieval="always")
    assert not retrieval.needs_retrieval(article * 9, retrieval="never")
    assert retrieval.needs_retrieval(article, fit_tokens=1000)


def test_retrieval_follows_the_settings(fake, client, monkeypatch):
    """NLI_RETRIEVAL=always retrieves even for a short document; the default reads it whole."""
    fake.responder = nli_judge
    doc = " ".join(LONG)
    assert nli.run_method(client, doc, TARGET, "summ-nli").context is None
    monkeypatch.setenv("NLI_RETRIEVAL", "always")
    assert nli.run_method(client, doc, TARGET, "sent-nli").windows[0].context is not None
