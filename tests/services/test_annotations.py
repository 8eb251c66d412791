"""Annotation: labels per annotator, concurrency, assignment, the queue, export/import, agreement."""

from __future__ import annotations

import json
import threading
from collections import Counter

import krippendorff
import numpy as np
import pytest
from sqlmodel import Session, select

from db import runs as db_runs
from db.engine import get_session, make_engine
from db.models import AnnotationAssignment, BatchItem, RunCreate, SentenceLabel
from services import annotations as an
from services import datasets
from services.annotations import Target
from services.errors import InputError
from tests.annotation_seed import add_batch, make_dataset
from tests.support.waiting import WAIT_LIMIT

SENTS = [
    ["The council met on Tuesday.", "It approved 47 million dollars."],
    ["Work starts in March.", "The mayor resigned.", "Nobody objected."],
    ["The bridge is old."],
]


def people(engine, *names: str) -> list[int]:
    return [an.create_annotator(engine, n).id for n in names]


def stored(engine) -> list[tuple[int, int | None, int, int, str]]:
    with Session(engine) as s:
        rows = s.exec(select(SentenceLabel).order_by(SentenceLabel.id)).all()
        return [(r.annotator_id, r.dataset_item_id, r.sentence_idx, r.label, r.note) for r in rows]


# -- annotators --------------------------------------------------------------------------------
def test_annotators_have_unique_names_and_unguessable_tokens(engine):
    ann = an.create_annotator(engine, "  Ada   Lovelace ")
    assert ann.name == "Ada Lovelace"
    with pytest.raises(InputError, match="exists already"):
        an.create_annotator(engine, "Ada Lovelace")
    tok = an.annotator_token(engine, ann.id)
    assert tok and len(tok) >= 32
    assert an.annotator_by_token(engine, tok).id == ann.id
    assert an.annotator_by_token(engine, tok[:-1] + ("A" if tok[-1] != "A" else "B")) is None
    assert an.annotator_by_token(engine, "") is None
    bob = an.create_annotator(engine, "Bob")
    assert an.annotator_token(engine, bob.id) != tok
    assert [a.name for a in an.list_annotators(engine)] == ["Ada Lovelace", "Bob"]
    assert an.get_or_create_annotator(engine, "Bob").id == bob.id
    assert not hasattr(ann, "token"), "the public model never carries the token"
    with pytest.raises(InputError):
        an.create_annotator(engine, "   ")


def test_replacing_a_personal_link_retires_the_old_one_and_keeps_labels(engine):
    ann = an.create_annotator(engine, "Ada")
    old = an.annotator_token(engine, ann.id)
    new = an.replace_token(engine, ann.id)
    assert new != old and len(new) >= 32
    assert an.annotator_by_token(engine, old) is None
    assert an.annotator_by_token(engine, new).id == ann.id
    assert an.get_annotator(engine, ann.id).name == "Ada"


# -- labels --------------------------------------------------------------------------------------
def test_a_label_through_a_replaced_link_is_refused_and_stores_nothing(engine):
    _, items = make_dataset(engine, SENTS)
    ada = an.create_annotator(engine, "Ada").id
    old = an.annotator_token(engine, ada)
    target = Target.item(items[1])
    an.label_sentence(engine, annotator_id=ada, target=target, sentence_idx=0, label=1, token=old)
    new = an.replace_token(engine, ada)
    for idx, label, note in ((1, 0, "too late"), (0, 0, None)):  # a new label, and a change to a stored one
        with pytest.raises(InputError, match="no longer valid"):
            an.label_sentence(
                engine, annotator_id=ada, target=target, sentence_idx=idx, label=label, note=note, token=old
            )
    assert stored(engine) == [(ada, items[1], 0, 1, "")], "nothing of the refused writes is kept"
    an.label_sentence(engine, annotator_id=ada, target=target, sentence_idx=1, label=0, token=new)
    an.label_sentence(engine, annotator_id=ada, target=target, sentence_idx=2, label=1)  # the owner: no link
    assert len(stored(engine)) == 3


