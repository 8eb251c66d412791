"""Evaluate page: evaluate, improve, step through rounds, deep links, and the failure paths."""

from __future__ import annotations

import pytest

import services.database
from services import runs
from tests.app.helpers import CAND, EVALUATE, FIXED, REF, click, counts, seed_run, texts
from tests.support.waiting import HEALTHY_TIMEOUT


def evaluate(open_page, reference: str = REF, candidate: str = CAND):
    at = open_page(EVALUATE)
    assert not at.exception
    at.text_area(key="ev_reference").input(reference)
    at.text_area(key="ev_candidate").input(candidate)
    return click(at, "Evaluate")


def score(at) -> str:
    return next(m.value for m in at.metric if m.label == "Score Ẑ")


def verdict_html(at) -> str:
    """The markdown blocks with the sentence cards (verdict chips)."""
    return "\n".join(t for t in texts(at.markdown) if "cs-chip" in t)


def test_evaluate_shows_sentence_verdicts_and_saves_the_run(open_page, judge):
    at = evaluate(open_page)
    assert not at.exception
    assert not at.error, texts(at.error)
    assert [s.value for s in at.subheader] == ["Run #1 · Summarization"]
    assert at.query_params["run"] == "1"
    cards = verdict_html(at)
    assert cards.count('class="cs-chip consistent"') == 2
    assert cards.count('class="cs-chip inconsistent"') == 1
    # The sentence, with its number found nowhere in the article marked, and the closest article sentence.
    assert (
        '✗ inconsistent</span><b>#2</b> · z = -1<div>It was completed in <mark class="cs-novel cs-novel-number" '
        'title="number or date not in the reference">1999</mark>.</div>'
    ) in cards
    assert "article #2" in cards and "It was completed in 1889 for the World&#x27;s Fair." in cards
    assert "it says 1999" in cards  # the model's reason is shown
    assert "Offline evidence checker" not in cards, "a real model's verdicts come without the checker's by default"
    assert not any("Offline evidence checker" in m.label for m in at.metric), "it leads for the demo model only"
    assert score(at) == "0.667"  # Eq. 3: (1 - 1 + 1) / 3 = 1/3 -> (1/3 + 1) / 2
    assert next(m.value for m in at.metric if m.label == "Judged") == "3 / 3"
    assert at.code[0].value == CAND  # no rewrite yet: the final text is the candidate
    assert any(b.label == "Improve" for b in at.button)

    c = counts()
    assert (c["runs"], c["rounds"], c["sentence verdicts"], c["model calls"]) == (1, 1, 3, 1)
    detail = runs.load(services.database.get_engine(), 1)
    assert detail.run.status == "done" and detail.run.source == "app"
    assert (detail.reference, detail.candidate) == (REF, CAND)
    assert detail.run.base_url == judge.base_url and detail.run.model == "fake-model"
    assert len(judge.requests) == 1


def test_a_run_shows_answered_calls_apart_from_retries_and_what_it_cost(open_page, judge, monkeypatch):
    """A 503 the client sends again is a retry, not a call the model answered; the cost is the run's tokens at
    the prices set on Settings for its model."""
    monkeypatch.setenv("LLM_MAX_RETRIES", "2")
    monkeypatch.setenv("LLM_PRICE_INPUT_PER_MILLION", "2")
    monkeypatch.setenv("LLM_PRICE_OUTPUT_PER_MILLION", "10")
    judge.enqueue_status(503, headers={"retry-after": "0"})
    at = evaluate(open_page)
    assert not at.exception and not at.error, texts(at.error)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Answered calls (run)"] == "1"
    assert any(c.startswith("Retries: 1 request(s)") for c in texts(at.caption)), texts(at.caption)
    u = runs.load(services.database.get_engine(), 1).usage
    assert (u["calls"], u["answered"], u["retries"]) == (2, 1, 1)
    usd = (u["prompt_tokens"] * 2 + u["completion_tokens"] * 10) / 1e6
    (cost,) = [c for c in texts(at.caption) if c.startswith("Cost:")]
    assert f"{u['prompt_tokens']:,} input + {u['completion_tokens']:,} output tokens at $2 / $10 per million" in cost
    assert (f"${usd:,.2f}" if usd >= 0.005 else "under $0.01") in cost


