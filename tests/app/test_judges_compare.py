"""Judges page, "Compare systems": the sentences, the forest plot and the tables for a dataset with systems, its
report's download, Label next drawing per system; a dataset without systems says how to get them."""

from __future__ import annotations

from services.database import get_engine
from tests.app.helpers import texts
from tests.support.judges import add_judge, labelled_dataset
from tests.support.systems import systems_dataset

JUDGES = "pages/13_Judges.py"


def test_compare_systems_shows_what_each_difference_shows(open_page):
    eng = get_engine()
    ds, batch = systems_dataset(eng, {"old": 0.5, "new": 0.95, "same": 0.5}, n_refs=100, n_labelled=50)
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    assert at.selectbox(key="jd_cmp_judge").value == batch
    # live by default: valid at every look, with when to stop
    assert at.radio(key="jd_cmp_mode").value == "live"
    lines = texts(at.markdown)
    assert any(t.startswith("- You can stop labelling old and new: new is more consistent") for t in lines), lines
    assert any(t.startswith("Live reading: every interval is a confidence sequence") for t in texts(at.caption))
    assert any(
        t.startswith("About ") and "labels a system to tell a 5-point difference" in t for t in texts(at.caption)
    )
    # Label next per system proposes nothing of a system whose pairs are all decided
    at.number_input(key="jd_k").set_value(3)
    at.toggle(key="jd_per_system").set_value(True)
    at.run()
    assert not at.exception, at.exception
    done = [t for t in texts(at.caption) if t.startswith("Not proposed any more:")]
    proposal = next(d.value for d in at.dataframe if "priority" in d.value.columns)
    assert done and "new" in done[0] and "new" not in set(proposal["system"]), (done, proposal)
    at.toggle(key="jd_per_system").set_value(False)

    # planned: the fixed-sample intervals, read once at the budget
    at.radio(key="jd_cmp_mode").set_value("planned").run()
    at.number_input(key="jd_cmp_plan").set_value(50).run()
    assert not at.exception, at.exception
    lines = texts(at.markdown)
    assert any(t.startswith("- new is more consistent than old by") for t in lines), lines
    assert any("No difference shown between old and same" in t for t in lines), lines
    assert any("Bonferroni over 3 pair(s)" in t for t in texts(at.caption))
    tables = [t.value for t in at.table]
    systems = next(t for t in tables if "PPI" in t.columns and "system" in t.columns)
    assert list(systems["system"]) == ["old", "new", "same"] and list(systems["labelled"]) == [50, 50, 50]
    diffs = next(t for t in tables if "a − b" in t.columns)
    assert list(diffs["paired on"]) == ["100 references"] * 3
    (build,) = [b for b in at.button if b.key and b.key.startswith("jd_cmp_report_") and b.label == "Build report"]
    build.click().run()  # the report is built when asked for, then downloaded
    assert not at.exception, at.exception
    assert any(b.proto.label == "Download report" for b in at.get("download_button"))

    # Label next, per system: 3 items from each
    at.number_input(key="jd_k").set_value(3)
    at.toggle(key="jd_per_system").set_value(True)
    at.run()
    assert not at.exception, at.exception
    proposal = next(d.value for d in at.dataframe if "priority" in d.value.columns)
    assert sorted(proposal["system"].value_counts().to_dict().items()) == [("new", 3), ("old", 3), ("same", 3)]


def test_a_dataset_without_systems_says_how_to_get_them(open_page):
    eng = get_engine()
    ds = labelled_dataset(eng, 30)
    add_judge(eng, ds, [0.5] * 30)
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    assert any("choose the **System** column" in t for t in texts(at.info))


def test_a_rate_that_rests_on_the_labels_alone_says_so_on_the_page_and_in_its_shared_report(open_page):
    """With 12 labels a system has fewer than 15 of each class: its PPI column is its labels' interval, named
    "labels only: fewer than 15 of each class" in the section's table, the report's headline and its share link."""
    from services import reports
    from services.judges import systems

    eng = get_engine()
    ds, batch = systems_dataset(eng, {"old": 0.5, "new": 0.95}, n_refs=100, n_labelled=12)
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    systems_table = next(t.value for t in at.table if "PPI" in t.value.columns and "system" in t.value.columns)
    assert list(systems_table["PPI column rests on"]) == ["labels only: fewer than 15 of each class"] * 2
    share = reports.new_share(eng, "compare", systems.save_comparison(eng, ds, batch, alpha=0.05))
    viewer = open_page("pages/12_Reports.py", query={"share": share.token})
    assert not viewer.exception, viewer.exception
    shown = " ".join(texts(viewer.markdown) + texts(viewer.caption) + [str(m.value) for m in viewer.metric])
    shown += " ".join(str(m.label) for m in viewer.metric)
    assert "old: consistency rate, labels only" in shown, shown
    assert "old's rate rests on its labels only (fewer than 15 of each class)" in shown
    table = next(t.value for t in viewer.table if "PPI basis" in t.value.columns)
    assert list(table["PPI basis"]) == ["labels only: fewer than 15 of each class"] * 2
    assert "old: PPI consistency rate" not in shown


def test_the_compare_judge_is_the_one_that_judged_the_most_items_and_says_so(open_page):
    """A judge that failed on 90% of the items (the newest, so listed first) is not the default: the judge with
    the most judged items is, and the page says why."""
    from tests.support.judges import add_judge

    eng = get_engine()
    ds, full = systems_dataset(eng, {"old": 0.5, "new": 0.9}, n_refs=60, n_labelled=30)
    sparse = add_judge(eng, ds, [0.9 if i % 10 == 0 else None for i in range(120)], model="sparse")
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    assert at.multiselect(key="jd_judges").value[0] == sparse  # listed first
    assert at.selectbox(key="jd_cmp_judge").value == full
    assert any("by default: it judged the most items (120 of 120)" in c and ": 12" in c for c in texts(at.caption))
    at.selectbox(key="jd_cmp_judge").set_value(sparse).run()  # a choice made is kept
    assert not at.exception, at.exception
    assert at.selectbox(key="jd_cmp_judge").value == sparse