def test_an_upsert_replaces_only_the_annotators_own_label(engine):
    _, items = make_dataset(engine, SENTS)
    ada, bob = people(engine, "ada", "bob")
    t = Target.item(items[0])
    an.label_sentence(engine, annotator_id=ada, target=t, sentence_idx=1, label=0, note="47 is wrong")
    an.label_sentence(engine, annotator_id=bob, target=t, sentence_idx=1, label=1)
    first = an.my_labels(engine, ada, t)[1]
    an.label_sentence(engine, annotator_id=ada, target=t, sentence_idx=1, label=1)  # note None keeps the note
    again = an.my_labels(engine, ada, t)[1]
    assert (again.label, again.note, again.id, again.created_at) == (1, "47 is wrong", first.id, first.created_at)
    assert again.updated_at >= first.updated_at
    an.label_sentence(engine, annotator_id=ada, target=t, sentence_idx=1, label=0, note="")
    assert an.my_labels(engine, ada, t)[1].note == ""
    assert sorted(stored(engine)) == [(ada, items[0], 1, 0, ""), (bob, items[0], 1, 1, "")]


def test_labels_validate_their_sentence_and_value(engine):
    _, items = make_dataset(engine, SENTS)
    (ada,) = people(engine, "ada")
    with pytest.raises(InputError, match="no sentence 3"):
        an.label_sentence(engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=2, label=1)
    with pytest.raises(ValueError):
        an.label_sentence(engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=2)
    with pytest.raises(ValueError):
        Target(run_id=1, dataset_item_id=2)
    with pytest.raises(InputError, match="does not exist"):
        an.label_sentence(engine, annotator_id=ada, target=Target.run(999, 0), sentence_idx=0, label=1)
    with pytest.raises(InputError, match="does not exist"):
        an.label_sentence(engine, annotator_id=999, target=Target.item(items[0]), sentence_idx=0, label=1)
    assert stored(engine) == []


def test_run_labels_are_separate_and_never_touch_the_models_verdicts(engine):
    ds, items = make_dataset(engine, SENTS)
    bid = add_batch(engine, ds, [["consistent", "inconsistent"], ["consistent"] * 3, ["unknown"]])
    with get_session(engine) as s:
        run_id = db_runs.create_run(session=s, data=RunCreate(reference="Ref.", candidate="A. B.")).id
    with Session(engine) as s:
        before = [b.result for b in s.exec(select(BatchItem).where(BatchItem.batch_id == bid))]
    (ada,) = people(engine, "ada")
    an.label_sentence(engine, annotator_id=ada, target=Target.run(run_id, 0), sentence_idx=0, label=0)
    an.label_sentence(engine, annotator_id=ada, target=Target.run(run_id, 1), sentence_idx=0, label=1)
    an.label_sentence(engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=0)
    assert [(x.round_idx, x.label) for x in an.labels_for_run(engine, run_id, 0)] == [(0, 0)]
    assert [(x.round_idx, x.label) for x in an.labels_for_run(engine, run_id, 1)] == [(1, 1)]
    assert [x.label for x in an.labels_for_item(engine, items[0])] == [0]
    with Session(engine) as s:
        after = [b.result for b in s.exec(select(BatchItem).where(BatchItem.batch_id == bid))]
    assert after == before
    assert [v.verdict for v in an.model_verdicts(engine, bid, items[0])] == ["consistent", "inconsistent"]