def test_close_returns_to_an_empty_page(open_page, judge):
    at = evaluate(open_page)
    at = click(at, "Close")
    assert not at.exception
    assert not at.subheader and "run" not in at.query_params
    assert counts()["runs"] == 1, "closing does not delete"


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        ("", "The candidate is empty"),
        ("   \n\t ", "The candidate is empty"),
        ("... !!", "The candidate has no sentence to check"),
    ],
)
def test_unusable_candidate_shows_an_error_and_saves_nothing(open_page, judge, candidate, message):
    at = evaluate(open_page, candidate=candidate)
    assert not at.exception
    assert any(message in e for e in texts(at.error)), texts(at.error)
    assert not at.subheader and "run" not in at.query_params
    assert counts()["runs"] == 0
    assert judge.requests == [], "nothing is sent to the model"


def test_empty_reference_shows_an_error(open_page, judge):
    at = evaluate(open_page, reference="")
    assert not at.exception
    assert any("The reference is empty" in e for e in texts(at.error)), texts(at.error)
    assert counts()["runs"] == 0


def test_bundled_sample_fills_both_texts(open_page):
    at = open_page(EVALUATE)
    box = at.selectbox(key="ev_sample")
    at = box.select_index(1).run()
    assert not at.exception
    assert at.text_area(key="ev_reference").value.startswith("The Northfield Museum")
    assert "planetarium is free" in at.text_area(key="ev_candidate").value
    assert any("Loaded the sample" in s for s in texts(at.success))


def test_improve_adds_rounds_and_the_round_selector_steps_through_them(open_page, judge):
    at = evaluate(open_page)
    assert not at.segmented_control, "no round selector while there is only round 0"

    at = click(at, "Improve")
    assert not at.exception
    assert not at.error, texts(at.error)
    rounds = at.segmented_control[0]
    assert rounds.options == ["Round 0", "Round 1"]
    assert rounds.value == 1
    assert score(at) == "1.000"
    assert 'class="cs-chip inconsistent"' not in verdict_html(at)
    assert any("Every sentence is judged consistent in round 1" in s for s in texts(at.success))
    assert at.code[0].value == FIXED
    # The rewrites are reviewed where Improve lands (the last round), not only on the round that proposed them.
    keep = [s for s in at.segmented_control if s.key and s.key.startswith("ev_rw_")]
    assert [k.value for k in keep] == ["Accept"], "the one rewrite, accepted by default, on the landing round"
    assert any("Review the rewrites" in t for t in texts(at.markdown))
    assert any("consistent] in round 1" in c for c in texts(at.caption)), "the rewrite's verdict in the next round"
    assert not any(b.label == "Improve" for b in at.button), "nothing left to improve"
    assert len(at.get("plotly_chart")) == 1, "the rounds chart appears once there are two rounds"

    at = at.segmented_control[0].set_value(0).run()
    assert not at.exception
    assert score(at) == "0.667"
    assert verdict_html(at).count('class="cs-chip inconsistent"') == 1
    assert any("Round 0 → round 1" in t for t in texts(at.markdown))
    assert any("1889" in t and "cs-ins" in t for t in texts(at.markdown)), "the rewrite's diff is shown"
    assert at.code[0].value == FIXED, "the final text does not depend on the round shown"

    at = at.segmented_control[0].set_value(1).run()
    assert score(at) == "1.000"
    c = counts()
    assert (c["runs"], c["rounds"]) == (1, 2)


def test_evaluate_final_text_starts_a_new_run_from_it(open_page, judge):
    at = click(click(evaluate(open_page), "Improve"), "Evaluate final text")
    assert not at.exception
    assert not at.subheader and "run" not in at.query_params
    assert at.text_area(key="ev_reference").value == REF
    assert at.text_area(key="ev_candidate").value == FIXED
    at = click(at, "Evaluate")
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Run #2 · Summarization"]
    assert score(at) == "1.000"


def test_rejecting_a_rewrite_keeps_the_original_sentence_in_the_final_text(open_page, judge):
    at = click(evaluate(open_page), "Improve")
    keep = next(s for s in at.segmented_control if s.key and s.key.startswith("ev_rw_"))
    assert keep.value == "Accept"
    at = keep.set_value("Reject").run()
    assert not at.exception
    assert at.code[0].value == CAND
    # the final text is round 0's again: the caption says whose score it has
    assert any("1 rewrite(s) left out" in c and "The score of round 0" in c for c in texts(at.caption))


