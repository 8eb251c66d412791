"""DCR: Eq. 3, the rule converter, alignment, DCE/AMC through the fake server, Algorithm 1."""

from __future__ import annotations

import dataclasses
import json

import pytest

from services import dcr
from services.dcr import (
    DCRConfig,
    Evaluation,
    Rewrite,
    Round,
    SentenceVerdict,
    align,
    rule_mark,
    score_evaluation,
)
from services.dcr.results import eq3
from services.llm import get_client
from tests.fakes import BAD, OK, FakeOpenAIServer, Reply, dce, last_user, toy_judge

REF = (
    "The Eiffel Tower stands in Paris. It was completed in 1889 for the World's Fair. "
    "The tower is made of wrought iron and is 330 metres tall."
)
S = ["The Eiffel Tower is in Paris.", "It was completed in 1999.", "It is made of wrought iron."]
CFG = DCRConfig()


# -- Eq. 3 ------------------------------------------------------------------------------------
def test_eq3_plain_average_mapped_to_unit_interval():
    s = eq3([1, 1, -1])
    assert (s.k, s.alpha, s.beta) == (3, 0.0, 0.0)
    assert s.z == pytest.approx(1 / 3) and s.z_hat == pytest.approx(2 / 3)
    assert eq3([-1, -1]).z_hat == 0.0
    assert eq3([1, -1, -1], alpha=1, beta=-1).z == 0.0


def test_eq3_empty_is_none_not_zero():
    s = eq3([])
    assert s.z is None and s.z_hat is None
    assert eq3([-1], alpha=1, beta=-1).z_hat is None  # k + beta == 0


def test_appendix_e4_example():
    """A paragraph-level negative reason, one consistent and one inconsistent sentence."""
    s = score_evaluation([1, -1], [-1])
    assert (s.k, s.alpha, s.beta) == (3, 1.0, -1.0)
    assert s.z == 0.0 and s.z_hat == 0.5


def test_extra_reasons_never_move_the_score():
    base = score_evaluation([1, 1, -1], [])
    assert score_evaluation([1, 1, -1], [1]).z == pytest.approx(base.z)
    assert score_evaluation([1, 1, -1], [-1, -1]).z == pytest.approx(base.z)


def test_all_consistent_scores_one():
    s = score_evaluation([1, 1, 1], [])
    assert s.z == 1.0 and s.z_hat == 1.0


def test_unknown_sentences_leave_no_score_only_a_partial_one():
    s = score_evaluation([1, None, -1, None], [])
    assert s.z is None and s.z_hat is None
    assert s.k == 2 and s.partial_z == 0.0 and s.n_unknown == 2 and s.n_judged == 2


def test_one_consistent_and_one_unjudged_sentence_is_not_consistent():
    s = score_evaluation([1, None], [])
    assert s.z_hat is None and s.partial_z_hat == 1.0 and s.record()["score"] is None


def test_user_alpha_and_beta_add_to_the_e4_offsets():
    s = score_evaluation([1, -1, -1], [-1], alpha=0.5, beta=1.0)
    assert s.alpha == 0.5 + 1 and s.beta == 1.0 - 1
    assert s.z == pytest.approx((1 - 1 - 1 - 1 + 1.5) / (4 + 0.0))


def test_nothing_judged_has_no_score():
    assert score_evaluation([None, None], []).z_hat is None
    assert score_evaluation([], []).z_hat is None
    assert score_evaluation([None], [-1]).z_hat is None  # only a paragraph-level reason


# -- the rule converter -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reason", "mark"),
    [
        ("This sentence is consistent with the article. The article states the tower is in Paris.", 1),
        ("this sentence is consistent with the article", 1),
        ("This sentence is not consistent with the article. The article says 1889, not 1999.", -1),
        ("This sentence is not fully consistent with the article.", -1),
        ("This sentence isn't consistent with the article.", -1),
        ("The date in this sentence is inconsistent with the article.", -1),
        ("Inconsistent: the article gives a different year.", -1),
        # the first stated verdict wins
        ("This sentence is consistent with the article, though one could argue it is not consistent.", 1),
        ("This sentence is not consistent with the article, although the rest is consistent.", -1),
        # no 'consistent' at all: fall back to clear negative words
        ("The article contradicts this claim.", -1),
        ("This is not supported by the article.", -1),
        # template echoes and answers without a verdict
        ("why this sentence is or is not consistent with the article", None),
        ("Why this sentence is or is not consistent with the article. You should start with...", None),
        ("original sentence", None),
        ("The article mentions the tower.", None),
        ("", None),
        (None, None),
    ],
)
def test_rule_mark(reason, mark):
    assert rule_mark(reason) == mark


