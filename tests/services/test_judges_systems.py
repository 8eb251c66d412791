"""A dataset's systems compared by one judge: read from the database, paired by reference, saved for a report;
the report of a comparison; Label next drawing per system."""

from __future__ import annotations

import numpy as np
import pytest
from sqlmodel import Session, select

from db.models import DatasetItem
from services import judges, reports
from services.errors import InputError
from services.judges import systems
from tests.support.judges import add_judge, labelled_dataset
from tests.support.systems import systems_dataset


def test_the_systems_of_a_dataset_are_compared_paired_by_reference(engine):
    ds, batch = systems_dataset(engine, {"old": 0.5, "new": 0.95}, n_refs=150, n_labelled=60)
    assert systems.systems_of(engine, ds) == {"new": 150, "old": 150}
    frame = systems.comparison_frame(engine, ds, batch)
    assert len(frame) == 300 and frame["label"].notna().sum() == 120
    c = systems.compare_dataset(engine, ds, batch, alpha=0.05, mode="planned")
    assert [(s.system, s.n, s.n_labelled) for s in c.systems] == [("old", 150, 60), ("new", 150, 60)]
    (d,) = c.differences
    assert d.n_shared == 150  # the same references
    assert d.significant and d.sentence.startswith("new is more consistent than old")


def test_a_dataset_without_systems_cannot_be_compared(engine):
    ds = labelled_dataset(engine, 30)
    batch = add_judge(engine, ds, [0.5] * 30)
    assert systems.systems_of(engine, ds) == {}
    with pytest.raises(InputError, match="at least two systems"):
        systems.compare_dataset(engine, ds, batch)


def test_a_saved_comparison_builds_its_report(engine):
    ds, batch = systems_dataset(engine, {"a": 0.6, "b": 0.9, "c": 0.9}, n_refs=80, n_labelled=40)
    pid = systems.save_comparison(engine, ds, batch, alpha=0.1)
    assert systems.save_comparison(engine, ds, batch, alpha=0.1) == pid
    assert pid in [p.id for p in systems.comparison_panels(engine)]
    rep = reports.build(engine, "compare", pid)
    assert rep.kind == "compare" and len(rep.headlines) == 3
    assert [t.title for t in rep.tables][1].startswith("Differences")
    assert len(rep.tables[1].rows) == 3
    assert any("Bonferroni over 3 pair(s)" in n for n in rep.notes)
    assert rep.configuration["alpha per pair"] == "0.1 / 3 pair(s) = 0.03333"
    assert any(n.startswith(("No difference shown", "b is more", "c is more")) for n in rep.notes)
    html = reports.to_html(rep)
    assert "Systems compared" in html and "Differences, a minus b" in html
    judges_panel = judges.save_panel(engine, ds, [batch], {"source": "all"})
    with pytest.raises(InputError, match="does not exist"):
        reports.build(engine, "compare", judges_panel)


def test_a_saved_comparison_keeps_its_reading_and_its_report_names_it(engine):
    ds, batch = systems_dataset(engine, {"a": 0.6, "b": 0.95}, n_refs=80, n_labelled=40)
    live = systems.save_comparison(engine, ds, batch)
    planned = systems.save_comparison(engine, ds, batch, mode="planned", plan=60)
    assert live != planned
    rep = reports.build(engine, "compare", live)
    assert rep.configuration["reading"] == "live"
    assert any(n.startswith("Live reading: every interval is a confidence sequence") for n in rep.notes)
    rep = reports.build(engine, "compare", planned)
    assert rep.configuration["reading"] == "planned" and rep.configuration["labels a system planned"] == 60
    assert any(n.startswith("Planned reading:") for n in rep.notes)
    assert any("Planned for 60 labels a system (a has 40, b has 40)" in n and "voids its level" in n for n in rep.notes)