def test_deep_link_opens_a_saved_run(open_page, judge):
    seed_run(judge, source="cli")
    run_id = seed_run(judge, candidate="It was completed in 1999.")
    at = open_page(EVALUATE, query={"run": str(run_id)})
    assert not at.exception
    assert [s.value for s in at.subheader] == [f"Run #{run_id} · Summarization"]
    assert verdict_html(at).count('class="cs-chip inconsistent"') == 1
    assert score(at) == "0.000"

    at = open_page(EVALUATE, query={"run": "1"})
    assert [s.value for s in at.subheader] == ["Run #1 · Summarization"]
    assert any("source: cli" in c for c in texts(at.caption))


@pytest.mark.parametrize("run", ["999", "abc"])
def test_link_to_a_missing_run_warns_instead_of_failing(open_page, judge, run):
    seed_run(judge)
    at = open_page(EVALUATE, query={"run": run})
    assert not at.exception
    assert not at.subheader
    if run == "999":
        assert any("There is no run #999" in w for w in texts(at.warning)), texts(at.warning)
        assert not any("deleted" in w for w in texts(at.warning)), "a run never made was not deleted"
        assert "run" not in at.query_params, "the dead link is dropped from the URL"
    # the page is still usable for a new evaluation
    assert at.text_area(key="ev_candidate") is not None and any(b.label == "Evaluate" for b in at.button)


def test_unreachable_backend_shows_the_failure(open_page, monkeypatch, closed_url):
    monkeypatch.setenv("LLM_BASE_URL", closed_url)
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    at = evaluate(open_page)
    assert not at.exception
    errors = texts(at.error)
    assert any("The evaluator failed" in e and f"Cannot reach {closed_url}" in e for e in errors), errors
    assert score(at) == "n/a"
    assert not any(b.label == "Improve" for b in at.button), "nothing to improve after a failed evaluation"
    detail = runs.load(services.database.get_engine(), 1)
    assert detail.run.status == "failed" and "Cannot reach" in (detail.run.error or "")


def test_evidence_checker_run_calls_no_model_and_offers_no_improve(open_page):
    # No LLM_BASE_URL: the backend is the embedded model, which must not start (conftest refuses it).
    at = open_page(EVALUATE)
    at = at.radio(key="ev_method").set_value("evidence").run()
    assert any("No model is called" in c for c in texts(at.caption))
    at.text_area(key="ev_reference").input(REF)
    at.text_area(key="ev_candidate").input(CAND)
    at = click(at, "Evaluate")
    assert not at.exception
    assert not at.error, texts(at.error)
    cards = verdict_html(at)
    assert cards.count('class="cs-chip consistent"') == 2
    assert cards.count('class="cs-chip inconsistent"') == 1
    assert "&#x27;1999&#x27; does not appear in the article</div>" in cards  # the checker's finding
    assert "article #2 · " in cards and "“It was completed in 1889 for the World&#x27;s Fair.”" in cards
    assert score(at) == "0.667"
    assert next(m.value for m in at.metric if m.label == "Answered calls (run)") == "0"
    assert "Cost: nothing (no token was sent to a model)." in texts(at.caption)
    subtitle = next(c for c in texts(at.caption) if c.startswith("offline evidence checker ("))
    assert "Evidence checker (offline" not in subtitle and "converter" not in subtitle, subtitle
    assert not any("Demo judge" in w for w in texts(at.warning)), "no model is used: no demo-model banner"
    assert not any(m.value == "#### Final text" for m in at.markdown), "the checker rewrites nothing"
    assert any("Offline evidence checker" in n for n in texts(at.info))  # the evaluation's note
    assert not any(b.label == "Improve" for b in at.button)
    assert any("improving needs a model" in i for i in texts(at.info)), texts(at.info)
    assert not at.toggle, "the checker is the evaluator here: no second opinion to toggle"
    detail = runs.load(services.database.get_engine(), 1)
    assert detail.run.method == "evidence" and detail.run.model.startswith("offline evidence checker")
    linked = open_page(EVALUATE, query={"run": "1"})  # a fresh session, by its link
    assert not linked.exception
    assert not any("Demo judge" in w for w in texts(linked.warning)), "its run is open: no demo-model banner"


