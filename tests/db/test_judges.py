"""A judge's items as the Judges page reads them, on SQLite and PostgreSQL: the driver's own rows for a model
judge, and for the evidence checker the parts of its stored results that the database takes out."""

from __future__ import annotations

import math

import numpy as np
from sqlalchemy import update
from sqlmodel import Session

from db import judges as db
from db.engine import get_session
from db.models import BatchItem
from services import judges
from tests.metaeval_seed import Item, seed

C, X, U = "consistent", "inconsistent", "unknown"
ITEMS = [
    Item([[C, C]]),
    Item([[C, X, U]]),
    Item([[X]], status="failed"),
    Item([[C]], status="pending"),
]


def _costs(engine, bid: int) -> None:
    with Session(engine) as s:
        for n, item_id in enumerate(sorted(r.item_id for r in s.query(BatchItem).filter(BatchItem.batch_id == bid))):
            s.execute(
                update(BatchItem)
                .where(BatchItem.batch_id == bid, BatchItem.item_id == item_id)
                .values(calls=n + 1, cache_hits=n, prompt_tokens=100 * n, completion_tokens=7 * n, latency_ms=2.5 * n)
            )
        s.commit()


def test_a_model_judges_items_in_dataset_order_with_missing_scores_as_nan(engine):
    _, bid = seed(engine, ITEMS)
    _costs(engine, bid)
    with get_session(engine) as session:
        rows = db.judge_items(session=session, batch_id=bid, with_result=False)
    assert [len(r) for r in rows] == [len(db.JUDGE_ITEM_FIELDS)] * 4
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    assert frame["status"].tolist() == ["done", "done", "failed", "pending"]
    assert frame["item_id"].is_monotonic_increasing
    assert frame["score"].iloc[0] == 1.0 and frame["score"].iloc[1] == 0.5
    assert frame["score"].iloc[2:].isna().all()
    assert frame["verdict"].tolist()[:2] == [1.0, 0.0] and frame["verdict"].iloc[2:].isna().all()
    assert frame["prediction"].tolist()[:2] == [1.0, 0.5] and frame["prediction"].iloc[2:].isna().all()
    assert frame["n_sentences"].tolist() == [2, 3, 1, 1] and frame["n_unknown"].tolist() == [0, 1, 0, 0]
    assert frame["calls"].tolist() == [1, 2, 3, 4] and frame["prompt_tokens"].tolist() == [0, 100, 200, 300]
    assert frame["completion_tokens"].tolist() == [0, 7, 14, 21] and frame["cache_hits"].tolist() == [0, 1, 2, 3]
    assert frame["latency_ms"].tolist() == [0.0, 2.5, 5.0, 7.5]
    for name in ("calls", "n_sentences", "prompt_tokens"):
        assert np.issubdtype(frame[name].dtype, np.integer)


def test_the_evidence_checkers_items_carry_their_decoded_results(engine):
    items = [Item([[C, C]], flag=True), Item([[C, X]], flag=None), Item([[X]], status="failed")]
    _, bid = seed(engine, items, method="evidence")
    with get_session(engine) as session:
        rows = db.judge_items(session=session, batch_id=bid, with_result=True)
    assert isinstance(rows[0][-1], dict) and rows[2][-1] is None
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    # the first round's model_is_consistent is the verdict: True, then undecided; a failed item has none
    assert frame["verdict"].iloc[0] == 1.0 and math.isnan(frame["verdict"].iloc[1])
    assert math.isnan(frame["verdict"].iloc[2]) and "result" not in frame


# The evidence checker's prediction and verdict as they were read before the database took the results apart:
# each item's whole result decoded in Python (the definition the database's reading must keep).
def _full_json_score(result: dict | None) -> float | None:
    if not result:
        return None
    rounds = result.get("rounds") or []
    first = rounds[0] if rounds else {}
    for where in (result, first):
        v = where.get("checker_score")
        if isinstance(v, int | float):
            return float(v)
    support = [
        s["evidence"]["support"]
        for s in first.get("sentences") or []
        if isinstance(s.get("evidence"), dict) and isinstance(s["evidence"].get("support"), int | float)
    ]
    return float(np.mean(support)) if support else None