def test_two_annotators_labelling_the_same_sentence_at_once_are_both_stored(file_engine):
    """Real threads on a SQLite file, released together by a barrier, many times over."""
    _, items = make_dataset(file_engine, [[f"Sentence {j}." for j in range(25)]])
    ada, bob = people(file_engine, "ada", "bob")
    target = Target.item(items[0])
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def worker(annotator_id: int, label: int) -> None:
        try:
            for j in range(25):
                barrier.wait(timeout=WAIT_LIMIT)
                an.label_sentence(file_engine, annotator_id=annotator_id, target=target, sentence_idx=j, label=label)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(ada, 1)), threading.Thread(target=worker, args=(bob, 0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_LIMIT)
        assert not t.is_alive(), "a labelling thread never finished"
    assert not errors, errors
    labels = an.labels_for_item(file_engine, items[0])
    assert len(labels) == 50
    assert Counter((x.annotator_id, x.label) for x in labels) == {(ada, 1): 25, (bob, 0): 25}


def test_the_same_annotator_racing_with_itself_keeps_one_label(file_engine):
    _, items = make_dataset(file_engine, [["Only sentence."]])
    (ada,) = people(file_engine, "ada")
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker(label: int) -> None:
        try:
            barrier.wait(timeout=WAIT_LIMIT)
            an.label_sentence(file_engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=label)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k % 2,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_LIMIT)
        assert not t.is_alive(), "a labelling thread never finished"
    assert not errors, errors
    assert len(an.labels_for_item(file_engine, items[0])) == 1


# -- assignment ----------------------------------------------------------------------------------
def assignments(engine, ds: int) -> dict[int, list[int]]:
    with Session(engine) as s:
        rows = s.exec(select(AnnotationAssignment).where(AnnotationAssignment.dataset_id == ds)).all()
    out: dict[int, list[int]] = {}
    for r in rows:
        out.setdefault(r.dataset_item_id, []).append(r.annotator_id)
    return out


@pytest.mark.parametrize(("n_items", "n_people", "per_item"), [(10, 4, 2), (7, 3, 2), (9, 5, 3), (4, 1, 1)])
def test_assignment_gives_each_item_exactly_n_annotators_balanced(engine, n_items, n_people, per_item):
    ds, items = make_dataset(engine, [[f"S {i}."] for i in range(n_items)])
    ids = people(engine, *[f"p{k}" for k in range(n_people)])
    res = an.assign(engine, ds, annotators=ids, per_item=per_item, seed=7)
    got = assignments(engine, ds)
    assert set(got) == set(items)
    assert all(len(v) == per_item == len(set(v)) for v in got.values())
    loads = Counter(a for v in got.values() for a in v)
    assert sum(loads.values()) == n_items * per_item == res.created
    assert max(loads.values()) - min(loads[a] for a in ids) <= 1
    assert res.covered == n_items and sorted(res.loads.values()) == sorted(loads[a] for a in ids)
    again = an.assign(engine, ds, annotators=ids, per_item=per_item, seed=99)
    assert again.created == 0 and assignments(engine, ds) == got


def test_assignment_is_reproducible_from_the_seed_and_tops_up(tmp_path):
    def run(seed: int, path: str):
        eng = make_engine(f"sqlite:///{tmp_path}/{path}.db")
        ds, _ = make_dataset(eng, [[f"S {i}."] for i in range(12)])
        ids = people(eng, "a", "b", "c", "d")
        an.assign(eng, ds, annotators=ids, per_item=2, seed=seed)
        got = {k: sorted(v) for k, v in assignments(eng, ds).items()}
        res = an.assign(eng, ds, annotators=ids, per_item=3, seed=seed)  # one more annotator per item
        topped = assignments(eng, ds)
        eng.dispose()
        return got, res, topped

    a, _, _ = run(1, "a")
    b, res, topped = run(1, "b")
    c, _, _ = run(2, "c")
    assert a == b
    assert a != c, "another seed draws other pairs"
    assert res.created == 12 and all(len(v) == 3 for v in topped.values())
    loads = Counter(x for v in topped.values() for x in v)
    assert max(loads.values()) - min(loads.values()) <= 1
    pairs = Counter(tuple(v) for v in a.values())
    assert len(pairs) > 2, "pairs of annotators vary (not the same two again and again)"