def test_demo_model_runs_show_the_offline_checker_beside_the_verdicts(open_page, judge):
    from sqlmodel import Session

    from db.models import Run

    run_id = seed_run(judge)
    with Session(services.database.get_engine()) as session:  # as if judged by the embedded demo model
        row = session.get(Run, run_id)
        row.backend_kind = "embedded"
        session.add(row)
        session.commit()
    at = open_page(EVALUATE, query={"run": str(run_id)})
    assert not at.exception
    # The checker's verdicts lead, the demo model's beside them, each labelled.
    labels = [m.label for m in at.metric]
    assert labels[:2] == ["Score Ẑ · Offline evidence checker (no model)", "Score Ẑ · Demo model"]
    assert at.metric[0].value == "0.667"  # the checker: 1999 is not in the article
    assert "The demo model's run in detail:" in texts(at.caption), "the tiles below the lead say whose they are"
    toggle = at.toggle(key=f"ev_checker_{run_id}")
    assert toggle.value is True, "on by default for the demo model"
    cards = verdict_html(at)
    assert cards.count("<b>Offline evidence checker</b> (no model)") == 3
    assert "✗ inconsistent — &#x27;1999&#x27; does not appear in the article" in cards
    at = toggle.set_value(False).run()
    assert "Offline evidence checker" not in verdict_html(at)


def test_an_annotator_labels_a_run_sentence_without_touching_the_models_verdict(open_page, judge):
    from services import annotations

    at = evaluate(open_page)
    eng = services.database.get_engine()
    before = [s.verdict for s in runs.load(eng, 1).rounds[0].evaluation.sentences]
    at.text_input(key="annotator_name").input("Ada").run()
    assert not at.exception
    buttons = [b for b in at.button if b.label == "Inconsistent"]
    assert len(buttons) == 3, [b.label for b in at.button]
    at = buttons[0].click().run()  # Ada says sentence 1 is inconsistent (the model said consistent)
    assert not at.exception
    labels = annotations.labels_for_run(eng, 1, 0)
    assert [(x.sentence_idx, x.label) for x in labels] == [(0, 0)]
    assert annotations.annotator_by_name(eng, "Ada") is not None
    assert [s.verdict for s in runs.load(eng, 1).rounds[0].evaluation.sentences] == before, "model unchanged"
    assert any("you corrected the model" in t for t in texts(at.markdown))


# -- the factual-inconsistency methods (Summ-NLI, Sent-NLI, QG-QA) beside DCE -------------------------
@pytest.fixture
def nli_fake(judge):
    from tests.fakes import answers_connection_check
    from tests.nli_fakes import nli_judge

    judge.responder = answers_connection_check(nli_judge())
    return judge


def test_compare_methods_shows_verdicts_side_by_side_and_saves_each_run(open_page, nli_fake):
    at = open_page(EVALUATE)
    at.text_area(key="ev_reference").input(REF)
    at.text_area(key="ev_candidate").input(CAND)
    at = click(at, "Compare methods")
    assert not at.exception
    assert not at.error, texts(at.error)
    assert "Methods compared on one document" in texts(at.subheader)
    group = at.query_params["compare"]
    found = runs.load_group(services.database.get_engine(), group)
    assert [m.method for m, _ in found] == ["dce-amc", "summ-nli", "sent-nli", "qg-qa"]
    over, sentences = at.dataframe[0].value, at.dataframe[1].value
    assert list(over["method"]) == ["DCE-AMC", "Summ-NLI", "Sent-NLI (w=1)", "QG-QA (w=1)"]
    assert set(over["verdict"]) == {"✗ inconsistent"}
    assert list(over["calls"]) == [1, 1, 3, 6]
    assert list(sentences["Sent-NLI (w=1)"]) == ["✓ consistent", "✗ inconsistent", "✓ consistent"]
    assert list(sentences["QG-QA (w=1)"]) == ["✓ consistent", "✗ inconsistent", "✓ consistent"]
    assert set(sentences["Summ-NLI"]) == {"✗ inconsistent (whole)"}
    windows = at.dataframe[2].value
    assert list(windows["judgement"]) == ["✓ consistent", "✗ inconsistent", "✓ consistent"]
    assert "1999" in windows["reasoning"][1]
    qa = at.dataframe[3].value
    assert list(qa["expected answer"]) == ["Paris", "1999", "iron"]
    assert list(qa["judgement"]) == ["✓ consistent", "✗ inconsistent", "✓ consistent"]
    assert counts()["runs"] == 4

    again = open_page(EVALUATE, query={"compare": group})  # a deep link reopens the comparison
    assert not again.exception and "Methods compared on one document" in texts(again.subheader)