def test_consistently_is_not_a_verdict():
    assert rule_mark("The article consistently calls it a tower.") is None


# -- alignment --------------------------------------------------------------------------------
def test_align_equal_counts_is_positional():
    by, left = align(["something else", "", "whatever"], S)
    assert by == [0, 1, 2] and left == []


def test_align_extra_paragraph_level_reason():
    by, left = align(["", S[0], S[1]], S[:2])
    assert by == [1, 2] and left == [0]


def test_align_missing_reason():
    by, left = align([S[0], "It is made of wrought iron"], S)
    assert by == [0, None, 1] and left == []


def test_align_out_of_order_quotes():
    by, left = align([S[2], S[0]], S)
    assert by == [1, None, 0] and left == []


def test_align_each_item_used_once():
    by, left = align([S[0], S[0] + " ", "Totally unrelated words here"], S[:2])
    assert by[0] in (0, 1) and by[1] is None
    assert sorted(left) == sorted({0, 1, 2} - {by[0]})


# -- evaluate through the fake ----------------------------------------------------------------
def test_evaluate_reads_verdicts_reasons_and_marks(fake, client):
    fake.enqueue_json(dce((S[0], OK), (S[1], BAD.format("the article says 1889")), (S[2], OK)))
    ev = dcr.evaluate(client, REF, S, CFG)
    assert ev.error is None
    assert [v.verdict for v in ev.sentences] == ["consistent", "inconsistent", "consistent"]
    assert [v.mark for v in ev.sentences] == [1, -1, 1]
    assert [v.rule_mark for v in ev.sentences] == [1, -1, 1]
    assert ev.sentences[1].reason == BAD.format("the article says 1889")
    assert ev.model_is_consistent is False
    assert ev.score.k == 3 and ev.score.z_hat == pytest.approx(2 / 3)
    assert ev.amc_agreement is None  # the rule converter makes no call
    assert len(fake.requests) == 1
    prompt = last_user(fake.requests[0])
    assert REF in prompt and " ".join(S) in prompt
    schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["reason"]["minItems"] == 3


def test_evaluate_fewer_reasons_leaves_a_sentence_unknown(fake, client):
    fake.enqueue_json(dce((S[0], OK), (S[2], OK)))
    ev = dcr.evaluate(client, REF, S, CFG)
    assert [v.verdict for v in ev.sentences] == ["consistent", "unknown", "consistent"]
    assert ev.sentences[1].mark is None and "no reason" in ev.sentences[1].error
    assert ev.n_unknown == 1 and ev.n_judged == 2
    assert any("2 reasons for 3 sentences" in n for n in ev.notes)
    assert ev.score.k == 2 and ev.score.z_hat is None and ev.score.partial_z_hat == 1.0


def test_evaluate_extra_reason_is_paragraph_level(fake, client):
    """Appendix E.4 end to end: alpha and beta remove the paragraph-level reason."""
    fake.enqueue_json(
        dce(
            ("", "The summary is not consistent with the article as a whole."),
            (S[0], OK),
            (S[1], BAD.format("wrong year")),
        )
    )
    ev = dcr.evaluate(client, REF, S[:2], CFG)
    assert [v.verdict for v in ev.sentences] == ["consistent", "inconsistent"]
    assert len(ev.extras) == 1 and ev.extras[0].mark == -1
    assert "as a whole" in ev.extras[0].text
    assert (ev.score.k, ev.score.alpha, ev.score.beta) == (3, 1.0, -1.0)
    assert ev.score.z == 0.0 and ev.score.z_hat == 0.5
    assert any("paragraph-level" in n for n in ev.notes)


def test_evaluate_template_echo_and_no_verdict_are_unknown(fake, client):
    fake.enqueue_json(
        dce(
            (S[0], "why this sentence is or is not consistent with the article"),
            (S[1], "The article mentions a year."),
            (S[2], OK),
        )
    )
    ev = dcr.evaluate(client, REF, S, CFG)
    assert [v.verdict for v in ev.sentences] == ["unknown", "unknown", "consistent"]
    assert "template" in ev.sentences[0].error
    assert "no verdict" in ev.sentences[1].error
    assert ev.score.k == 1 and ev.score.z_hat is None and ev.score.partial_z_hat == 1.0


