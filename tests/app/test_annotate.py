"""The Annotate page: identity, blind mode, labelling, assignment, agreement, export and import."""

from __future__ import annotations

import json

import services.database
from services import annotations as an
from services.annotations import Target
from tests.annotation_seed import add_batch, make_dataset
from tests.app.helpers import click
from tests.support.waiting import WAIT_LIMIT

ANNOTATE = "pages/7_Annotate.py"
SENTS = [["The council met on Tuesday.", "It approved 47 million dollars."], ["Work starts in March."]]
REASON = "The article says 40 million, not 47"  # the model's reason for item 0, sentence 2


def seeded() -> tuple[int, list[int], int, int]:
    """A dataset, a finished batch with a distinctive reason, and annotator 'ada' with every item assigned."""
    eng = services.database.get_engine()
    ds, items = make_dataset(eng, SENTS)
    bid = add_batch(
        eng,
        ds,
        [["consistent", "inconsistent"], ["consistent"]],
        reasons=[["The article says the council met on Tuesday", REASON], ["Work starts in March, as stated"]],
    )
    ada = an.create_annotator(eng, "ada").id
    an.assign(eng, ds, annotators=[ada], per_item=1)
    return ds, items, bid, ada


def page_text(at) -> str:
    parts = [str(e.value) for e in (*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.success)]
    parts += [str(e.proto.body) for e in at.get("html")]
    return "\n".join(parts)


def as_ada(open_page, ada: int, **query):
    """The page opened through ada's personal link."""
    token = an.annotator_token(services.database.get_engine(), ada)
    return open_page(ANNOTATE, query={"token": token, **query})


def test_the_page_renders_with_no_dataset(open_page):
    at = open_page(ANNOTATE)
    assert not at.exception
    assert at.title[0].value == "Annotate"
    assert any("No dataset yet" in i.value for i in at.info)


def test_an_annotator_is_created_by_name_and_gets_a_personal_link(open_page):
    make_dataset(services.database.get_engine(), SENTS)
    at = open_page(ANNOTATE)
    at.text_input(key="an_new_name").input("Grace")
    at = click(at, "Create")
    assert not at.exception
    grace = an.annotator_by_name(services.database.get_engine(), "Grace")
    assert grace is not None and at.session_state.an_annotator == grace.id
    token = an.annotator_token(services.database.get_engine(), grace.id)
    assert any(f"token={token}" in c.value for c in at.code)
    # The owner created it for someone else: no greeting as if the owner were Grace.
    assert not any("Welcome" in m.value for m in at.success)
    assert any("Added the annotator Grace" in m.value for m in at.success)
    # Creating the same name again is refused with a message, not an exception.
    at.text_input(key="an_new_name").input("Grace")
    at = click(at, "Create")
    assert not at.exception and any("exists already" in e.value for e in at.error)


def test_a_personal_link_identifies_without_a_choice(open_page):
    _, _, _, ada = seeded()
    at = as_ada(open_page, ada)
    assert not at.exception
    assert any("You are **ada** (from your personal link)" in m.value for m in at.markdown)
    assert not [s for s in at.selectbox if s.label == "Who are you?"]
    at = open_page(ANNOTATE, query={"token": "not-a-token"})
    assert not at.exception and any("not valid" in e.value for e in at.error)


def test_replacing_the_personal_link_retires_the_old_one(open_page):
    _, _, _, ada = seeded()
    eng = services.database.get_engine()
    old = an.annotator_token(eng, ada)
    at = as_ada(open_page, ada)
    at.button(key="an_rotate").click().run()
    assert not at.exception
    new = an.annotator_token(eng, ada)
    assert new != old and an.annotator_by_token(eng, old) is None
    assert at.query_params["token"] == [new] or at.query_params["token"] == new
    assert any(f"token={new}" in c.value for c in at.code)


def test_a_button_drawn_before_the_link_was_replaced_stores_no_label(open_page):
    _, items, _, ada = seeded()
    eng = services.database.get_engine()
    at = as_ada(open_page, ada)
    assert not at.exception and at.button(key=f"an_item{items[0]}_0_1")
    an.replace_token(eng, ada)  # the lead replaces the link while the page is open
    at = at.button(key=f"an_item{items[0]}_0_1").click().run()  # the label callback runs before the page checks
    assert not at.exception
    assert an.labels_for_item(eng, items[0]) == [], "the revoked link stored a label"
    assert any("not valid" in e.value for e in at.error)


