"""The ConsEval page: set up a study, run it (inline in tests), read the results, manage human raters."""

from __future__ import annotations

import re

import services.database
from services import conseval as ce
from tests.app.helpers import click, fragment_intervals, texts
from tests.support.conseval import scorer, seeded_study

CONSEVAL = "pages/8_ConsEval.py"


def small_setup(at):
    at.multiselect(key="ce_crit").set_value(["Helpfulness"])
    at.multiselect(key="ce_gran").set_value(["none", "short"])
    at.multiselect(key="ce_scales").set_value(["5-P", "5-P Likert"])
    at.number_input(key="ce_n").set_value(2)
    at.number_input(key="ce_limit").set_value(4)
    at.number_input(key="ce_boot").set_value(50)
    return at.run()


def test_the_page_renders_with_no_study(open_page):
    at = open_page(CONSEVAL)
    assert not at.exception
    assert at.title[0].value == "ConsEval"
    assert any(b.label == "Start study" for b in at.button)
    assert any("answers** to ask" in i for i in texts(at.info))


def test_a_study_starts_runs_in_the_worker_and_shows_its_results(open_page, judge):
    judge.responder = scorer(noisy=True)
    at = small_setup(open_page(CONSEVAL))
    assert not at.exception
    assert any("4 items × 2 definition(s) × 2 scales × 3 answers" in i for i in texts(at.info))
    at = click(at, "Start study")  # the worker's task runs inline in tests
    assert not at.exception, at.exception
    st = ce.list_studies(services.database.get_engine())[0]
    assert st.status == "done" and st.n_done == 4 * 2 * 2 * 3
    assert len(judge.requests) == st.n_done
    assert at.query_params["study"] in (str(st.id), [str(st.id)])
    assert any("Study 1 started" in s for s in texts(at.success))
    assert {m.label: m.value for m in at.metric}["Answers"] == "48"
    frames = [df.value for df in at.dataframe]
    sc = next(f for f in frames if "α or r [95% CI]" in f.columns and "Self-consistency" in set(f["measure"]))
    assert set(sc["scale(s)"]) == {"5-P", "5-P Likert"} and (sc["n"] == 4).all()
    assert all(v == "undefined" or "[" in v for v in sc["α or r [95% CI]"])


def test_an_impossible_setup_is_explained_and_cannot_start(open_page):
    at = open_page(CONSEVAL)
    at.multiselect(key="ce_methods").set_value(["base", "dicl_r"])
    at = at.run()
    assert not at.exception
    assert any("needs an oracle" in w for w in texts(at.warning))
    assert next(b for b in at.button if b.label == "Start study").disabled
    at.multiselect(key="ce_methods").set_value(["base"])
    at.multiselect(key="ce_crit").set_value([])
    at = at.run()
    assert any("at least one criterion" in w for w in texts(at.warning))


def test_a_deep_link_shows_a_study_and_raters_are_managed(open_page, judge):
    sid = seeded_study(judge)
    at = open_page(CONSEVAL, query={"study": str(sid)})
    assert not at.exception
    assert at.session_state.ce_selected == sid
    assert any("Inter-consistency" in t.label for t in at.tabs)
    at.text_input(key="ce_rater_name").input("Ada")
    at = click(at, "Add rater")
    assert not at.exception
    eng = services.database.get_engine()
    ada = ce.list_raters(eng, sid)[0]
    assert any(f"Rate?token={ada.token}" in m.value for m in at.markdown)
    at.text_input(key="ce_rater_name").input("Ada")
    at = click(at, "Add rater")
    assert any("exists already" in e for e in texts(at.error))
    first = int(ce.items_frame(eng, sid).id[0])
    ce.save_human_rating(eng, ada.id, first, "5-P", 3)
    at = at.run()
    who = next(df.value for df in at.dataframe if "Ada" in df.value.columns)
    assert who["Ada"].tolist()[:2] == ["1/3", "–"]
    at = at.button(key=f"ce_revoke_{ada.id}").click().run()
    assert not at.exception
    assert ce.rater_by_token(eng, ada.token) is None
    assert not any(f"token={ada.token}" in m.value for m in at.markdown)


