"""Method runs and comparisons on one document: saved runs, per-sentence verdicts, parse failures, usage."""

from __future__ import annotations

import pytest

from services import runs
from services.text import InputError
from tests.app.helpers import CAND, REF
from tests.nli_fakes import nli_judge


def test_compare_runs_each_method_as_its_own_grouped_run(fake, backend, engine):
    fake.responder = nli_judge()
    group = runs.compare_methods(engine, backend, REF, CAND)
    found = runs.load_group(engine, group)
    assert [m.method for m, _ in found] == ["dce-amc", "summ-nli", "sent-nli", "qg-qa"]
    assert all(m.label == "inconsistent" for m, _ in found), "every method catches 1999"
    by = {m.method: (m, d) for m, d in found}
    sent, _ = by["sent-nli"]
    assert [s["verdict"] for s in sent.detail["sentences"]] == ["consistent", "inconsistent", "consistent"]
    assert [w["label"] for w in sent.detail["windows"]] == ["consistent", "inconsistent", "consistent"]
    assert sent.score == pytest.approx(2 / 3) and sent.window == 1
    qa, qa_run = by["qg-qa"]
    assert [(p["expected_answer"], p["judgement"]) for p in qa.detail["pairs"]] == [
        ("Paris", "consistent"),
        ("1999", "inconsistent"),
        ("iron", "consistent"),
    ]
    assert qa_run.usage["calls"] == 6  # one QG and one QA per sentence
    assert by["summ-nli"][1].usage["calls"] == 1 and by["sent-nli"][1].usage["calls"] == 3
    dce, dce_run = by["dce-amc"]
    assert [s["verdict"] for s in dce.detail["sentences"]] == ["consistent", "inconsistent", "consistent"]
    assert dce_run.run.method == "dce-amc" and dce_run.rounds
    listed = {r.id: r.method for r, _ in runs.list_all(engine)}
    assert sorted(listed.values()) == ["dce-amc", "qg-qa", "sent-nli", "summ-nli"]


def test_window_groups_sentences_and_each_window_is_judged_once(fake, backend, engine):
    fake.responder = nli_judge()
    run_id = runs.start_method_run(engine, backend, REF, CAND, "sent-nli", window=2)
    m = runs.load_method(engine, run_id)
    assert [(w["start"], w["end"], w["label"]) for w in m.detail["windows"]] == [
        (0, 2, "inconsistent"),
        (2, 3, "consistent"),
    ]
    assert [s["verdict"] for s in m.detail["sentences"]] == ["inconsistent", "inconsistent", "consistent"]
    assert len(fake.requests) == 2 and m.label == "inconsistent"
    assert runs.load(engine, run_id).run.prompt_versions["window"] == "2"


def test_a_missing_judgement_is_a_visible_failure_not_a_verdict(fake, backend, engine):
    fake.responder = nli_judge(skip_judgement="wrought")
    run_id = runs.start_method_run(engine, backend, REF, CAND, "sent-nli")
    m = runs.load_method(engine, run_id)
    last = m.detail["windows"][2]
    assert last["label"] is None and "Judgement" in last["error"]
    assert m.detail["sentences"][2]["verdict"] == "unknown"
    assert m.n_failed == 1 and m.label == "inconsistent"  # the readable windows still decide (Eq. 2)
    run = runs.load(engine, run_id).run
    assert run.status == "done" and "1 of 3 unit(s) unreadable" in run.error


def test_all_windows_unreadable_fails_the_run_with_the_reason(fake, backend, engine):
    fake.responder = nli_judge(skip_judgement=" ")
    run_id = runs.start_method_run(engine, backend, REF, CAND, "sent-nli")
    run = runs.load(engine, run_id).run
    assert run.status == "failed" and "Judgement" in run.error
    assert runs.load_method(engine, run_id).label is None


@pytest.mark.parametrize(("method", "window"), [("nope", 1), ("sent-nli", 0)])
def test_bad_method_or_window_is_refused(backend, engine, method, window):
    with pytest.raises(InputError):
        runs.start_method_run(engine, backend, REF, CAND, method, window=window)


def test_deleting_a_run_deletes_its_method_result(fake, backend, engine):
    fake.responder = nli_judge()
    run_id = runs.start_method_run(engine, backend, REF, CAND, "summ-nli")
    assert runs.delete(engine, run_id)
    assert runs.load_method(engine, run_id) is None


def test_sentences_split_in_many_threads_at_once_stay_their_own():
    """Batch workers and the CLI split texts concurrently; no thread may get another's sentences."""
    from concurrent.futures import ThreadPoolExecutor

    from services.text import split_sentences

    texts = [f"Item {i}. The tower is in Paris. It was completed in {1800 + i}." for i in range(300)]
    with ThreadPoolExecutor(8) as pool:
        out = list(pool.map(split_sentences, texts))
    assert all(
        o == [f"Item {i}.", "The tower is in Paris.", f"It was completed in {1800 + i}."] for i, o in enumerate(out)
    )