def test_evaluate_accepts_a_bare_list_of_reasons(fake, client):
    fake.enqueue_json([{"sentence": S[0], "reason": OK}, {"sentence": S[1], "reason": BAD.format("x")}])
    ev = dcr.evaluate(client, REF, S[:2], CFG)
    assert [v.verdict for v in ev.sentences] == ["consistent", "inconsistent"]
    assert ev.model_is_consistent is None


def test_llm_converter_marks_and_agreement_with_the_rule(fake, client):
    reasons = [OK, BAD.format("the year is wrong"), "The article mentions iron."]
    fake.enqueue_json(dce(*zip(S, reasons, strict=True)))
    fake.enqueue_json({"reason": ["positive", "positive", "negative"], "answer": [1, 1, -1]})
    ev = dcr.evaluate(client, REF, S, DCRConfig(amc="llm"))
    assert len(fake.requests) == 2
    amc_prompt = last_user(fake.requests[1])
    for r in reasons:
        assert "*" + json.dumps(r) in amc_prompt
    assert fake.requests[1]["response_format"]["json_schema"]["schema"]["properties"]["answer"]["minItems"] == 3
    # the LLM's marks are used where the reason states no verdict or the same one; a mark against the
    # stated verdict (+1 for "not consistent") leaves the sentence unjudged
    assert [v.mark for v in ev.sentences] == [1, None, -1]
    assert [v.rule_mark for v in ev.sentences] == [1, -1, None]
    assert [v.verdict for v in ev.sentences] == ["consistent", "unknown", "inconsistent"]
    assert "states inconsistent" in ev.sentences[1].error
    assert ev.amc_agreement == (1, 2)
    assert ev.score.z_hat is None and ev.score.partial_z == pytest.approx(0.0)


def test_llm_converter_wrong_count_leaves_sentences_unknown(fake, client):
    fake.enqueue_json(dce((S[0], OK), (S[1], OK)))
    fake.enqueue_json({"reason": ["positive"], "answer": [1]})
    ev = dcr.evaluate(client, REF, S[:2], DCRConfig(amc="llm"))
    assert [v.verdict for v in ev.sentences] == ["unknown", "unknown"]
    assert all("Converter failed" in v.error for v in ev.sentences)
    assert ev.score.z_hat is None
    assert any("Auto-Metric Converter failed" in n for n in ev.notes)


def test_failed_call_marks_every_sentence_unknown_and_gives_no_score(backend):
    with FakeOpenAIServer(responder=lambda body: Reply(status=500, body={"error": {"message": "overloaded"}})) as f:
        client = get_client(backend.with_changes(base_url=f.base_url, max_retries=0))
        ev = dcr.evaluate(client, REF, S, CFG)
    assert ev.score is None
    assert "500" in ev.error and not ev.fatal
    assert all(v.verdict == "unknown" and v.mark is None and v.error == ev.error for v in ev.sentences)
    assert ev.n_judged == 0


def test_paragraph_method_judges_one_unit(fake, client):
    cand = " ".join(S)
    fake.enqueue_json(
        {"reason": {"sentence": cand, "reason": "This summary is not consistent with the article."}, "is_consistent": 0}
    )
    cfg = DCRConfig(method="paragraph")
    units = dcr.candidate_units(cand, cfg, S)
    assert units == [cand]
    ev = dcr.evaluate(client, REF, units, cfg)
    assert len(ev.sentences) == 1 and ev.sentences[0].verdict == "inconsistent"
    assert ev.score.z_hat == 0.0
    assert last_user(fake.requests[0]).startswith("You are an evaluator")
    assert "paragraph" in cfg.prompt_versions()["evaluator"]


# -- Algorithm 1 ------------------------------------------------------------------------------
def test_continue_stops_when_all_consistent(fake, client):
    fake.responder = toy_judge(bad="1999", fix="1889")
    rounds = [dcr.first_round(client, REF, [S[0], S[2]], CFG)]
    dcr.continue_rounds(client, REF, rounds, CFG)
    assert len(rounds) == 1 and rounds[0].rewrites == []
    assert len(fake.requests) == 1