def _full_json_verdict(result: dict | None) -> float:
    rounds = (result or {}).get("rounds") or []
    first = rounds[0] if rounds else {}
    if "model_is_consistent" in first:
        flag = first["model_is_consistent"]
        return np.nan if flag is None else float(bool(flag))
    v = first.get("score")
    return float(float(v) >= 1.0 - 1e-9) if isinstance(v, int | float) else np.nan


def _sentence(support=None, evidence=True) -> dict:
    s = {"index": 0, "text": "s", "verdict": "consistent", "reason": "", "mark": 1, "rule_mark": 1, "error": None}
    if evidence:
        s["evidence"] = {"top": [], "novel": []} | ({} if support is None else {"support": support})
    return s


# Results of every shape the checker stored, old and new: a calibrated score on the round or on the item, none
# (the mean support then, over the sentences that have one), model_is_consistent true, false, undecided, absent
# (Eq. 3's score then: 1, below 1, none), integers where floats are usual, no rounds, no result at all.
SHAPES: list[dict | None] = [
    {"rounds": [{"checker_score": 0.83, "model_is_consistent": True, "score": 1.0, "sentences": [_sentence(0.9)]}]},
    {"rounds": [{"checker_score": 0.12, "model_is_consistent": False, "score": 0.5, "sentences": [_sentence(0.2)]}]},
    {"rounds": [{"checker_score": 0.47, "model_is_consistent": None, "score": None, "sentences": [_sentence(0.5)]}]},
    {"checker_score": 0.61, "rounds": [{"checker_score": 0.2, "model_is_consistent": True, "sentences": []}]},
    {"rounds": [{"model_is_consistent": True, "score": 1, "sentences": [_sentence(0.25), _sentence(1)]}]},
    {"rounds": [{"score": 1.0, "sentences": [_sentence(0.3), _sentence(evidence=False), _sentence(0.6)]}]},
    {"rounds": [{"score": 0.75, "sentences": [_sentence(), _sentence(0.4)]}]},
    {"rounds": [{"score": None, "sentences": [_sentence(evidence=False)]}]},
    {"rounds": [{"checker_score": 1, "model_is_consistent": 0, "score": 0, "sentences": []}]},
    {"rounds": [], "final_candidate": ""},
    {"rounds": [{"model_is_consistent": True, "checker_score": None, "sentences": [_sentence(True)]}]},
    None,
]


def test_the_evidence_checkers_prediction_and_verdict_are_those_of_its_whole_results(engine):
    items = [Item([[C]], status="failed" if r is None else "done") for r in SHAPES]
    _, bid = seed(engine, items, method="evidence")
    with Session(engine) as s:
        ids = sorted(r.id for r in s.query(BatchItem).filter(BatchItem.batch_id == bid))
        for i, result in zip(ids, SHAPES, strict=True):
            s.execute(update(BatchItem).where(BatchItem.id == i).values(result=result, score=0.5))
        s.commit()
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    done = [r is not None for r in SHAPES]
    expected_pred = [np.nan if (p := _full_json_score(r)) is None and not d else 0.5 if p is None else p
                     for r, d in zip(SHAPES, done, strict=True)]  # fmt: skip
    expected_verdict = [_full_json_verdict(r) if d else np.nan for r, d in zip(SHAPES, done, strict=True)]
    np.testing.assert_allclose(frame["prediction"].to_numpy(), np.clip(expected_pred, 0, 1), equal_nan=True)
    np.testing.assert_array_equal(frame["verdict"].to_numpy(), expected_verdict)
    # the database's parts are the ones Python reads from the decoded results
    with get_session(engine) as session:
        parts = db.checker_parts(session=session, batch_id=bid)
        rows = db.judge_items(session=session, batch_id=bid, with_result=True)
    for r in rows:
        got, want = parts[r[0]], judges.data.checker_parts(r[-1])
        assert [None if v is None else round(float(v), 9) for v in got] == [
            None if v is None else round(float(v), 9) for v in want
        ], r[-1]


def test_the_evidence_checkers_results_are_not_sent_whole_to_the_app(engine, monkeypatch):
    """SQLite and PostgreSQL take the two numbers out of each result themselves: no result is decoded here."""
    _, bid = seed(engine, [Item([[C, C]], flag=True), Item([[X]], flag=False)], method="evidence")
    real = db.judge_items

    def no_results(**kw):
        assert not kw.get("with_result"), "the whole results were read"
        return real(**kw)

    monkeypatch.setattr(db, "judge_items", no_results)
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    assert frame["verdict"].tolist() == [1.0, 0.0]
