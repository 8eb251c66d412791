"""The DHP page: perturbation sets with diffs, benchmark runs, results side by side, the survey organiser view."""

from __future__ import annotations

import re

import services.database
from db.engine import get_session
from services import dhp
from services.config import BackendConfig
from services.dhp import survey as sv
from services.dhp.benchmark import process_run
from services.dhp.catalogue import TASKS
from services.dhp.perturb import Item
from tests.app.helpers import click, fragment_intervals
from tests.fakes import last_user
from tests.support.dhp import rated_text

DHP = "pages/10_DHP.py"
EXTRA = [
    Item(f"x{i}", f"The council met on day {i}. It approved {40 + i} million pounds. Work starts in week {i}.", "a")
    for i in range(8)
]
ORIGINALS = {it.text for it in dhp.sample_items("summarization")} | {it.text for it in EXTRA}


def dhp_judge(body: dict) -> dict:
    """Perturbs by appending a fictional sentence; rates originals 5 and anything else 2 (a discerning judge)."""
    content = last_user(body)
    if content.startswith("You will be given one"):
        text = re.search(r"Summary:\n\n(.*)\n\nRevised Summary:", content, re.S).group(1)
        return text + " Zorblax of Quenthia agreed."
    if content.startswith("Reply with the word OK"):
        return {"ok": True}
    text = rated_text(content)  # Appendix E's prompt: the text, then the "Evaluation Score" line
    return "5" if text in ORIGINALS else "2"


def page_text(at) -> str:
    parts = [str(e.value) for e in (*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.success)]
    parts += [str(e.proto.body) for e in at.get("html")]
    return "\n".join(parts)


def make_set(perts: list[str]) -> int:
    """Eight items: enough for a one-sided Wilcoxon p below 0.05 (the smallest is 1/2^8)."""
    with get_session(services.database.get_engine()) as s:
        return dhp.create_set(TASKS["summarization"], EXTRA, name="seeded", seed=0, session=s, only=perts)


def test_the_page_renders_with_no_set(open_page):
    at = open_page(DHP)
    assert not at.exception
    assert at.title[0].value == "DHP: discernment of LLM evaluators"
    assert at.selectbox(key="dhp_task").value == "summarization"
    for section in ("Benchmark", "Results", "Expert survey", "Tasks"):
        at = open_page(DHP, query={"view": section})
        assert not at.exception, section
    assert "No perturbation set" in page_text(open_page(DHP, query={"view": "Results"}))


def test_making_a_set_with_llm_perturbations_and_viewing_a_diff(open_page, judge):
    judge.responder = dhp_judge
    at = open_page(DHP)
    at.multiselect(key="dhp_perts").set_value(["typo:minor", "fictional_entities:minor"]).run()
    assert at.toggle(key="dhp_use_llm").value is True
    at = click(at, "Make the set")
    assert not at.exception
    with get_session(services.database.get_engine()) as s:
        (made,) = dhp.list_sets(session=s)
        texts = dhp.texts_frame(made.id, session=s)
    assert made.status == "ready" and len(texts) == len(dhp.sample_items("summarization")) * 3
    fne = texts[texts["perturbation"] == "fictional_entities:minor"]
    assert fne["text"].str.endswith("Zorblax of Quenthia agreed.").all()
    # The viewer shows the perturbed text as a diff of its original.
    at.selectbox(key="dhp_view_pert").set_value("fictional_entities:minor").run()
    html = page_text(at)
    assert '<ins class="cs-ins">' in html and "Quenthia" in html