def test_blind_mode_hides_the_verdict_until_the_annotator_answers(open_page):
    ds, items, bid, ada = seeded()
    at = as_ada(open_page, ada)
    assert not at.exception
    eng = services.database.get_engine()
    assert an.queue_settings(eng, ds) == an.QueueSettings(bid, True)  # until the lead sets it
    assert not at.toggle and not [s for s in at.selectbox if s.label == "Model verdicts from"], "the lead's settings"
    text = page_text(at)
    assert "It approved 47 million dollars." in text
    assert REASON not in text and "model: inconsistent" not in text
    assert text.count("Model verdict hidden until you answer") == 2

    at = at.button(key=f"an_item{items[0]}_1_0").click().run()  # sentence 2: Inconsistent
    assert not at.exception
    text = page_text(at)
    assert REASON in text and "model: inconsistent" in text and "you agree" in text
    assert "The article says the council met on Tuesday" not in text, "sentence 1 is still unanswered"
    labels = an.labels_for_item(services.database.get_engine(), items[0])
    assert [(x.annotator_id, x.sentence_idx, x.label) for x in labels] == [(ada, 1, 0)]


def test_blind_mode_is_the_leads_setting_for_every_annotator_of_the_dataset(open_page):
    ds, _, bid, ada = seeded()
    lead = open_page(ANNOTATE)
    assert lead.toggle(key="an_blind").value is True and lead.selectbox(key="an_batch").value == bid
    lead = lead.toggle(key="an_blind").set_value(False).run()
    assert not lead.exception
    assert an.queue_settings(services.database.get_engine(), ds) == an.QueueSettings(bid, False)
    at = as_ada(open_page, ada)  # a new session through ada's link: the lead's choice holds
    assert not at.exception
    assert REASON in page_text(at)
    # No verdicts at all: the lead picks no batch.
    lead.selectbox(key="an_batch").set_value(None).run()
    at = as_ada(open_page, ada)
    assert REASON not in page_text(at) and "Model verdict hidden" not in page_text(at)


def test_a_personal_link_opens_only_that_annotators_queue(open_page):
    ds, _, _, ada = seeded()
    eng = services.database.get_engine()
    other, _ = make_dataset(eng, [["Nobody assigned this one."]], name="other dataset")
    an.create_annotator(eng, "bob")
    at = as_ada(open_page, ada, dataset=str(other))  # another dataset's URL: not open to this link
    assert not at.exception
    picker = at.selectbox(key="an_dataset")
    assert picker.value == ds and len(picker.options) == 1
    assert "Nobody assigned this one." not in page_text(at)
    assert not [s for s in at.selectbox if s.label == "Who are you?"]
    assert not [e for e in at.expander if "Assign items" in e.label]
    assert not at.get("button_group"), "no Agreement or Export view: they hold everyone's labels"
    assert not [n for n in at.text_input if n.key == "an_new_name"]


def test_labels_notes_progress_and_navigation(open_page):
    ds, items, _, ada = seeded()
    eng = services.database.get_engine()
    at = as_ada(open_page, ada)
    at.text_input(key=f"an_item{items[0]}_0_note").input("matches the article")
    at = at.button(key=f"an_item{items[0]}_0_1").click().run()
    at = at.button(key=f"an_item{items[0]}_1_1").click().run()  # corrects the model
    assert not at.exception
    assert "you corrected the model" in page_text(at)
    mine = an.my_labels(eng, ada, Target.item(items[0]))
    assert (mine[0].label, mine[0].note, mine[1].label) == (1, "matches the article", 1)
    assert at.get("progress")[0].proto.text.startswith("1 of 2 items done")
    # A note typed after the label is saved at once.
    at.text_input(key=f"an_item{items[0]}_1_note").input("47 is right?").run()
    assert an.my_labels(eng, ada, Target.item(items[0]))[1].note == "47 is right?"

    at = click(at, "Next")
    assert not at.exception and at.session_state.an_item == items[1]
    assert "Work starts in March." in page_text(at)
    at = click(at, "Previous")
    assert at.session_state.an_item == items[0]
    assert an.progress(eng, ds, ada).done == 1


def test_a_lead_assigns_items_from_the_page(open_page):
    eng = services.database.get_engine()
    ds, items = make_dataset(eng, SENTS)
    for name in ("ada", "bob", "carol"):
        an.create_annotator(eng, name)
    at = open_page(ANNOTATE)
    at.number_input[0].set_value(2)
    at = at.button(key="FormSubmitter:an_assign_form-Assign").click().run()
    assert not at.exception
    assert any("4 new assignment(s); 2 of 2 items covered" in s.value for s in at.success)
    assert an.progress(eng, ds).assigned == 4