def test_continue_fixes_and_reevaluates(fake, client):
    fake.responder = toy_judge(bad="1999", fix="1889")
    seen_improved, seen_rounds = [], []
    rounds = [dcr.first_round(client, REF, S, CFG)]
    dcr.continue_rounds(client, REF, rounds, CFG, on_improved=seen_improved.append, on_round=seen_rounds.append)
    assert len(rounds) == 2
    assert rounds[0].evaluation.score.z_hat == pytest.approx(2 / 3)
    assert [(rw.index, rw.after) for rw in rounds[0].rewrites] == [(1, "It was completed in 1889.")]
    assert rounds[1].sentences == [S[0], "It was completed in 1889.", S[2]]
    assert rounds[1].evaluation.all_consistent and rounds[1].evaluation.score.z_hat == 1.0
    assert [r.index for r in seen_improved] == [0] and [r.index for r in seen_rounds] == [1]
    assert len(fake.requests) == 3  # DCE, RAI, DCE


def test_continue_stops_at_max_rounds(fake, client):
    fake.responder = toy_judge(bad="1999", fix="roughly 1999")  # never actually fixed
    cfg = DCRConfig(max_rounds=2)
    rounds = [dcr.first_round(client, REF, S, cfg)]
    dcr.continue_rounds(client, REF, rounds, cfg)
    assert [r.index for r in rounds] == [0, 1, 2]
    assert rounds[-1].evaluation.sentences[1].verdict == "inconsistent"
    assert rounds[-1].rewrites == []  # the last round is judged, not improved
    assert len(fake.requests) == 5  # DCE, RAI, DCE, RAI, DCE


def test_only_inconsistent_sentences_are_rewritten(fake, client):
    fake.enqueue_json(dce((S[0], OK), (S[1], BAD.format("1889, not 1999")), (S[2], OK)))
    fake.enqueue_json(
        [
            {"sentence": S[0], "improved_sentence": "The tower is located in Paris, France.", "reason": "style"},
            {"sentence": S[1], "improved_sentence": "It was completed in 1889.", "reason": "year"},
            {"sentence": S[2], "improved_sentence": S[2], "reason": "ALREADY CONSISTENT"},
        ]
    )
    fake.enqueue_json(dce((S[0], OK), ("It was completed in 1889.", OK), (S[2], OK)))
    rounds = [dcr.first_round(client, REF, S, CFG)]
    dcr.continue_rounds(client, REF, rounds, CFG)
    assert [(rw.index, rw.before, rw.after) for rw in rounds[0].rewrites] == [(1, S[1], "It was completed in 1889.")]
    assert rounds[1].sentences == [S[0], "It was completed in 1889.", S[2]]
    rai_prompt = last_user(fake.requests[1])
    assert rai_prompt.startswith("You are a good writer")
    assert "1889, not 1999" in rai_prompt  # the reasons are passed to the improver


def test_template_echo_rewrite_is_ignored(fake, client):
    fake.enqueue_json(dce((S[0], OK), (S[1], BAD.format("wrong year"))))
    fake.enqueue_json(
        [{"sentence": S[0], "improved_sentence": S[0]}, {"sentence": S[1], "improved_sentence": "improved sentence"}]
    )
    rounds = [dcr.first_round(client, REF, S[:2], CFG)]
    dcr.continue_rounds(client, REF, rounds, CFG)
    assert len(rounds) == 1  # nothing changed: no second round
    (rw,) = rounds[0].rewrites
    assert rw.after == S[1] and not rw.changed and "template" in rw.reason
    assert len(fake.requests) == 2


def test_improver_failure_is_recorded_and_stops(fake, client):
    fake.enqueue_json(dce((S[0], OK), (S[1], BAD.format("wrong year"))))
    fake.enqueue_text("I cannot do that.")
    fake.enqueue_text("Really, I cannot.")
    rounds = [dcr.first_round(client, REF, S[:2], CFG)]
    dcr.continue_rounds(client, REF, rounds, CFG)
    assert len(rounds) == 1 and rounds[0].rewrites == []
    assert "could not be read" in rounds[0].improve_error


