"""Judges page: the empty state, two judges side by side with the plain-words interval, Label next sending
items to an annotator's queue, and the card updating once they are labelled."""

from __future__ import annotations

import numpy as np

from services import annotations, judges
from services.annotations import Target
from services.database import get_engine
from tests.app.helpers import texts
from tests.support.judges import add_judge, labelled_dataset, truth_of

JUDGES = "pages/13_Judges.py"


def test_without_batches_the_page_says_where_to_start(open_page):
    at = open_page(JUDGES)
    assert not at.exception
    assert any("Datasets" in t for t in texts(at.info))
    labelled_dataset(get_engine(), 5)
    at.run()
    assert not at.exception
    assert any("No judge on this dataset yet" in t for t in texts(at.info))


def _setup():
    eng = get_engine()
    ds = labelled_dataset(eng, 60, n_labelled=0)
    truth = truth_of(eng, ds)
    rng = np.random.default_rng(0)
    good = add_judge(eng, ds, [float(x) for x in np.clip(0.2 + 0.6 * truth + rng.normal(0, 0.1, 60), 0, 1)])
    other = add_judge(eng, ds, [float(x) for x in rng.random(60)], model="other-model")
    ann = annotations.create_annotator(eng, "rita")
    return eng, ds, truth, (good, other), ann


def test_two_judges_label_next_and_the_card_updates(open_page):
    eng, ds, truth, ids, ann = _setup()
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    assert sorted(at.multiselect(key="jd_judges").value) == sorted(ids)
    assert len(at.dataframe) + len(at.table) >= 3
    assert any("0 human label" in t or "No estimate" in t for t in texts(at.markdown))

    at.number_input(key="jd_k").set_value(20)
    at.multiselect(key="jd_who").set_value([ann.id])
    at.run()
    at.button(key="jd_send").click().run()
    assert not at.exception, at.exception
    assert any("20 item(s) to rita" in t for t in texts(at.success))
    queued = [e.item_id for e in annotations.queue(eng, ds, ann.id)]
    assert len(queued) == 20

    items = list(judges.human_frame(eng, ds)["item_id"])
    for item in queued:
        label = int(truth[items.index(item)])
        annotations.label_sentence(eng, annotator_id=ann.id, target=Target.item(item), sentence_idx=0, label=label)
    at.run()
    assert not at.exception, at.exception
    assert any("20 human label(s)" in t for t in texts(at.markdown)), texts(at.markdown)
    assert any("40 of 60 items" in t or "20 of 60 items" in t for t in texts(at.caption))


def test_every_measure_shows_without_a_scroll_bar(open_page):
    """The detailed table has more than ten rows, more than a data grid shows: it is a static table."""
    _setup()
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    (measures,) = at.table
    assert len(measures.value) > 10 and "Failure rate (items)" in measures.value["measure"].tolist()


def test_the_sortable_grid_keeps_one_row_a_judge_and_few_enough_columns_to_fit(open_page):
    """At 1280 px the main column holds about 820 px: the old grid's 18 columns (2,300 px) scrolled sideways.
    The grid keeps the headline measures, each best green, and every measure stays in the static table."""
    eng = get_engine()
    ds = labelled_dataset(eng, 40)  # every item labelled: every agreement measure has a value
    truth = truth_of(eng, ds)
    add_judge(eng, ds, [0.9 if t else 0.2 for t in truth])
    add_judge(eng, ds, [0.6] * 40, model="other-model")
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    (grid,) = [d.value for d in at.dataframe if list(d.value.columns[:2]) == ["judge", "labelled"]]
    assert len(grid) == 2
    assert len(grid.columns) <= 9, list(grid.columns)
    assert {"bal. acc. (verdicts)", "AUROC", "unknown", "failed", "PPI rate", "PPI width"} <= set(grid.columns)
    (measures,) = at.table
    assert len(measures.value) == 16  # all of them, below the grid


def test_with_every_item_labelled_the_card_says_why_the_judge_adds_nothing(open_page):
    eng = get_engine()
    ds = labelled_dataset(eng, 30)
    add_judge(eng, ds, [0.8] * 30)
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    said = " ".join(texts(at.markdown))
    assert "Every item has a human label, so the judge has nothing to add" in said
    assert "as wide as from the labels alone" not in said