def test_agreement_and_the_disagreement_drill_down(open_page):
    ds, items, bid, ada = seeded()
    eng = services.database.get_engine()
    bob = an.create_annotator(eng, "bob").id
    for who, labels in ((ada, [1, 0, 1]), (bob, [1, 1, 1])):
        for (i, j), lab in zip([(0, 0), (0, 1), (1, 0)], labels, strict=True):
            an.label_sentence(eng, annotator_id=who, target=Target.item(items[i]), sentence_idx=j, label=lab)
    at = open_page(ANNOTATE)  # the lead's view
    at = at.segmented_control(key="an_view").set_value("Agreement").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["comparison"]) == ["among annotators (2)", f"annotators' majority vs batch #{bid} hand batch"]
    assert any("Blind mode is on" in i.value for i in at.info), "the drill-down shows verdicts: hidden when blind"
    assert REASON not in page_text(at)
    at = at.toggle(key="an_blind").set_value(False).run()
    drill = at.dataframe[1].value
    assert list(drill["sentence"]) == ["It approved 47 million dollars."]
    assert drill.iloc[0]["@ada"] == "inconsistent" and drill.iloc[0]["@bob"] == "consistent"


def test_export_and_import_from_the_page(open_page):
    ds, items, _, ada = seeded()
    eng = services.database.get_engine()
    an.label_sentence(eng, annotator_id=ada, target=Target.item(items[0]), sentence_idx=0, label=1, note="n")
    at = open_page(ANNOTATE)  # the lead's view
    at = at.segmented_control(key="an_view").set_value("Export / import").run()
    assert not at.exception
    assert [b.label for b in at.download_button] == ["Download labels (JSONL)", "Download labels (CSV)"]
    rows = [
        {"external_id": "x1", "sentence_idx": 0, "sentence": SENTS[1][0], "annotator": "zoe", "label": 0},
        {"external_id": "x9", "sentence_idx": 0, "annotator": "zoe", "label": 0},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    at.file_uploader(key="an_import_file").upload("labels.jsonl", data, "application/jsonl").run()
    at = at.button(key="an_do_import").click().run()
    assert not at.exception
    assert any("Imported 1 label(s)" in s.value for s in at.success)
    assert any("1 row(s) rejected" in w.value for w in at.warning)
    assert "no item with external_id 'x9'" in str(at.dataframe[-1].value)
    assert [x.label for x in an.labels_for_item(eng, items[1])] == [0]


def _two_rounds(run_id: int, annotator_id: int) -> None:
    """A page with two labellers (rounds 0 and 1 of one run), as the Evaluate and History pages would show."""
    import services.database
    from components.annotate import render_sentence_labeller
    from services.annotations import ModelVerdict, Target

    eng = services.database.get_engine()
    verdicts = [ModelVerdict(0, "consistent", "Round-zero reason"), ModelVerdict(1, "inconsistent", "Wrong year")]
    for r in (0, 1):
        render_sentence_labeller(
            eng,
            annotator_id=annotator_id,
            target=Target.run(run_id, r),
            sentences=["A.", "B."],
            verdicts=verdicts if r == 0 else None,
            blind=False,
            key_prefix="ev",
        )


def test_the_labeller_works_for_run_rounds_with_unique_keys():
    from streamlit.testing.v1 import AppTest

    from db.engine import get_session
    from db.models import RunCreate
    from db.runs import create_run

    eng = services.database.get_engine()
    with get_session(eng) as s:
        run_id = create_run(session=s, data=RunCreate(reference="Ref.", candidate="A. B.")).id
    ada = an.create_annotator(eng, "ada").id
    at = AppTest.from_function(_two_rounds, args=(run_id, ada), default_timeout=WAIT_LIMIT).run()
    assert not at.exception
    keys = [b.key for b in at.button]
    assert len(keys) == len(set(keys)) == 8 and all(k.startswith(f"ev_run{run_id}r") for k in keys)
    assert "Round-zero reason" in page_text(at), "blind mode off: the verdicts show before any answer"
    at = at.button(key=f"ev_run{run_id}r1_1_0").click().run()
    assert not at.exception
    assert [(x.round_idx, x.sentence_idx, x.label) for x in an.labels_for_run(eng, run_id, 1)] == [(1, 1, 0)]
    assert an.labels_for_run(eng, run_id, 0) == []