def test_fatal_evaluation_is_not_improved(fake, client):
    fake.enqueue_status(401)
    rounds = [dcr.first_round(client, REF, S, CFG)]
    assert rounds[0].evaluation.fatal
    dcr.continue_rounds(client, REF, rounds, CFG)
    assert len(rounds) == 1 and len(fake.requests) == 1

    # even with a sentence judged inconsistent, a fatal backend error stops Algorithm 1
    bad = SentenceVerdict(index=0, text=S[1], verdict="inconsistent", reason=BAD.format("x"), mark=-1)
    rounds = [Round(index=0, sentences=[S[1]], evaluation=Evaluation(sentences=[bad], fatal=True))]
    dcr.continue_rounds(client, REF, rounds, CFG)
    assert len(rounds) == 1 and rounds[0].rewrites == [] and len(fake.requests) == 1


# -- the user's choices -----------------------------------------------------------------------
def _round(index: int, sentences: list[str], rewrites: list[Rewrite]) -> Round:
    return Round(index=index, sentences=sentences, evaluation=Evaluation(sentences=[]), rewrites=rewrites)


def test_compose_final_follows_accepted_chains():
    rounds = [
        _round(0, ["a", "b", "c"], [Rewrite(1, "b", "b1"), Rewrite(2, "c", "c1")]),
        _round(1, ["a", "b1", "c1"], [Rewrite(1, "b1", "b2")]),
        _round(2, ["a", "b2", "c1"], []),
    ]
    assert dcr.compose_final(rounds) == ["a", "b2", "c1"]


def test_compose_final_rejected_rewrite_freezes_its_sentence():
    rounds = [
        _round(0, ["a", "b", "c"], [Rewrite(1, "b", "b1", accepted=False), Rewrite(2, "c", "c1")]),
        _round(1, ["a", "b1", "c1"], [Rewrite(1, "b1", "b2"), Rewrite(0, "a", "a1")]),
    ]
    # b2 was built on the rejected b1, so it is not applied either; other sentences still follow
    assert dcr.compose_final(rounds) == ["a1", "b", "c1"]


def test_compose_final_rejecting_a_later_rewrite_keeps_the_earlier_one():
    rounds = [
        _round(0, ["a", "b"], [Rewrite(1, "b", "b1")]),
        _round(1, ["a", "b1"], [Rewrite(1, "b1", "b2", accepted=False)]),
    ]
    assert dcr.compose_final(rounds) == ["a", "b1"]
    assert dcr.compose_final([]) == []


def test_apply_rewrites_skips_rejected_and_unchanged():
    out = dcr.apply_rewrites(
        ["a", "b", "c"], [Rewrite(0, "a", "a1", accepted=False), Rewrite(1, "b", "b  "), Rewrite(2, "c", "c1")]
    )
    assert out == ["a", "b", "c1"]


# -- alignment keeps a reason with the sentence it judges -------------------------------------------
def test_paraphrased_negative_quote_stays_with_its_sentence(fake, client):
    """A paraphrased quote is not paragraph-level: its negative verdict stays in the score."""
    fake.enqueue_json(
        dce(
            (S[0], OK),
            ("The tower was finished in 1999", BAD.format("the article says 1889")),
            (S[2], OK),
            ("", "Overall the summary is mostly fine."),
        )
    )
    ev = dcr.evaluate(client, REF, S, CFG)
    assert [v.verdict for v in ev.sentences] == ["consistent", "inconsistent", "consistent"]
    assert len(ev.extras) == 1 and ev.score.z_hat < 1.0


def test_equal_counts_with_a_paragraph_level_reason_do_not_shift_by_position():
    quotes = ["", S[0], "It was finished in 1999"]
    reasons = ["The summary as a whole is consistent.", OK, BAD.format("1889")]
    by, left = align(quotes, S, reasons)
    assert by == [1, 2, None] and left == [0]


def test_e4_bare_strings_are_scored():
    """Appendix E.4's output: bare strings under "reasons", the first about the two paragraphs."""
    out = dcr.DCEOutput.model_validate(
        {
            "is_consistent": False,
            "reasons": [
                "The two paragraphs are not consistent.",
                "This sentence is consistent.",
                "This sentence is not consistent.",
            ],
        }
    )
    by, left = align([r.sentence for r in out.reason], S[:2], [r.reason for r in out.reason])
    assert by == [1, 2] and left == [0]


def test_explicit_verdict_field_and_reason_disagree_is_unknown(fake, client):
    fake.enqueue_json(
        {
            "reason": [
                {"sentence": S[0], "reason": OK, "verdict": "inconsistent"},
                {"sentence": S[1], "reason": "The year differs from the article's.", "verdict": "inconsistent"},
            ],
            "is_consistent": False,
        }
    )
    ev = dcr.evaluate(client, REF, S[:2], CFG)
    assert [v.verdict for v in ev.sentences] == ["unknown", "inconsistent"]
    assert "verdict field" in ev.sentences[0].error
    schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert "verdict" in schema["properties"]["reason"]["items"]["required"]