def test_assignment_rejects_impossible_requests(engine):
    ds, _ = make_dataset(engine, SENTS)
    ids = people(engine, "a", "b")
    with pytest.raises(InputError, match="only 2"):
        an.assign(engine, ds, annotators=ids, per_item=3)
    with pytest.raises(InputError):
        an.assign(engine, ds, annotators=[], per_item=1)
    with pytest.raises(InputError, match="do not exist"):
        an.assign(engine, ds, annotators=[*ids, 999], per_item=1)


# -- the queue -----------------------------------------------------------------------------------
def test_next_and_previous_walk_the_annotators_own_assignments(engine):
    ds, items = make_dataset(engine, [[f"S {i}.", f"T {i}."] for i in range(6)])
    ada, bob = people(engine, "ada", "bob")
    an.assign(engine, ds, annotators=[ada, bob], per_item=1, seed=3)
    mine = [e.item_id for e in an.queue(engine, ds, ada)]
    assert len(mine) == 3 and mine == sorted(mine, key=items.index)
    assert an.next_item(engine, ds, ada) == mine[0]
    assert an.next_item(engine, ds, ada, after=mine[0]) == mine[1]
    assert an.next_item(engine, ds, ada, after=mine[2]) is None
    assert an.next_item(engine, ds, ada, before=mine[2]) == mine[1]
    assert an.next_item(engine, ds, ada, before=mine[0]) is None
    # An item of someone else's queue still navigates by dataset order.
    other = next(i for i in items if i not in mine)
    assert an.next_item(engine, ds, ada, after=other) in (*mine, None)

    assert an.progress(engine, ds, ada) == an.AnnotationProgress(assigned=3, done=0, labels=0)
    an.label_sentence(engine, annotator_id=ada, target=Target.item(mine[0]), sentence_idx=0, label=1)
    assert an.progress(engine, ds, ada).done == 0, "one of two sentences is not done"
    an.label_sentence(engine, annotator_id=ada, target=Target.item(mine[0]), sentence_idx=1, label=0)
    p = an.progress(engine, ds, ada)
    assert (p.assigned, p.done, p.labels, round(p.fraction, 3)) == (3, 1, 2, 0.333)
    assert [e.status for e in an.queue(engine, ds, ada)] == ["done", "pending", "pending"]
    assert an.next_item(engine, ds, ada) == mine[1], "the first pending item is where to start"
    assert an.next_item(engine, ds, ada, after=mine[0], pending_only=True) == mine[1]
    assert an.progress(engine, ds) == an.AnnotationProgress(assigned=6, done=1, labels=2)
    frame = an.progress_frame(engine, ds)
    assert frame.to_dict("records") == [
        {"annotator": "ada", "assigned": 3, "done": 1, "labels": 2},
        {"annotator": "bob", "assigned": 3, "done": 0, "labels": 0},
    ]
    assert an.next_item(engine, ds, people(engine, "carol")[0]) is None


def test_labelling_before_assignment_counts_once_assigned(engine):
    ds, items = make_dataset(engine, [["Only."]])
    (ada,) = people(engine, "ada")
    an.label_sentence(engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=1)
    an.assign(engine, ds, annotators=[ada], per_item=1)
    assert [e.status for e in an.queue(engine, ds, ada)] == ["done"]


# -- export and import ---------------------------------------------------------------------------
def label_some(engine, items: list[int]) -> None:
    ada, bob = people(engine, "ada", "bob")
    an.label_sentence(engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=1, note="ok")
    an.label_sentence(
        engine,
        annotator_id=ada,
        target=Target.item(items[0]),
        sentence_idx=1,
        label=0,
        note='says "47", the article 40; see, also: line 2\nsecond line',
    )
    an.label_sentence(engine, annotator_id=bob, target=Target.item(items[0]), sentence_idx=1, label=1)
    an.label_sentence(engine, annotator_id=bob, target=Target.item(items[1]), sentence_idx=2, label=0, note="ünïcode")