def test_sent_nli_run_with_a_window_and_a_parse_failure(open_page, judge):
    from tests.fakes import answers_connection_check
    from tests.nli_fakes import nli_judge

    judge.responder = answers_connection_check(nli_judge(skip_judgement="wrought"))
    at = open_page(EVALUATE)
    at.text_area(key="ev_reference").input(REF)
    at.text_area(key="ev_candidate").input(CAND)
    at.radio(key="ev_method").set_value("sent-nli")
    at.number_input(key="ev_window").set_value(2)
    at = click(at, "Evaluate")
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Run #1 · Sent-NLI (w=2)"]
    windows = at.dataframe[2].value
    assert list(windows["window"]) == ["1–2", "3"]
    assert list(windows["judgement"]) == ["✗ inconsistent", "? no verdict"]
    assert "Judgement" in windows["parse failure"][1]
    assert any("1 of 2 unit(s) unreadable" in w for w in texts(at.warning))
    assert runs.load(services.database.get_engine(), 1).run.method == "sent-nli"


def test_a_long_document_shows_which_sentences_each_method_used(open_page, nli_fake, monkeypatch):
    monkeypatch.setenv("NLI_FIT_TOKENS", "1024")  # retrieval is for documents that do not fit: make this one not fit
    filler = " ".join(f"Visitors bought {n} postcards on a rainy afternoon near the river." for n in range(120))
    long_ref = f"{filler} {REF}"
    at = open_page(EVALUATE)
    at.text_area(key="ev_reference").input(long_ref)
    at.text_area(key="ev_candidate").input(CAND)
    at.radio(key="ev_method").set_value("summ-nli")
    at = click(at, "Evaluate")
    assert not at.exception
    used = [e for e in at.expander if e.label.startswith("Document sentences used")]
    assert len(used) == 1 and "1 unit(s) over the budget" in used[0].label
    shown = " ".join(texts(at.caption))
    assert "It was completed in 1889 for the World's Fair." in shown  # retrieved by ROUGE recall to the summary
    assert "Visitors bought 7 postcards" not in shown


def test_a_run_deleted_while_open_says_it_was_deleted(open_page, judge):
    at = evaluate(open_page)
    runs.delete(services.database.get_engine(), 1)
    at = at.run()
    assert not at.exception
    assert any("Run #1 no longer exists (it was deleted)" in w for w in texts(at.warning)), texts(at.warning)


def test_a_refused_input_leaves_no_running_status_box(open_page, judge, monkeypatch):
    monkeypatch.setenv("MAX_INPUT_CHARS", "1000")
    at = evaluate(open_page, reference="The Eiffel Tower stands in Paris. " * 100)
    assert not at.exception
    assert any("limit is 1,000" in e for e in texts(at.error)), texts(at.error)
    assert not at.status, [s.label for s in at.status]
    assert counts()["runs"] == 0


def improve_up_to(at, m: int):
    at.number_input(key="ev_m_1_1").set_value(m)
    return click(at, "Improve")


def test_improve_says_it_stopped_at_the_maximum_rounds_and_offers_more(open_page, judge):
    from tests.fakes import answers_connection_check, toy_judge

    judge.responder = answers_connection_check(toy_judge(bad="1999", fix="about 1999"))  # never fixed
    at = improve_up_to(evaluate(open_page), 1)
    assert not at.exception
    assert [s.value for s in at.segmented_control if s.key and s.key.startswith("ev_round_")] == [1]
    assert any("maximum m = 1" in i for i in texts(at.info)), texts(at.info)
    assert any(b.label == "Improve" for b in at.button), "more rounds can still be asked for"
    assert at.code[0].value.endswith("It was completed in about 1999. It is made of wrought iron.")