def test_a_report_names_a_rate_that_rests_on_the_labels_alone(engine):
    """Fewer than 15 labels of a class: PPI is not used, and the report's headline, note, table and JSON say
    "labels only" with the reason rather than "PPI"; a system with PPI keeps its name."""
    ds, batch = systems_dataset(engine, {"few": 0.5, "many": 0.5}, n_refs=120, n_labelled=60)
    with Session(engine) as session:  # "few" keeps 12 labels
        for item in session.exec(select(DatasetItem).where(DatasetItem.system == "few")):
            if int(item.external_id.split("-")[1]) >= 12:
                item.human_label = None
                session.add(item)
        session.commit()
    rep = reports.build(engine, "compare", systems.save_comparison(engine, ds, batch, alpha=0.05))
    few, many = rep.headlines
    assert few.label == "few: consistency rate, labels only"
    assert few.note.startswith("labels only: fewer than 15 of each class")
    assert many.label == "many: PPI consistency rate"
    table = rep.tables[0]
    basis = table.columns.index("PPI basis")
    assert [r[basis] for r in table.rows] == [
        "labels only: fewer than 15 of each class",
        "prediction-powered: labels and the judge's scores",
    ]
    assert "labels only" in rep.interval_note
    assert "labels only: fewer than 15 of each class" in reports.to_html(rep)


def test_label_next_draws_k_random_items_per_system(engine):
    ds, batch = systems_dataset(engine, {"a": 0.5, "b": 0.5, "c": 0.5}, n_refs=50, n_labelled=10)
    human = judges.human_frame(engine, ds)
    frames = [judges.judge_frame(engine, judges.data.batches(engine, [batch])[0])]
    strata = systems.strata(engine, ds)
    prop = judges.propose(human, frames, k=4, strategy="random", per_system=strata, seed=1)
    assert sorted(prop.table["system"].value_counts().to_dict().items()) == [("a", 4), ("b", 4), ("c", 4)]
    assert human.set_index("item_id").loc[prop.item_ids, "label"].isna().all()  # unlabelled items only
    other = judges.propose(human, frames, k=4, strategy="random", per_system=strata, seed=2)
    assert set(other.item_ids) != set(prop.item_ids)  # a random draw
    plain = judges.propose(human, frames, k=4, strategy="random", seed=1)
    assert len(plain.item_ids) == 4
    assert np.isin(prop.item_ids, strata.index).all()


def test_label_next_proposes_nothing_of_a_system_whose_pairs_are_all_decided(engine):
    ds, batch = systems_dataset(engine, {"old": 0.5, "new": 0.97, "same": 0.5}, n_refs=100, n_labelled=50)
    c = systems.compare_dataset(engine, ds, batch)
    assert c.mode == "live" and c.decided_systems() == {"new"}  # old - same is not decided
    human = judges.human_frame(engine, ds)
    frames = [judges.judge_frame(engine, judges.data.batches(engine, [batch])[0])]
    strata = systems.strata(engine, ds)
    prop = judges.propose(human, frames, k=3, strategy="random", per_system=strata, seed=1, decided=c.decided_systems())
    assert sorted(prop.table["system"].value_counts().to_dict().items()) == [("old", 3), ("same", 3)]


def test_a_judges_report_names_a_rate_on_the_labels_alone_and_refuses_a_systems_comparison(engine):
    ds = labelled_dataset(engine, 60, n_labelled=20)  # 20 labels: fewer than 15 of a class
    batch = add_judge(engine, ds, [0.8] * 60)
    rep = reports.build(engine, "judges", judges.save_panel(engine, ds, [batch], {"source": "all"}))
    (head,) = rep.headlines
    assert head.label.endswith(": consistency rate, labels only") and "PPI consistency rate" not in head.label
    assert head.note.startswith("labels only: fewer than 15 of each class")
    sys_ds, sys_batch = systems_dataset(engine, {"a": 0.5, "b": 0.9}, n_refs=40, n_labelled=20)
    with pytest.raises(InputError, match="comparison of systems"):
        reports.build(engine, "judges", systems.save_comparison(engine, sys_ds, sys_batch))
