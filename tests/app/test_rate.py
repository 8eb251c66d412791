"""The Rate page: a person rates a study's items through their personal link; revoked links stop working."""

from __future__ import annotations

import services.database
from services import conseval as ce
from tests.app.helpers import click, texts
from tests.support.conseval import seeded_study

RATE = "pages/9_Rate.py"


def test_without_a_token_the_page_explains_itself(open_page):
    at = open_page(RATE)
    assert not at.exception
    assert any("personal link" in i for i in texts(at.info))


def test_an_unknown_or_revoked_link_is_refused(open_page, judge):
    sid = seeded_study(judge, n_items=2)
    eng = services.database.get_engine()
    bob = ce.add_rater(eng, sid, "bob")
    ce.revoke_rater(eng, bob.id)
    for token in ("not-a-token", bob.token):
        at = open_page(RATE, query={"token": token})
        assert not at.exception
        assert any("not valid" in e for e in texts(at.error))
        assert not at.radio


def test_a_rater_rates_items_on_every_scale(open_page, judge):
    sid = seeded_study(judge, n_items=3)
    eng = services.database.get_engine()
    ada = ce.add_rater(eng, sid, "ada")
    at = open_page(RATE, query={"token": ada.token})
    assert not at.exception
    assert any("You are **ada**" in m for m in texts(at.markdown))
    assert [r.label for r in at.radio] == ["5-P (1-5)", "Binary (No, Yes)", "10-P (1-10)"]
    items = ce.items_frame(eng, sid)
    first = int(items.id[0])
    at.radio(key=f"rt_{first}_5-P").set_value(4.0)
    at.radio(key=f"rt_{first}_Binary").set_value(1.0)
    at = click(at, "Save and next")
    assert not at.exception
    h = ce.human_ratings_frame(eng, sid)
    assert sorted(zip(h.scale, h.value, strict=True)) == [("5-P", 4.0), ("Binary", 1.0)]
    assert at.session_state.rt_idx == 1
    assert any("Not yet rated on: 10-P" in s for s in texts(at.success))
    # back to the first item: its scores are shown, and a change replaces them
    at.selectbox(key="rt_idx").set_value(0)
    at = at.run()
    assert at.radio(key=f"rt_{first}_5-P").value == 4.0
    at.radio(key=f"rt_{first}_5-P").set_value(2.0)
    at.radio(key=f"rt_{first}_10-P").set_value(3.0)
    at = click(at, "Save")
    h = ce.human_ratings_frame(eng, sid)
    assert len(h) == 3 and dict(zip(h.scale, h.value, strict=True))["5-P"] == 2.0
    assert any("1 of 3 items rated" in p.proto.text for p in at.get("progress"))


def test_the_owner_without_a_token_is_pointed_to_where_rater_links_are_made(open_page):
    at = open_page(RATE)
    assert not at.exception
    (link,) = [x for x in at.main.get("page_link") if "ConsEval" in x.proto.label]
    assert link.proto.label == "ConsEval → Human raters" and "ConsEval" in link.proto.page, link.proto