def test_a_benchmark_run_on_two_models_gives_results_side_by_side(open_page, judge):
    judge.responder = dhp_judge
    sid = make_set(["typo:minor", "reorder:major"])
    at = open_page(DHP, query={"view": "Benchmark"})
    at.text_input(key="dhp_models").input("judge-a, judge-b")
    at.number_input(key="dhp_repeats").set_value(1)
    at = click(at, "Run")
    assert not at.exception
    with get_session(services.database.get_engine()) as s:
        runs = dhp.list_runs(session=s, set_id=sid)
    assert sorted(r.model for r in runs) == ["judge-a", "judge-b"] and all(r.status == "done" for r in runs)
    assert "status **done**" in page_text(at)
    at = open_page(DHP, query={"view": "Results"})
    assert not at.exception
    assert [m.label for m in at.metric] == ["judge-b: D_avg", "judge-a: D_avg"]
    # no word-level perturbation in the set: D_avg is left empty, with the reason; D_min and D_wilson stand
    assert all(m.value == "—" for m in at.metric) and "not comparable" in page_text(at)
    lows = [float(x) for x in re.findall(r"D_min ([\d.]+)", page_text(at))]
    wilsons = [float(x) for x in re.findall(r"D_wilson_min ([\d.]+)", page_text(at))]
    # D is the paper's 1 / sum_j (1/p_j); Wilson's HMP (M times larger p, so a smaller D) is the labelled extra
    assert len(lows) == len(wilsons) == 2 and all(d > w > 1 for w, d in zip(wilsons, lows, strict=True))
    assert "p = 1 / Σⱼ 1/pⱼ (the paper's" in page_text(at) and "an extra that is not the paper's" in page_text(at)


def test_the_organiser_creates_a_survey_invites_sees_answers_and_closes_it(open_page):
    at = open_page(DHP, query={"view": "Expert survey"})
    at = click(at, "Create survey")
    assert not at.exception
    with get_session(services.database.get_engine()) as s:
        (survey,) = sv.list_surveys(session=s)
    at.text_input(key=f"dhp_inv_name_{survey.id}").input("Ada")
    at = click(at, "Invite")
    assert not at.exception
    with get_session(services.database.get_engine()) as s:
        (ada,) = sv.experts(survey.id, session=s)
        token = sv.expert_token(ada.id, session=s)
        sv.vote(ada.id, "typo", "Fluency", session=s)
    assert any(f"Survey?token={token}" in c.value for c in at.code)
    at = open_page(DHP, query={"view": "Expert survey"})
    assert "answered 1/6" in page_text(at)
    assert at.dataframe[0].value.loc["Ada", "Random Typos"] == "Fluency"
    at = click(at, "Revoke link")
    with get_session(services.database.get_engine()) as s:
        assert sv.by_token(token, session=s).expert is None
    at = click(at, "Close the survey")
    assert not at.exception
    with get_session(services.database.get_engine()) as s:
        assert sv.get_survey(survey.id, session=s).status == "closed"
    assert "its weights feed D_EW" in page_text(at)


def test_a_user_task_is_added_with_its_metrics(open_page):
    at = open_page(DHP, query={"view": "Tasks"})
    at.text_input(key="dhp_t_key").input("dialogue")
    at.text_input(key="dhp_t_name").input("Dialogue")
    at = click(at, "Add task")
    assert not at.exception and any("at least one metric" in e.value for e in at.error)


def test_a_closed_survey_feeds_d_ew_in_the_results(open_page, judge):
    judge.responder = dhp_judge
    sid = make_set(["typo:minor"])
    eng = services.database.get_engine()
    with get_session(eng) as s:
        rid = dhp.create_run(
            sid,
            dhp.backend_from_params({"kind": "openai", "base_url": judge.base_url, "model": "judge-a"}),
            repeats=1,
            session=s,
        )
    dhp.process_run(eng, rid)
    with get_session(eng) as s:
        survey = sv.create_survey(TASKS["summarization"], title="weights", session=s)
        ada = sv.invite(survey, "Ada", session=s).id
    with get_session(eng) as s:
        sv.vote(ada, "typo", "Fluency", session=s)
    at = open_page(DHP, query={"view": "Results"})
    assert "D_EW_avg —" in page_text(at)  # an open survey does not feed D_EW
    with get_session(eng) as s:
        sv.close(survey, session=s)
    at = open_page(DHP, query={"view": "Results"})
    assert not at.exception
    assert at.selectbox(key="dhp_res_survey").value == survey
    with get_session(eng) as s:
        expected = dhp.run_result(rid, session=s, weights={"typo": {"Fluency": 1}})
    # one level only: D_EW_avg is not comparable with the paper's and left empty; D_EW_min comes from the survey
    assert expected.d_ew_avg is None and f"D_EW_min {expected.d_ew_min:.2f}" in page_text(at)