def test_other_names_for_the_verdict_and_the_reason_are_read():
    out = dcr.DCEOutput.model_validate(
        {
            "reason": [
                {"sentence": S[0], "explanation": "Matches.", "is_consistent": True},
                {"sentence": S[1], "rationale": "The year.", "label": "inconsistent"},
            ]
        }
    )
    assert [(r.reason, r.verdict) for r in out.reason] == [("Matches.", True), ("The year.", "inconsistent")]
    assert [dcr.stated_mark(r.reason, r.verdict)[0] for r in out.reason] == [1, -1]


# -- what a run delivers ---------------------------------------------------------------------------
def _scored(index: int, sentences: list[str], z_hat: float, rewrites: list[Rewrite]) -> Round:
    ev = Evaluation(sentences=[SentenceVerdict(index=i, text=s, verdict="consistent") for i, s in enumerate(sentences)])
    ev.score = dcr.score_evaluation([1] * len(sentences), [])
    ev.score = dataclasses.replace(ev.score, z_hat=z_hat)
    return Round(index=index, sentences=sentences, evaluation=ev, rewrites=rewrites)


def test_delivered_with_every_rewrite_accepted_is_the_last_round_and_its_score():
    rounds = [_scored(0, ["a", "b"], 0.5, [Rewrite(1, "b", "b1")]), _scored(1, ["a", "b1"], 1.0, [])]
    out = dcr.delivered(rounds)
    assert out.text == "a b1" and out.judged_round == 1 and out.z_hat == 1.0 and out.left_out == ()


def test_delivered_with_a_rejected_rewrite_is_not_the_last_rounds_score():
    rounds = [
        _scored(0, ["a", "b", "c"], 0.5, [Rewrite(1, "b", "b1", "fixes b", accepted=False), Rewrite(2, "c", "c1")]),
        _scored(1, ["a", "b1", "c1"], 1.0, []),
    ]
    out = dcr.delivered(rounds)
    assert out.text == "a b c1"
    assert out.judged_round is None and out.z_hat is None  # no round judged "a b c1": never 1.0
    assert "not judged" in out.score_note()
    (x,) = out.left_out
    assert (x.round, x.index, x.after, x.reason) == (0, 1, "b1", "fixes b")
    assert x.why.startswith("Rejected") and "round 1 judged it consistent" in x.why


def test_delivered_takes_the_score_of_the_round_that_judged_exactly_that_text():
    rounds = [
        _scored(0, ["a", "b"], 0.5, [Rewrite(1, "b", "b1")]),
        _scored(1, ["a", "b1"], 0.75, [Rewrite(1, "b1", "b2", accepted=False)]),
        _scored(2, ["a", "b2"], 1.0, [Rewrite(1, "b2", "b3")]),
        _scored(3, ["a", "b3"], 1.0, []),
    ]
    out = dcr.delivered(rounds)
    assert out.text == "a b1" and out.judged_round == 1 and out.z_hat == 0.75
    whys = [(x.round, x.why.split(":")[0]) for x in out.left_out]
    assert whys == [(1, "Rejected by the reviewer; round 2 judged it consistent"), (2, "Not applied")]


def test_one_reason_for_several_sentences_reads_in_the_singular(fake, client):
    fake.enqueue_json(dce((S[0], OK)))
    ev = dcr.evaluate(client, REF, S, CFG)
    assert any("returned 1 reason for 3 sentences" in n for n in ev.notes), ev.notes


def test_aligning_quotes_that_point_clearly_loads_no_scipy():
    # scipy.optimize costs a third of a second to load: a batch whose answers quote their sentences needs none.
    import subprocess
    import sys
    from pathlib import Path

    probe = (
        "import sys; from services.dcr.align import align; "
        "s = ['The council met on Monday.', 'The mayor spoke for an hour.', 'Taxes will rise.']; "
        "by, rest = align([s[2], s[0], s[1]], s, ['wrong year', 'fine', 'fine']); "
        "print(by, rest, 'scipy' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[1,", "2,", "0]", "[]", "False"], out.stdout + out.stderr
