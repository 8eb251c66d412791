"""The ConsEval query functions: studies with items and saved answers, answers kept on conflict, raters."""

from __future__ import annotations

from db import conseval as q
from db.engine import get_session

ITEMS = [
    q.NewItem(fields={"idx": 0, "criterion": "Helpfulness", "query": "q0", "response": "r0"}),
    q.NewItem(
        fields={
            "idx": 1,
            "criterion": "Helpfulness",
            "query": "q1",
            "response": "r1",
            "oracle_score": 4.0,
            "oracle_scale": "5-P",
        },
        ratings=[
            {
                "rater": "oracle:gpt",
                "method": "imported",
                "granularity": "-",
                "scale": "5-P",
                "sample": -1,
                "value": 3.0,
                "raw": "3",
            }
        ],
    ),
]


def answer(item_id: int, sample: int, value: float | None = 4.0, problem: str | None = None) -> dict:
    return {
        "item_id": item_id,
        "rater": "judge",
        "method": "base",
        "granularity": "none",
        "scale": "5-P",
        "sample": sample,
        "value": value,
        "raw": "" if value is None else f"{value:g}",
        "problem": problem,
    }


def new_study(engine, n_planned: int = 4) -> int:
    with get_session(engine) as session:
        return q.create_study(
            session=session, name="s", config={"criteria": ["Helpfulness"]}, n_planned=n_planned, items=ITEMS
        )


def test_a_study_is_saved_with_its_items_in_order_and_their_imported_answers(engine):
    sid = new_study(engine)
    with get_session(engine) as session:
        study = q.get_study(session=session, study_id=sid)
        assert study is not None and study.status == "queued" and study.n_planned == 4
        assert [s.id for s in q.list_studies(session=session)] == [sid]
        rows = q.item_rows(session=session, study_id=sid)
        assert [r["query"] for r in rows] == ["q0", "q1"] and set(rows[0]) == set(q.ITEM_COLUMNS)
        assert rows[1]["oracle_score"] == 4.0
        ratings = q.rating_rows(session=session, study_id=sid)
        assert ratings == [(rows[1]["id"], "oracle:gpt", "imported", "-", "5-P", -1, 3.0, "3", None)]
        assert q.get_study(session=session, study_id=sid + 1) is None
        assert not q.study_exists(session=session, study_id=sid + 1)


def test_answers_saved_meanwhile_are_kept_and_not_counted(engine):
    sid = new_study(engine)
    with get_session(engine) as session:
        item = q.list_items(session=session, study_id=sid)[0].id
        assert q.insert_ratings(session=session, study_id=sid, rows=[answer(item, 0, 4.0)]) == 1
    with get_session(engine) as session:
        added = q.insert_ratings(session=session, study_id=sid, rows=[answer(item, 0, 1.0), answer(item, 1)])
        # psycopg does not say how many rows an executemany inserted: every row given is counted there
        assert added == (1 if engine.dialect.name == "sqlite" else 2)
        assert q.insert_ratings(session=session, study_id=sid, rows=[]) == 0
        values = {r[5]: r[6] for r in q.rating_rows(session=session, study_id=sid) if r[1] == "judge"}
        assert values == {0: 4.0, 1: 4.0}


def test_answers_with_a_problem_are_counted_dropped_and_the_study_queued_again(engine):
    sid = new_study(engine)
    with get_session(engine) as session:
        item = q.list_items(session=session, study_id=sid)[0].id
        rows = [answer(item, 0, None, "no oracle example for this criterion"), answer(item, 1, None, "other")]
        q.insert_ratings(session=session, study_id=sid, rows=rows + [answer(item, 2)])
        q.save_results(session=session, study_id=sid, results={"rows": []})
    with get_session(engine) as session:
        study = q.get_study(session=session, study_id=sid)
        assert study.results == {"rows": []}
        assert q.count_problem_ratings(session=session, study_id=sid, prefix="no oracle example") == 1
        n = q.delete_problem_ratings(session=session, study_id=sid, prefix="no oracle example")
        q.requeue_study(session=session, study_id=sid, n_forgotten=n)
    with get_session(engine) as session:
        assert n == 1 and q.count_problem_ratings(session=session, study_id=sid, prefix="no oracle example") == 0
        assert q.get_study(session=session, study_id=sid).status == "queued"
        assert len(q.rating_rows(session=session, study_id=sid)) == 3


def test_raters_their_scores_and_a_revoked_link(engine):
    sid = new_study(engine)
    with get_session(engine) as session:
        items = [it.id for it in q.list_items(session=session, study_id=sid)]
        ada = q.add_rater(session=session, study_id=sid, name="ada")
        bob = q.add_rater(session=session, study_id=sid, name="bob")
    assert ada.active and ada.n_rated == 0 and len(ada.token) >= 30
    with get_session(engine) as session:
        assert q.rater_named(session=session, study_id=sid, name="ada")
        assert not q.rater_named(session=session, study_id=sid, name="cy")
        for item in items:
            q.save_human_rating(session=session, rater_id=ada.id, item_id=item, scale="5-P", value=2.0)
        q.save_human_rating(session=session, rater_id=ada.id, item_id=items[0], scale="5-P", value=5.0)
        q.save_human_rating(session=session, rater_id=bob.id, item_id=items[0], scale="5-P", value=3.0)
    with get_session(engine) as session:
        assert [(r.name, r.n_rated) for r in q.list_raters(session=session, study_id=sid)] == [("ada", 2), ("bob", 1)]
        rows = sorted(q.human_rating_rows(session=session, study_id=sid))
        assert rows == [
            (ada.id, "ada", items[0], "5-P", 5.0),
            (ada.id, "ada", items[1], "5-P", 2.0),
            (bob.id, "bob", items[0], "5-P", 3.0),
        ]
        assert q.active_rater_by_token(session=session, token=ada.token).n_rated == 2
        q.revoke_rater(session=session, rater_id=bob.id)
    with get_session(engine) as session:
        assert q.active_rater_by_token(session=session, token=bob.token) is None
        assert q.get_rater(session=session, rater_id=bob.id).revoked_at is not None
        assert q.get_item(session=session, item_id=items[0]).study_id == sid
        assert len(q.human_rating_rows(session=session, study_id=sid)) == 3


def test_deleting_a_study_deletes_everything_of_it(engine):
    sid, other = new_study(engine), new_study(engine)
    with get_session(engine) as session:
        item = q.list_items(session=session, study_id=sid)[0].id
        rater = q.add_rater(session=session, study_id=sid, name="ada")
        q.save_human_rating(session=session, rater_id=rater.id, item_id=item, scale="5-P", value=3.0)
    with get_session(engine) as session:
        assert q.delete_study(session=session, study_id=sid)
    with get_session(engine) as session:
        assert not q.delete_study(session=session, study_id=sid)
        assert q.item_rows(session=session, study_id=sid) == [] and q.rating_rows(session=session, study_id=sid) == []
        assert (
            q.list_raters(session=session, study_id=sid) == []
            and q.get_rater(session=session, rater_id=rater.id) is None
        )
        assert len(q.item_rows(session=session, study_id=other)) == 2
