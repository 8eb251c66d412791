"""Paradigms paper (003): Eq. 2 / Eq. 4's "any" aggregation and Appendix B's retrieval, worked by hand.

Appendix B: "top sentences from the document that maximize the recall of ROUGE-1 and ROUGE-2 towards the
summary are retrieved, until the total length reaches a certain threshold" (1024 tokens, Table 8); for the
windows, "n important sentences are independently extracted" (n = 5). Expected recalls are counted here.
"""

from __future__ import annotations

import pytest

from services.nli import retrieval as rt
from services.nli.paradigms import _any_inconsistent

TARGET = "the cat sat on the mat"
SCRAMBLED = "mat on the sat cat the"  # every unigram of TARGET, one of its five bigrams ("on the")
SAME = "The cat sat on the mat."
UNRELATED = "Stock markets fell sharply in Tokyo."


def test_eq_2_and_4_any_window_inconsistent_makes_the_summary_inconsistent():
    """Eq. 2: y = any_j LLM(D, W_j): one inconsistent window is enough; an unread window is never taken as
    consistent (no label), and only all-consistent windows give a consistent summary."""
    assert _any_inconsistent(["consistent", "inconsistent", "consistent"]) == "inconsistent"
    assert _any_inconsistent(["consistent", None, "inconsistent"]) == "inconsistent"
    assert _any_inconsistent(["consistent", None]) is None
    assert _any_inconsistent(["consistent", "consistent"]) == "consistent"
    assert _any_inconsistent([]) is None


def test_appendix_b_recall_is_rouge_1_plus_rouge_2_recall():
    """ROUGE-1 recall + ROUGE-2 recall toward the target: the same sentence scores 1 + 1; the scrambled one all
    six unigrams (1) and one of five bigrams (0.2); lower case and stemming as rouge-score does them."""
    want = rt._ngrams(TARGET)
    assert sum(want[0].values()) == 6 and sum(want[1].values()) == 5
    assert rt._recall(want, rt._ngrams(SAME)) == pytest.approx(2.0)
    assert rt._recall(want, rt._ngrams(SCRAMBLED)) == pytest.approx(1.2)
    assert rt._recall(want, rt._ngrams("the cat")) == pytest.approx(2 / 6 + 1 / 5)
    assert rt._recall(want, rt._ngrams("the the the cats")) == pytest.approx(3 / 6 + 1 / 5)  # clipped, stemmed
    assert rt._recall(rt._ngrams("cat"), rt._ngrams("cat")) == pytest.approx(1.0)  # no bigram to recall
    assert rt._recall(rt._ngrams(""), rt._ngrams("cat")) == 0.0


def test_appendix_b_rouge_2_breaks_the_tie_rouge_1_leaves():
    """A sentence with the summary's words in another order has the same ROUGE-1 recall; ROUGE-2 picks the one
    that says it in order."""
    picked = rt.select_context([SCRAMBLED, UNRELATED, SAME], TARGET, n_sentences=1)
    assert picked.indices == (2,) and picked.sentences == (SAME,) and picked.text == SAME


def test_appendix_b_greedy_adds_what_adds_recall_in_document_order_and_stops():
    """Greedy: each step adds the sentence that raises the recall most; it stops when nothing adds recall
    (the unrelated sentence is never taken) and returns the picked sentences in document order."""
    doc = ["A dog barked.", "The cat sat.", UNRELATED, "It sat on the mat."]
    picked = rt.select_context(doc, TARGET, n_sentences=5)
    assert picked.indices == (1, 3)
    assert picked.text == "The cat sat. It sat on the mat."
    assert rt.select_context(doc, TARGET, n_sentences=1).indices == (3,)  # 4/6 + 3/5 beats 2/6 + 1/5 ... 0.93
    assert rt.select_context([UNRELATED], TARGET, n_sentences=3).indices == ()
    # what is picked counts from then on: "the cat" adds nothing once "the cat sat" and "on the mat" are in
    assert rt.select_context(["the cat sat", "on the mat", "the cat"], TARGET, n_sentences=3).indices == (0, 1)
    # 0.9, then "mat" 4/6 + 2/5, then "on" 5/6 + 2/5: each step counts the words and pairs picked before
    assert rt.select_context(["the cat sat", "mat", "on"], TARGET, n_sentences=3).indices == (0, 1, 2)


def test_table_8_budget_is_1024_tokens_and_n_is_5():
    """Table 8: Summ-Alignment keeps up to 1024 tokens; Sent-Alignment extracts n = 5 sentences a window."""
    assert rt.CONTEXT_BUDGET_TOKENS == 1024 and rt.WINDOW_CONTEXT_SENTENCES == 5
    long_sentence = "the cat sat on the mat " * 180  # 4,140 characters, 1,036 tokens: over the budget alone
    doc = [long_sentence.strip() + ".", "The cat sat."]
    assert rt.select_context(doc, TARGET).indices == (1,)  # default budget: the long one does not fit
    assert rt.select_context(doc, TARGET, budget_tokens=2000).indices[0] == 0
    two = ["The cat sat.", "It sat on the mat."]
    tokens = [rt.estimate_tokens(s) for s in two]
    assert rt.select_context(two, TARGET, budget_tokens=sum(tokens)).indices == (0, 1)  # exactly at the budget
    assert len(rt.select_context(two, TARGET, budget_tokens=sum(tokens) - 1).indices) == 1
    assert rt.select_context(" ".join(two), TARGET, n_sentences=2).indices == (0, 1)  # a text is split first


def test_appendix_b_retrieval_runs_for_long_documents_or_when_asked():
    short, long = "A short text.", "word " * 20_000
    assert not rt.needs_retrieval(short) and rt.needs_retrieval(long)
    assert rt.needs_retrieval(short, retrieval="always") and not rt.needs_retrieval(long, retrieval="never")
    assert rt.needs_retrieval("x" * 100, fit_tokens=10) and not rt.needs_retrieval("x" * 36, fit_tokens=10)
    assert rt.context_for(long, TARGET, 1024, None, use=False) is None
    doc = "The cat sat. It sat on the mat. A dog barked."
    assert rt.context_for(doc, TARGET, 1024, None).indices == (0, 1)
    assert rt.context_for(doc, TARGET, 1024, 1).indices == (1,)
    assert rt.context_for(doc, TARGET, 4, None).indices == (0,)  # the budget applies without n


def test_section_3_2_windows_are_consecutive_and_do_not_overlap():
    """Sent-NLI's windows: consecutive runs of `window` summary sentences, the last one shorter."""
    assert rt.windows_of(["a", "b", "c", "d", "e"], 2) == [(0, 2), (2, 4), (4, 5)]
    assert rt.windows_of(["a", "b"], 1) == [(0, 1), (1, 2)]
    assert rt.windows_of(["a", "b"], 5) == [(0, 2)]
    assert rt.windows_of([], 3) == []
    with pytest.raises(ValueError, match="^window must be at least 1$"):
        rt.windows_of(["a"], 0)