def snapshot(engine, ds: int) -> list[dict]:
    rows = [json.loads(line) for line in an.export_labels(engine, ds, "jsonl").decode().splitlines()]
    return [
        {
            k: r[k]
            for k in ("external_id", "item", "sentence_idx", "sentence", "annotator", "label", "note", "created_at")
        }
        for r in rows
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_then_import_reproduces_the_labels(engine, fmt):
    ds, items = make_dataset(engine, SENTS)
    label_some(engine, items)
    data = an.export_labels(engine, ds, fmt)
    want = snapshot(engine, ds)
    assert len(want) == 4 and want[0]["sentence"] == SENTS[0][0]

    other = make_engine("sqlite://")
    try:
        ds2, _ = make_dataset(other, SENTS)
        n, rejected = an.import_labels(other, ds2, data, fmt)
        assert (n, rejected) == (4, [])
        assert snapshot(other, ds2) == want
        assert {a.name for a in an.list_annotators(other)} == {"ada", "bob"}
        # Importing again replaces the same labels: nothing doubles.
        assert an.import_labels(other, ds2, data, fmt)[0] == 4
        assert snapshot(other, ds2) == want
    finally:
        other.dispose()


def test_import_rejects_unknown_items_and_mismatched_sentences(engine):
    ds, items = make_dataset(engine, SENTS)
    rows = [
        {"external_id": "x0", "sentence_idx": 0, "sentence": SENTS[0][0], "annotator": "ada", "label": 1},
        {"external_id": "nope", "sentence_idx": 0, "annotator": "ada", "label": 1},
        {
            "external_id": "x0",
            "sentence_idx": 1,
            "sentence": "It approved 40 million dollars.",
            "annotator": "ada",
            "label": 0,
        },
        {"external_id": "x2", "sentence_idx": 5, "annotator": "ada", "label": 0},
        {"external_id": "x1", "sentence_idx": 0, "annotator": "ada", "label": "maybe"},
        {"external_id": "x1", "sentence_idx": 1, "annotator": "", "label": "inconsistent"},
        {"external_id": "x1", "sentence_idx": 2, "annotator": "carol", "label": "inconsistent"},
    ]
    data = ("\n".join(json.dumps(r) for r in rows) + "\n{broken\n").encode()
    n, rejected = an.import_labels(engine, ds, data, "jsonl")
    assert n == 2
    reasons = {r.row: r.reason for r in rejected}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 8]
    assert "no item with external_id 'nope'" in reasons[2]
    assert "sentence text differs" in reasons[3]
    assert "no sentence_idx 5" in reasons[4]
    assert "label" in reasons[5]
    assert "annotator" in reasons[6]
    assert "not valid JSON" in reasons[8]
    assert {(x.sentence_idx, x.label) for x in an.labels_for_item(engine, items[0])} == {(0, 1)}
    assert an.annotator_by_name(engine, "carol") is not None, "a missing annotator is created by name"


def test_import_uses_the_position_when_external_ids_repeat(engine):
    ds, items = make_dataset(engine, [["A."], ["B."]], external_ids=["same", "same"])
    data = (
        b'{"external_id": "same", "item": 1, "sentence_idx": 0, "annotator": "ada", "label": 0}\n'
        b'{"external_id": "same", "sentence_idx": 0, "annotator": "ada", "label": 0}\n'
    )
    n, rejected = an.import_labels(engine, ds, data, "jsonl")
    assert n == 1 and len(rejected) == 1 and "give 'item'" in rejected[0].reason
    assert [x.label for x in an.labels_for_item(engine, items[1])] == [0]


