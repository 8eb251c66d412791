"""Properties of the aligner, the JSON repair path and Eq. 3 (hypothesis).

The aligner and the repair path are exercised through `dcr.evaluate` against the fake OpenAI-compatible
server, with the model's answer drawn by hypothesis.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from services import dcr
from services.config import BackendConfig
from services.llm import LLMClient, get_client, loads_lenient
from services.llm.parsing import try_parse
from tests.fakes import BAD, OK, FakeOpenAIServer
from tests.support.waiting import HEALTHY_TIMEOUT

FIXTURES_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
SENTENCE = st.lists(WORD, min_size=2, max_size=8).map(lambda ws: " ".join(ws).capitalize() + ".")
NEGATIVE_WORDS = (
    "consistent",
    "contradict",
    "not supported",
    "not entailed",
    "not mentioned",
    "not stated",
    "not found",
    "incorrect",
    "unsupported",
)


class Answers:
    """What the fake model says next: the same text to the first question and to the retry."""

    raw = "{}"

    def __call__(self, body: dict) -> str:
        return self.raw


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[LLMClient, Answers]]:
    answers = Answers()
    with FakeOpenAIServer(responder=answers) as fake:
        backend = BackendConfig(
            kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=HEALTHY_TIMEOUT
        )
        yield get_client(backend), answers


def _evaluate(model, sentences: list[str], raw: str) -> dcr.Evaluation:
    client, answers = model
    answers.raw = raw
    return dcr.evaluate(client, "A reference text.", sentences, dcr.DCRConfig(max_rounds=0, amc="rule"))


reason_item = st.fixed_dictionaries(
    {"sentence": st.one_of(SENTENCE, st.text(max_size=40)), "reason": st.sampled_from([OK, BAD.format("x"), ""])}
)


# -- the aligner --------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=8), st.lists(st.text(max_size=60), max_size=8))
def test_align_gives_each_sentence_at_most_one_item_and_keeps_every_other_item(items, sentences):
    by_sentence, leftovers = dcr.align(items, sentences)
    assert len(by_sentence) == len(sentences)
    used = [i for i in by_sentence if i is not None]
    assert len(used) == len(set(used)) and all(0 <= i < len(items) for i in used)
    assert sorted(used + leftovers) == list(range(len(items)))


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES_OK)
@given(st.lists(SENTENCE, min_size=1, max_size=6, unique=True), st.lists(reason_item, max_size=8), st.booleans())
def test_k_sentences_in_k_verdicts_out_and_the_text_is_preserved(model, sentences, items, shuffle):
    ev = _evaluate(model, sentences, json.dumps({"reason": items, "is_consistent": shuffle}))
    assert [v.text for v in ev.sentences] == sentences
    assert [v.index for v in ev.sentences] == list(range(len(sentences)))
    assert all(v.verdict in ("consistent", "inconsistent", "unknown") for v in ev.sentences)
    assert ev.n_judged + ev.n_unknown == len(sentences)
    # Every reason the model gave is either one sentence's or kept as paragraph-level: none is lost.
    kept = [v.reason for v in ev.sentences if v.reason is not None] + [x.text for x in ev.extras]
    assert len(kept) == len(items)


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES_OK)
@given(st.lists(SENTENCE, min_size=1, max_size=5, unique=True), st.data())
def test_a_complete_answer_gives_each_sentence_its_own_verdict(model, sentences, data):
    bad = data.draw(st.lists(st.booleans(), min_size=len(sentences), max_size=len(sentences)))
    items = [{"sentence": s, "reason": BAD.format("no") if b else OK} for s, b in zip(sentences, bad, strict=True)]
    ev = _evaluate(model, sentences, json.dumps({"reason": items}))
    assert [v.verdict for v in ev.sentences] == ["inconsistent" if b else "consistent" for b in bad]


# -- the JSON repair path -----------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_reading_any_answer_never_raises(raw):
    value, problem = try_parse(raw, dcr.DCEOutput.model_validate)
    assert (value is None) != (problem is None)
    try:
        loads_lenient(raw)
    except ValueError:
        pass  # "no JSON found": the one error it reports


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES_OK)
@given(st.lists(SENTENCE, min_size=1, max_size=4, unique=True), st.data())
def test_a_truncated_answer_never_invents_a_verdict(model, sentences, data):
    bad = data.draw(st.lists(st.booleans(), min_size=len(sentences), max_size=len(sentences)))
    items = [{"sentence": s, "reason": BAD.format("no") if b else OK} for s, b in zip(sentences, bad, strict=True)]
    full = json.dumps({"reason": items, "is_consistent": not any(bad)})
    cut = data.draw(st.integers(min_value=0, max_value=len(full) - 1))
    ev = _evaluate(model, sentences, full[:cut])
    assert len(ev.sentences) == len(sentences)
    for v, b in zip(ev.sentences, bad, strict=True):
        assert v.verdict in ("inconsistent" if b else "consistent", "unknown"), (full[:cut], v)


@settings(max_examples=80, deadline=None, suppress_health_check=FIXTURES_OK)
@given(st.lists(SENTENCE, min_size=1, max_size=4, unique=True), st.text(max_size=200))
def test_an_answer_that_states_no_verdict_judges_nothing(model, sentences, raw):
    assume(not any(w in raw.lower() for w in NEGATIVE_WORDS))
    ev = _evaluate(model, sentences, raw)
    assert [v.verdict for v in ev.sentences] == ["unknown"] * len(sentences)
    assert ev.score is None or ev.score.z_hat is None


# -- Eq. 3 --------------------------------------------------------------------------------------
MARK = st.sampled_from([1, -1, None])


@settings(max_examples=400, deadline=None)
@given(st.lists(MARK, max_size=30), st.lists(MARK, max_size=5))
def test_eq3_is_always_in_0_1_or_absent_when_nothing_was_judged(marks, extras):
    s = dcr.score_evaluation(marks, extras)
    judged = [m for m in marks if m is not None]
    if judged:
        assert s.partial_z_hat is not None and 0.0 <= s.partial_z_hat <= 1.0
        # alpha and beta remove the paragraph-level entries: the score is the judged sentences' alone.
        assert s.partial_z_hat == pytest.approx((sum(judged) / len(judged) + 1) / 2)
    else:  # only paragraph-level entries, or nothing: k + beta = 0
        assert s.partial_z_hat is None
    # An unjudged sentence is never counted as consistent: the document then has no score at all.
    assert (s.z_hat is None) == (None in marks or not judged)
    if s.z_hat is not None:
        assert s.z_hat == s.partial_z_hat


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=40), st.data())
def test_eq3_is_monotone_in_the_number_of_consistent_sentences(k, data):
    n = data.draw(st.integers(min_value=0, max_value=k - 1))
    unknown = data.draw(st.lists(MARK.filter(lambda m: m is None), max_size=5))
    extras = data.draw(st.lists(MARK, max_size=4))
    lower = dcr.score_evaluation([1] * n + [-1] * (k - n) + unknown, extras).partial_z_hat
    higher = dcr.score_evaluation([1] * (n + 1) + [-1] * (k - n - 1) + unknown, extras).partial_z_hat
    assert lower is not None and higher is not None and higher > lower
    assert dcr.score_evaluation([1] * k, extras).z_hat == 1.0 and dcr.score_evaluation([-1] * k, extras).z_hat == 0.0


GAINS = st.integers(min_value=1, max_value=5).flatmap(
    lambda k: st.lists(
        st.lists(st.sampled_from([0.0, 0.1, 0.3, 0.45, 0.5, 0.55, 0.8, 0.9, 1.0, 1.1]), min_size=k, max_size=k),
        min_size=1,
        max_size=6,
    )
)


@settings(max_examples=400, deadline=None)
@given(GAINS)
def test_a_clear_best_pairing_is_the_hungarian_assignment(gain):
    # align() skips scipy when every item's best sentence is strictly ahead and no two share one; that pairing
    # must then be exactly the assignment scipy finds.
    from services.dcr.align import _assignment, _clear_best

    clear = _clear_best(gain)
    if clear is not None:
        assert clear == _assignment(gain)
        assert len(gain) <= len(gain[0])