def test_the_benchmark_shows_its_size_and_does_not_start_the_same_run_twice(open_page, judge):
    judge.responder = dhp_judge
    sid = make_set(["typo:minor"])  # 8 originals + 8 typo texts
    at = open_page(DHP, query={"view": "Benchmark"})
    at.text_input(key="dhp_models").input("judge-a")
    at = at.number_input(key="dhp_repeats").set_value(2).run()
    assert "16 texts × 4 metrics × r = 2 × 1 model(s) = **128 model calls**" in page_text(at)
    at = click(at, "Run")
    at = click(at, "Run")  # the same settings again, as a second click or an Enter would
    assert not at.exception
    with get_session(services.database.get_engine()) as s:
        runs = dhp.list_runs(session=s, set_id=sid)
    assert len(runs) == 1
    assert f"run #{runs[0].id} (judge-a, r = 2, seed 0) is done with the same settings" in page_text(at)
    at.number_input(key="dhp_run_seed").set_value(1)
    at = click(at, "Run")
    with get_session(services.database.get_engine()) as s:
        assert len(dhp.list_runs(session=s, set_id=sid)) == 2, "another seed is another run"


def test_results_leave_out_cancelled_runs_and_explain_tied_tests(open_page, judge):
    from sqlalchemy import update

    from db.models import DhpRun

    judge.responder = lambda body: (
        {"ok": True} if last_user(body).startswith("Reply with the word OK") else {"score": 3}
    )  # the same score for every text: every pair is tied
    sid = make_set(["typo:minor"])
    eng = services.database.get_engine()
    backend = dhp.backend_from_params({"kind": "openai", "base_url": judge.base_url, "model": "judge-a"})
    with get_session(eng) as s:
        done = dhp.create_run(sid, backend, repeats=1, session=s)
        stopped = dhp.create_run(sid, backend.with_changes(model="judge-b"), repeats=1, session=s)
    dhp.process_run(eng, done)
    dhp.process_run(eng, stopped)
    with get_session(eng) as s:
        s.execute(update(DhpRun).where(DhpRun.id == stopped).values(status="cancelled", n_done=20))
    at = open_page(DHP, query={"view": "Results"})
    assert not at.exception
    picker = at.multiselect(key="dhp_res_runs")
    assert picker.value == [done], "the cancelled run is not in the results unless picked"
    assert any("cancelled (partial: 20 of 64 scores)" in o for o in picker.options)
    text = page_text(at)
    assert "In 4 of 4 tests the evaluator gave every original and its perturbed text the same score" in text
    assert "only 0 untied pairs" not in text
    # No closed survey: no D_EW choice (its chart would be empty), and no D_EW bars in the overall chart.
    assert at.radio(key="dhp_res_measure").options == ["D", "D_wilson"]
    assert "D_EW needs the expert weights of a closed survey" in text
    overall = at.get("plotly_chart")[0].proto.spec
    assert "D_EW" not in overall and "D EW" not in overall


def test_the_survey_status_is_shown_beside_the_selector_not_in_it(open_page):
    # A browser keeps a selectbox's label as it was drawn: a status in it went stale after closing.
    at = open_page(DHP, query={"view": "Expert survey"})
    at = click(at, "Create survey")
    assert not any("open" in o for o in at.selectbox(key="dhp_survey").options)
    assert "**Status: open**" in page_text(at)
    at = click(at, "Close the survey")
    assert not at.exception
    assert "**Status: closed**" in page_text(at)