def test_deleting_a_dataset_deletes_its_labels_and_assignments(engine):
    ds, items = make_dataset(engine, SENTS)
    ids = people(engine, "ada")
    an.assign(engine, ds, annotators=ids, per_item=1)
    an.label_sentence(engine, annotator_id=ids[0], target=Target.item(items[0]), sentence_idx=0, label=1)
    assert datasets.delete_dataset(engine, ds)
    assert stored(engine) == [] and assignments(engine, ds) == {}


# -- agreement -----------------------------------------------------------------------------------
# Raters x units (NaN: not labelled), over the 6 sentences of SENTS.
MATRIX = np.array(
    [
        [1, 0, 1, 1, np.nan, 0],  # ada
        [1, 1, 1, np.nan, 0, 0],  # bob
        [np.nan, 0, 1, 0, 0, 1],  # carol
    ]
)
UNITS = [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (2, 0)]
MODEL = [["consistent", "inconsistent"], ["consistent", "inconsistent", "unknown"], ["inconsistent"]]


def hand_made(engine):
    ds, items = make_dataset(engine, SENTS)
    ids = people(engine, "ada", "bob", "carol")
    for r, annotator in enumerate(ids):
        for u, (i, j) in enumerate(UNITS):
            if not np.isnan(MATRIX[r, u]):
                an.label_sentence(
                    engine,
                    annotator_id=annotator,
                    target=Target.item(items[i]),
                    sentence_idx=j,
                    label=int(MATRIX[r, u]),
                )
    bid = add_batch(engine, ds, MODEL)
    return ds, items, bid


def test_agreement_alpha_equals_krippendorff_on_a_hand_made_matrix(engine):
    ds, _, bid = hand_made(engine)
    res = an.agreement(engine, ds, batch_ids=[bid], n_boot=200)
    among = res["among_annotators"]
    want = krippendorff.alpha(reliability_data=MATRIX, level_of_measurement="nominal")
    assert among.alpha == pytest.approx(want)
    assert among.n_raters == 3 and among.n_pairable == 6 and among.ci_low is not None
    assert res["n_units"] == 6 and res["annotators"] == ["ada", "bob", "carol"]

    # Majority of the annotators per unit: 1, 0, 1, tie (1 vs 0), 0, 0; the model: 1, 0, 1, 0, unknown, 0.
    (m,) = res["models"]
    majority = [1, 0, 1, np.nan, 0, 0]
    model = [1, 0, 1, 0, np.nan, 0]
    keep = [u for u in range(6) if not np.isnan(majority[u]) and not np.isnan(model[u])]
    two = np.array([[majority[u] for u in keep], [model[u] for u in keep]])
    assert m["batch_id"] == bid and m["n_compared"] == 4
    assert m["alpha"].alpha == pytest.approx(krippendorff.alpha(reliability_data=two, level_of_measurement="nominal"))
    assert "tied" in m["alpha"].note and "unknown" in m["alpha"].note
    frame = an.agreement_frame(res)
    assert list(frame["comparison"]) == ["among annotators (3)", f"annotators' majority vs batch #{bid} hand batch"]


def test_agreement_says_why_it_cannot_be_computed(engine):
    ds, items = make_dataset(engine, SENTS)
    res = an.agreement(engine, ds, batch_ids=[])
    assert res["among_annotators"].alpha is None and "No sentence" in res["among_annotators"].note
    (ada,) = people(engine, "ada")
    an.label_sentence(engine, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=1)
    bid = add_batch(engine, ds, [["consistent"], ["consistent"] * 3, ["consistent"]])  # item 0 has 2 sentences
    res = an.agreement(engine, ds, batch_ids=[bid])
    assert res["among_annotators"].alpha is None and "rater" in res["among_annotators"].note
    assert res["models"][0]["alpha"].alpha is None
    assert "per-sentence verdict" in res["models"][0]["alpha"].note