def test_five_judges_make_rows_of_cards_wide_enough_for_their_label(open_page):
    """Five cards side by side in the 1280 px main column cut "PPI consistency rate (95% CI)" short: at most
    three a row, the rows evened out (3 + 2)."""
    eng = get_engine()
    ds = labelled_dataset(eng, 30)
    truth = truth_of(eng, ds)
    ids = [add_judge(eng, ds, [0.9 if t else 0.1 * k for t in truth], model=f"m{k}") for k in range(5)]
    at = open_page(JUDGES)
    at.multiselect(key="jd_judges").set_value(ids).run()
    assert not at.exception, at.exception
    holding = [c for c in at.columns if any(m.label.startswith("PPI consistency rate") for m in c.metric)]
    assert len(holding) == 5
    assert all(c.weight >= 1 / 3 - 1e-9 for c in holding), [c.weight for c in holding]


def test_labels_chosen_where_judges_are_unsure_are_counted_and_said_on_the_card_and_report(open_page):
    from services import reports

    eng, ds, truth, ids, ann = _setup()
    at = open_page(JUDGES)
    at.radio(key="jd_strategy").set_value("uncertain")
    at.number_input(key="jd_k").set_value(10)
    at.multiselect(key="jd_who").set_value([ann.id])
    at.run()
    assert any("not a random draw" in t for t in texts(at.warning))
    at.button(key="jd_send").click().run()
    assert not at.exception, at.exception
    items = list(judges.human_frame(eng, ds)["item_id"])
    for item in [e.item_id for e in annotations.queue(eng, ds, ann.id)]:
        label = int(truth[items.index(item)])
        annotations.label_sentence(eng, annotator_id=ann.id, target=Target.item(item), sentence_idx=0, label=label)
    at.run()
    assert not at.exception, at.exception
    assert any("10 label(s) not a random draw" in t for t in texts(at.caption)), texts(at.caption)
    (panel,) = judges.list_panels(eng)[:1]
    notes = " ".join(reports.build(eng, "judges", panel.id).notes)
    assert "10 of the 10 labels were not a random draw (10 chosen where the judges are unsure" in notes


def test_create_share_link_makes_a_link_on_the_first_press(open_page):
    from services import reports

    eng, ds, truth, ids, ann = _setup()
    at = open_page(JUDGES)
    at.run()  # a rerun must find the same saved comparison, so the button keeps its key
    assert not at.exception, at.exception
    (share,) = [b for b in at.button if b.label == "Create share link"]
    share.click().run()
    assert not at.exception, at.exception
    links = [c.value for c in at.code if "/Reports?share=" in c.value]
    assert len(links) == 1, texts(at.code)
    token = links[0].rsplit("=", 1)[1]
    assert reports.find_share(eng, token).kind == "judges"
    assert len(judges.list_panels(eng)) == 1


def test_the_grid_shows_no_raw_none_for_the_offline_checkers_cost(open_page):
    """The evidence checker has no price: its "USD / 1k" cell is empty (drawn as a dash), not the text "None"."""
    eng = get_engine()
    ds = labelled_dataset(eng, 30, n_labelled=15)
    truth = truth_of(eng, ds)
    add_judge(eng, ds, [0.9 if t else 0.2 for t in truth], method="evidence", model="offline")
    priced = add_judge(eng, ds, [0.6] * 30, model="priced")
    at = open_page(JUDGES)
    at.number_input(key=f"jd_pin_{priced}").set_value(1.0)
    at.number_input(key=f"jd_pout_{priced}").set_value(2.0).run()
    assert not at.exception, at.exception
    (grid,) = [d for d in at.dataframe if "judge" in d.value.columns and "labelled" in d.value.columns]
    usd = grid.value["USD / 1k"]
    assert usd.isna().sum() == 1 and usd.notna().sum() == 1
    assert grid.proto.placeholder == "—"  # the grid draws a missing value as its placeholder, else as "None"