def test_improve_says_why_it_stopped_early_when_the_improver_changes_nothing(open_page, judge):
    from tests.fakes import answers_connection_check, toy_judge

    judge.responder = answers_connection_check(toy_judge(bad="1999", fix="1999"))
    at = improve_up_to(evaluate(open_page), 3)
    assert not at.exception
    assert not at.segmented_control or all(not s.key.startswith("ev_round_") for s in at.segmented_control)
    assert any("proposed no change in round 0" in i and "stopped early" in i for i in texts(at.info)), texts(at.info)
    assert not any(b.label == "Improve" for b in at.button)


def test_a_model_that_judges_nothing_explains_itself_and_offers_the_evidence_checker(open_page, judge):
    from tests.fakes import Reply, answers_connection_check

    judge.responder = answers_connection_check(lambda body: Reply(content="I cannot say."))
    at = evaluate(open_page)
    assert not at.exception
    assert score(at) == "n/a"
    assert any("No sentence was judged" in w and "evidence checker" in w for w in texts(at.warning)), texts(at.warning)
    assert not any(b.label == "Improve" for b in at.button)
    n_requests = len(judge.requests)
    at = click(at, "Check with the evidence checker")
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Run #2 · Summarization"]
    assert runs.load(services.database.get_engine(), 2).run.method == "evidence"
    assert score(at) != "n/a"
    assert len(judge.requests) == n_requests, "the evidence checker calls no model"


def test_an_unjudged_sentence_leaves_no_score_and_the_page_says_what_the_partial_one_rests_on(open_page, judge):
    from services.text import split_sentences
    from tests.fakes import answers_connection_check, dce

    def skip_the_last(body):
        sentences = split_sentences(CAND)
        return dce(*[(s, "This sentence is consistent with the article.") for s in sentences[:-1]])

    judge.responder = answers_connection_check(skip_the_last)
    at = evaluate(open_page)
    assert not at.exception
    n = len(split_sentences(CAND))
    assert score(at) == "n/a"
    metric = next(m for m in at.metric if m.label == "Score Ẑ")
    assert f"on {n - 1} of {n}" in str(metric.proto.delta)
    assert any(f"rests on the {n - 1} of {n} sentence(s)" in t for t in texts(at.caption))


def test_an_evidence_run_that_abstains_says_why_and_how_sure_it_is(open_page, monkeypatch):
    """A one-sentence, freely reworded summary: the checker abstains, says why on the card, gives its probability
    and its reliability diagram, and asks for a model rather than blaming the demo model."""
    from services.config import BackendConfig
    from services.dcr import evidence
    from services.dcr.config import DCRConfig

    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: False)
    reworded = "Paris's famed iron landmark went up in the late nineteenth century for a big fair."
    runs.start_run(services.database.get_engine(), BackendConfig(), REF, reworded, DCRConfig(method="evidence"))
    at = open_page(EVALUATE, query={"run": "1"})
    assert not at.exception
    cards = verdict_html(at)
    assert 'class="cs-chip unknown"' in cards and "Why undecided:</b> The summary is reworded too freely" in cards
    assert "probability supported 0." in cards
    assert any("leaves every sentence undecided" in i for i in texts(at.info)), texts(at.info)
    # Said once: the summary's own "Undecided: its one sentence is undecided" note would repeat the banner.
    assert not any(i.startswith("Summary: Undecided") for i in texts(at.info)), texts(at.info)
    assert not any("demo model is small" in w for w in texts(at.warning))
    assert next(m for m in at.metric if m.label == "Probability the summary is consistent").value.startswith("0.")
    assert any("a lean, not a verdict" in c for c in texts(at.caption))
    assert len(at.get("plotly_chart")) == 2  # the reliability per sentence and per summary


def test_sentences_where_the_judge_and_the_evidence_disagree_are_flagged_and_can_be_shown_alone(open_page, fake):
    """The judge calls every sentence consistent; the evidence finds "1999" nowhere in the article."""
    from tests.fakes import toy_judge

    fake.responder = toy_judge(bad="no such text", fix="")
    run_id = seed_run(fake)
    at = open_page(EVALUATE, query={"run": str(run_id)})
    assert not at.exception, at.exception
    cards = [m for m in texts(at.markdown) if "cs-card" in m]
    assert cards and cards[0].count("Judge and evidence disagree") == 1
    assert "the evidence finds no support: &#x27;1999&#x27; does not appear" in cards[0]
    toggle = next(t for t in at.toggle if t.label.startswith("Only the 1 sentence(s) where the judge"))
    at = toggle.set_value(True).run()
    assert not at.exception, at.exception
    cards = [m for m in texts(at.markdown) if "cs-card" in m]
    assert cards[0].count('class="cs-card') == 1 and "1999" in cards[0] and "wrought iron" not in cards[0]