def test_disagreements_lists_exactly_the_differing_sentences(engine):
    ds, _, bid = hand_made(engine)
    df = an.disagreements(engine, ds, batch_ids=[bid])
    # (0,1): ada 0, bob 1, carol 0 -> annotators disagree; (1,1): ada 1 vs carol 0 (tie);
    # (1,2): bob 0, carol 0, model unknown -> agree; (2,0): ada 0, bob 0, carol 1 -> disagree, model 0 agrees.
    assert list(zip(df["item"], df["sentence_idx"], strict=True)) == [(0, 1), (1, 1), (2, 0)]
    assert list(df.columns) == [
        "item",
        "external_id",
        "sentence_idx",
        "sentence",
        "@ada",
        "@bob",
        "@carol",
        "majority",
        f"batch #{bid}",
        "differs",
    ]
    first = df.iloc[0]
    assert (first["@ada"], first["@bob"], first["majority"], first[f"batch #{bid}"]) == (
        "inconsistent",
        "consistent",
        "inconsistent",
        "inconsistent",
    )
    assert df.iloc[1]["majority"] == "tie" and df.iloc[1]["@bob"] == ""
    assert all(d == "annotators disagree" for d in df["differs"])

    # A model that says the opposite on (0,0), where the annotators agree, is listed for that alone.
    flip = add_batch(
        engine,
        ds,
        [["inconsistent", "inconsistent"], ["consistent", "inconsistent", "unknown"], ["inconsistent"]],
        name="flip",
    )
    df = an.disagreements(engine, ds, batch_ids=[bid, flip])
    row = df[(df["item"] == 0) & (df["sentence_idx"] == 0)].iloc[0]
    assert row["differs"] == f"model differs: #{flip}"
    assert len(df) == 4


# -- the lead's queue settings and what a personal link opens -------------------------------------
def test_queue_settings_default_to_the_newest_finished_batch_and_blind_mode(engine):
    ds, _ = make_dataset(engine, [["A."]])
    assert an.queue_settings(engine, ds) == an.QueueSettings(None, True)
    first = add_batch(engine, ds, [["consistent"]], name="first")
    second = add_batch(engine, ds, [["inconsistent"]], name="second")
    assert an.queue_settings(engine, ds).batch_id == max(first, second)


def test_the_leads_queue_settings_are_kept_per_dataset(engine):
    ds, _ = make_dataset(engine, [["A."]])
    other, _ = make_dataset(engine, [["B."]], name="other")
    bid = add_batch(engine, ds, [["consistent"]])
    foreign = add_batch(engine, other, [["consistent"]])
    an.set_queue_settings(engine, ds, batch_id=None, blind=False)
    assert an.queue_settings(engine, ds) == an.QueueSettings(None, False), "no verdicts is a choice, kept"
    assert an.queue_settings(engine, other) == an.QueueSettings(foreign, True)
    an.set_queue_settings(engine, ds, batch_id=bid, blind=True)
    assert an.queue_settings(engine, ds) == an.QueueSettings(bid, True)
    with pytest.raises(InputError, match="not a batch of this dataset"):
        an.set_queue_settings(engine, ds, batch_id=foreign, blind=True)
    with pytest.raises(InputError, match="does not exist"):
        an.set_queue_settings(engine, 999, batch_id=None, blind=True)
    assert datasets.get_dataset(engine, ds).n_items == 1, "the dataset itself is untouched"


def test_a_personal_link_opens_only_the_datasets_with_its_assignments(engine):
    ds, _ = make_dataset(engine, [["A."], ["B."]])
    other, _ = make_dataset(engine, [["C."]], name="other")
    make_dataset(engine, [["D."]], name="nobody's")
    ada, bob = an.create_annotator(engine, "ada").id, an.create_annotator(engine, "bob").id
    an.assign(engine, ds, annotators=[ada], per_item=1)
    an.assign(engine, other, annotators=[ada, bob], per_item=2)
    assert sorted(an.datasets_of(engine, ada)) == sorted([ds, other])
    assert an.datasets_of(engine, bob) == [other]
    assert an.datasets_of(engine, an.create_annotator(engine, "carol").id) == []