def test_the_demo_model_starts_with_a_small_benchmark_and_its_time(open_page):
    # No LLM_BASE_URL: the backend is the embedded demo model (never started by this page).
    at = open_page(DHP)
    chosen = at.multiselect(key="dhp_perts").value
    task = TASKS["summarization"]
    assert 0 < len(chosen) < len(task.perturbations)
    assert all(task.perturbation(k).spec.method == "rule" for k in chosen)
    assert len({task.perturbation(k).level for k in chosen}) == len(chosen), "one per level"
    make_set(["typo:minor"])
    at = open_page(DHP, query={"view": "Benchmark"})
    assert at.number_input(key="dhp_repeats").value == 1
    assert re.search(r"= \*\*64 model calls\*\*, about \d+ min with the demo model", page_text(at)), page_text(at)


def test_a_link_to_a_view_opens_it_in_a_session_that_has_been_here(open_page):
    """The Survey page links to DHP → Expert survey; a session that had opened DHP before kept its old view."""
    at = open_page(DHP)
    at.segmented_control(key="dhp_view").set_value("Tasks").run()
    assert at.session_state["dhp_view"] == "Tasks"
    at.query_params["view"] = "Expert survey"  # the link, followed in the same session
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["dhp_view"] == "Expert survey"
    at.segmented_control(key="dhp_view").set_value("Texts").run()  # the picker still works under the link
    assert at.session_state["dhp_view"] == "Texts"


def test_finished_sets_and_runs_are_not_polled_and_work_under_way_is(open_page, judge, monkeypatch):
    """A poll every 2 s of a finished set or run kept the page redrawing for as long as it was open."""
    judge.responder = dhp_judge
    seen = fragment_intervals(monkeypatch)
    sid = make_set(["typo:minor"])
    eng = services.database.get_engine()
    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="judge-a", max_retries=0)
    (rid,), _ = dhp.start_runs(eng, sid, [backend], repeats=1, seed=0)
    assert process_run(eng, rid, backend=backend) == "done"
    for view, fragment in (("Texts", "_set_status"), ("Benchmark", "_runs_live")):
        seen.clear()
        at = open_page(DHP, query={"view": view})
        assert not at.exception, at.exception
        assert fragment in seen and seen[fragment] is None, (view, seen)
    dhp.start_runs(eng, sid, [backend.with_changes(model="judge-b")], repeats=1, seed=0)  # queued, not run
    seen.clear()
    at = open_page(DHP, query={"view": "Benchmark"})
    assert not at.exception, at.exception
    assert seen["_runs_live"] == 2.0, seen
    with get_session(eng) as s:
        only = ["fictional_entities:minor"]
        llm = dhp.create_set(TASKS["summarization"], EXTRA, name="llm", seed=0, session=s, backend=backend, only=only)
    assert dhp.find_set(eng, llm).status == "generating"
    seen.clear()
    at = open_page(DHP, query={"view": "Texts"})
    at.selectbox(key="dhp_set").set_value(llm).run()
    assert not at.exception, at.exception
    assert seen["_set_status"] == 2.0, seen
    # its texts not written yet are said to be so (they read NaN from the frame: no traceback)
    assert any("No perturbed text: not made yet" in w.value for w in at.warning), [w.value for w in at.warning]


def test_results_are_worked_out_once_per_change_of_the_runs(open_page, judge, monkeypatch):
    """Each D rests on Wilcoxon permutation tests: kept until the run's scores change, not redone per rerun."""
    judge.responder = dhp_judge
    sid = make_set(["typo:minor"])
    eng = services.database.get_engine()
    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="judge-a", max_retries=0)
    (rid,), _ = dhp.start_runs(eng, sid, [backend], repeats=1, seed=0)
    assert process_run(eng, rid, backend=backend) == "done"
    calls: list[int] = []
    real = dhp.discernment_of
    monkeypatch.setattr(dhp, "discernment_of", lambda e, run_id, w=None: calls.append(run_id) or real(e, run_id, w))
    at = open_page(DHP, query={"view": "Results"})
    assert not at.exception, at.exception
    shown = [m.value for m in at.metric]
    assert calls == [rid] and shown
    at = open_page(DHP, query={"view": "Results"})  # a new session, the same run
    assert not at.exception, at.exception
    assert calls == [rid] and [m.value for m in at.metric] == shown