def test_a_rerun_reads_the_judges_and_labels_once_per_change(open_page, monkeypatch):
    """The cards and Label next share one read of each judge's verdicts and of the labels, kept until they
    change: at 50,000 items reading them twice on every rerun was most of the page's time."""
    from services.judges import data

    eng, ds, truth, ids, ann = _setup()
    reads: list[str] = []
    for mod in (judges, data):
        for name in ("judge_frame", "human_frame"):
            real = getattr(data, name)
            monkeypatch.setattr(mod, name, lambda *a, _n=name, _f=real, **k: reads.append(_n) or _f(*a, **k))
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    assert sorted(reads) == ["human_frame", "judge_frame", "judge_frame"]
    at.number_input(key="jd_k").set_value(5)
    at.run()
    assert not at.exception, at.exception
    assert len(reads) == 3, reads  # a rerun with the same judges and labels reads nothing again
    item = _first_item(eng, ds)
    annotations.label_sentence(eng, annotator_id=ann.id, target=Target.item(item), sentence_idx=0, label=1)
    at.run()
    assert not at.exception, at.exception
    assert len(reads) == 6, reads  # a new label: read again, once
    assert any(t.startswith("1 of 60 items have a human judgment") for t in texts(at.caption)), texts(at.caption)
    _touch_a_result(eng, ids[0])  # a judge's batch writes a result, as while it runs: its verdicts are read
    at.run()  # again, the labels (0.9 s at 100,000 items) are not
    assert not at.exception, at.exception
    assert sorted(reads[6:]) == ["judge_frame", "judge_frame"], reads


def _touch_a_result(eng, batch_id: int) -> None:
    from sqlalchemy import update
    from sqlmodel import Session, select

    from db.models import BatchItem, utcnow

    with Session(eng) as session:
        first = session.exec(select(BatchItem.id).where(BatchItem.batch_id == batch_id).limit(1)).first()
        session.execute(update(BatchItem).where(BatchItem.id == first).values(updated_at=utcnow()))
        session.commit()


def _first_item(eng, ds: int) -> int:
    from sqlmodel import Session, select

    from db.models import DatasetItem

    with Session(eng) as session:
        return int(
            session.exec(select(DatasetItem.id).where(DatasetItem.dataset_id == ds).order_by(DatasetItem.idx)).first()
        )


def test_each_dataset_keeps_its_own_judges(open_page):
    """Changing the dataset picks that dataset's judges (its first two), not an empty picker with "Choose at
    least one judge"; going back finds the judges chosen there."""
    eng = get_engine()
    first = labelled_dataset(eng, 30, seed=1)
    a = [add_judge(eng, first, [0.7] * 30, model=m) for m in ("a1", "a2", "a3")]
    second = labelled_dataset(eng, 30, seed=2)
    b = [add_judge(eng, second, [0.6] * 30, model=m) for m in ("b1", "b2")]
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    at.selectbox(key="jd_dataset").set_value(first).run()
    at.multiselect(key="jd_judges").set_value([a[0]]).run()
    at.selectbox(key="jd_dataset").set_value(second).run()
    assert not at.exception, at.exception
    assert sorted(at.multiselect(key="jd_judges").value) == sorted(b)
    assert not any("Choose at least one judge" in t for t in texts(at.info))
    at.selectbox(key="jd_dataset").set_value(first).run()
    assert at.multiselect(key="jd_judges").value == [a[0]]


def test_the_card_shows_the_live_interval_first_and_the_planned_one_named_beside_it(open_page):
    import re

    eng = get_engine()
    ds = labelled_dataset(eng, 80, n_labelled=40)
    truth = truth_of(eng, ds)
    add_judge(eng, ds, [0.8 if t else 0.2 for t in truth])
    at = open_page(JUDGES)
    assert not at.exception, at.exception
    (shown,) = [t for t in texts(at.caption) if "valid at every look" in t]
    live_line, planned_line = shown.splitlines()[:2]
    assert live_line.strip().endswith("live (valid at every look)")
    assert "fixed-sample (valid only if read once at a number of labels fixed in advance)" in planned_line
    (live,) = [tuple(map(float, re.findall(r"([\d.]+)%", line)[:2])) for line in (live_line,)]
    planned = tuple(map(float, re.findall(r"([\d.]+)%", planned_line)[:2]))
    assert live[0] <= planned[0] and planned[1] <= live[1] and live[1] - live[0] > planned[1] - planned[0]
    assert any("live (valid at every look)" in t for t in texts(at.markdown))  # the plain-words sentence names it

    at.toggle(key="jd_use_budget").set_value(True).run()
    at.number_input(key="jd_budget").set_value(30).run()
    assert not at.exception, at.exception
    assert any("planned (read once at 30 labels)" in t for t in texts(at.caption)), texts(at.caption)