def test_the_sample_choice_has_a_row_of_its_own(open_page):
    """A sample's title carries its size and errors: beside the task's labels it was cut off."""
    at = open_page(EVALUATE)
    assert not at.exception, at.exception
    assert "Load a bundled sample" not in [sb.label for col in at.columns for sb in col.selectbox]
    assert at.selectbox(key="ev_sample").label == "Load a bundled sample"


def test_an_evidence_run_that_decides_part_of_a_summary_names_the_rest_undecided_not_unjudged(open_page, monkeypatch):
    """One sentence copied from the article, one reworded freely: the checker decides the first and abstains on
    the second, which the score line calls undecided by the evidence, not a sentence that could not be judged."""
    from services.config import BackendConfig
    from services.dcr import evidence
    from services.dcr.config import DCRConfig

    monkeypatch.setattr(evidence.minilm, "embeddings_available", lambda: False)
    candidate = (
        "The Eiffel Tower stands in Paris. "
        "Paris's famed iron landmark went up in the late nineteenth century for a big fair."
    )
    runs.start_run(services.database.get_engine(), BackendConfig(), REF, candidate, DCRConfig(method="evidence"))
    at = open_page(EVALUATE, query={"run": "1"})
    assert not at.exception
    assert next(m for m in at.metric if m.label == "Judged").value == "1 / 2"
    captions = texts(at.caption)
    said = "1 sentence(s) left undecided by the evidence, so there is no score; the partial score rests on the 1 of 2 "
    assert any(f"{said}sentence(s) it decided." in c for c in captions), captions
    assert not any("could not be judged" in c for c in captions), captions


TWICE = "The Eiffel Tower is in Paris. It was completed in 1999. It opened in 1999 to visitors."


def test_the_delivered_text_is_scored_inside_the_run_after_a_rejection(open_page, judge):
    """Accept one rewrite, reject the other: the delivered text is no round's text. One more evaluation, stated
    before, scores it in the run; History and the run's report show that score."""
    from services import reports
    from services.config import BackendConfig

    eng = services.database.get_engine()
    run_id = seed_run(judge, candidate=TWICE)
    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="fake-model", timeout=HEALTHY_TIMEOUT)
    runs.improve_run(eng, backend, run_id)
    assert runs.set_rewrite(eng, run_id, 0, 2, False)  # "It opened in 1999" stays; "completed in 1889" is kept
    at = open_page(EVALUATE, query={"run": str(run_id)})
    assert not at.exception, at.exception
    assert any("**1 more model call**, saved in this run as round 2" in c for c in texts(at.caption)), texts(at.caption)
    n_before = len(judge.requests)
    at = at.button(key=f"ev_score_delivered_{run_id}").click().run()
    assert not at.exception, at.exception
    assert len(judge.requests) == n_before + 1
    d = runs.load(eng, run_id)
    out = runs.delivered(d)
    assert out.judged and out.scored_after_review and out.judged_round == 2
    assert d.rounds[-1].text == "The Eiffel Tower is in Paris. It was completed in 1889. It opened in 1999 to visitors."
    assert out.z_hat == pytest.approx(((1 + 1 - 1) / 3 + 1) / 2)  # Eq. 3: two consistent, one not
    assert d.run.final_score == pytest.approx(out.z_hat)
    assert not any(b.key == f"ev_score_delivered_{run_id}" for b in at.button), "scored: nothing more to offer"

    hist = open_page("pages/2_History.py", query={"run": str(run_id)})
    assert not hist.exception, hist.exception
    assert {m.label: m.value for m in hist.metric}["Score Ẑ of the delivered text"] == f"{out.z_hat:.3f}"
    rep = reports.build(eng, "run", run_id)
    head = next(h for h in rep.headlines if h.label.startswith("Score Ẑ of the delivered text"))
    assert head.label == "Score Ẑ of the delivered text" and head.value == pytest.approx(out.z_hat)
    assert "after the review" in head.note