def test_deleting_a_study(open_page, judge):
    sid = seeded_study(judge, n_items=2)
    at = open_page(CONSEVAL, query={"study": str(sid)})
    at = click(at, "Delete study")
    assert not at.exception
    assert ce.get_study(services.database.get_engine(), sid) is None
    assert any(f"Study {sid} deleted" in s for s in texts(at.success))


def test_a_link_to_a_missing_study_says_so(open_page, judge):
    sid = seeded_study(judge, n_items=2)
    at = open_page(CONSEVAL, query={"study": "99"})
    assert not at.exception
    assert any("There is no study #99" in w and f"showing study #{sid}" in w for w in texts(at.warning)), texts(
        at.warning
    )
    assert at.query_params["study"] == str(sid)
    at = at.run()
    assert not any("There is no study" in w for w in texts(at.warning)), "said once, not on every rerun"


def test_a_long_note_is_printed_in_full_under_the_table(open_page, judge):
    sid = seeded_study(judge, n_items=2)
    at = open_page(CONSEVAL, query={"study": str(sid)})
    assert not at.exception
    sc = next(df.value for df in at.dataframe if "note" in df.value.columns)
    cells = [n for n in sc["note"] if n]
    assert cells and all(re.fullmatch(r"note \d+", n) for n in cells), cells
    captions = texts(at.caption)
    results = ce.results_frame(ce.get_study(services.database.get_engine(), sid).results)
    full = {n for n in results["note"].dropna() if n}
    # Each numbered note in the table has its caption, and the caption holds the whole note, not a cut copy.
    for label in set(cells):
        k = label.split()[1]
        caption = next(c for c in captions if c.startswith(f"Note {k}: "))
        assert caption.removeprefix(f"Note {k}: ") in full, caption


def test_the_methods_choice_is_wide_enough_for_its_chips(open_page):
    """Its column is twice the width of the number fields beside it, so "Base prompt" is not cut off."""
    at = open_page(CONSEVAL)
    assert not at.exception, at.exception
    (methods_col,) = [c for c in at.columns if [m.label for m in c.multiselect] == ["Methods"]]
    (samples_col,) = [c for c in at.columns if [n.label for n in c.number_input] == ["Samples n"]]
    assert methods_col.weight == 2 * samples_col.weight


def test_a_finished_study_is_not_polled_and_a_waiting_one_is(open_page, judge, monkeypatch):
    """Polling a finished study redrew its page every 2 s for as long as it was open, so it never settled."""
    seen = fragment_intervals(monkeypatch)
    done = seeded_study(judge, n_items=2)
    at = open_page(CONSEVAL, query={"study": str(done)})
    assert not at.exception
    assert seen["progress"] is None, seen
    eng = services.database.get_engine()
    waiting = ce.create_study(
        eng, ce.StudyConfig.from_dict(ce.get_study(eng, done).config), ce.sample_items(["Conciseness"], 2)
    )
    seen.clear()
    at = open_page(CONSEVAL, query={"study": str(waiting)})
    assert not at.exception
    assert ce.get_study(eng, waiting).status == "queued"
    assert seen["progress"] == 2.0, seen


def test_only_the_open_results_tab_is_drawn(open_page, judge):
    """The other tabs run when opened: one figure and its tables for the browser, not five and a dozen."""
    sid = seeded_study(judge, n_items=2)
    at = open_page(CONSEVAL, query={"study": str(sid)})
    assert not at.exception
    assert [t.label for t in at.tabs][:6] == [
        "Self-consistency",
        "Inter-consistency",
        "Model × method",
        "Radar",
        "Humans",
        "Answers",
    ]
    keys = {w.key for w in at.selectbox} | {w.key for w in at.toggle}
    assert "ce_sc_model" in keys
    assert not keys & {"ce_ic_model", "ce_mx_crit", "ce_only_missing"}, keys
    at.session_state["ce_tab"] = "Answers"
    at = at.run()
    assert not at.exception
    assert "ce_only_missing" in {w.key for w in at.toggle}
    assert "ce_sc_model" not in {w.key for w in at.selectbox}
    assert any("answers," in c and "missing" in c for c in texts(at.caption))
