"""Schema migrations, SQLite settings and the query functions."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, select

from db import runs as db_runs
from db.cache import SqlCache
from db.engine import alembic_config, get_session, make_engine
from db.models import Document, EvalRound, RunCreate
from services import dcr
from services.dcr import Evaluation, ExtraReason, Rewrite, Round, SentenceVerdict
from services.llm import CallRecord
from services.run_records import RunDetail, load_run, save_round, save_usage

REF = "The Eiffel Tower stands in Paris. It was completed in 1889."
CAND = "The Eiffel Tower is in Paris. It was completed in 1999."


def run_data(candidate: str = CAND, reference: str = REF, **kw) -> RunCreate:
    return RunCreate(reference=reference, candidate=candidate, title=candidate[:40], model="fake-model", **kw)


def make_round(index: int, sentences: list[str], marks: list[int | None], rewrites=(), extras=()) -> Round:
    verdicts = [
        SentenceVerdict(
            index=i,
            text=s,
            verdict=dcr.verdict_of(m),
            reason=None if m is None else f"reason {i}",
            mark=m,
            rule_mark=m,
            error="The model gave no reason for this sentence." if m is None else None,
        )
        for i, (s, m) in enumerate(zip(sentences, marks, strict=True))
    ]
    extra = [ExtraReason(text=t, mark=m) for t, m in extras]
    ev = Evaluation(
        sentences=verdicts,
        extras=extra,
        score=dcr.score_evaluation(marks, [x.mark for x in extra]),
        model_is_consistent=False,
        notes=["a note"],
        amc_agreement=(1, 2),
    )
    return Round(index=index, sentences=list(sentences), evaluation=ev, rewrites=list(rewrites))


def saved_run(engine, *, rounds: list[Round], records: list[CallRecord] = (), **kw) -> int:
    with get_session(engine) as session:
        run = db_runs.create_run(session=session, data=run_data(**kw))
        for rnd in rounds:
            save_round(session=session, run_id=run.id, rnd=rnd)
        save_usage(session=session, run_id=run.id, records=list(records))
        db_runs.finish_run(session=session, run_id=run.id, status="done")
        return run.id


def load(engine, run_id: int) -> RunDetail | None:
    with get_session(engine) as session:
        return load_run(session=session, run_id=run_id)


SENTS = ["The Eiffel Tower is in Paris.", "It was completed in 1999."]
FIXED = ["The Eiffel Tower is in Paris.", "It was completed in 1889."]


def two_rounds() -> list[Round]:
    r0 = make_round(
        0, SENTS, [1, -1], rewrites=[Rewrite(1, SENTS[1], FIXED[1], reason="year")], extras=[("overall bad", -1)]
    )
    r1 = make_round(1, FIXED, [1, 1])
    return [r0, r1]


# -- migrations and SQLite settings -----------------------------------------------------------
def test_fresh_file_db_is_at_head_without_drift(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    heads = set(ScriptDirectory.from_config(alembic_config(engine)).get_heads())
    with engine.connect() as conn:
        assert set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == heads
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": False})
        diff = compare_metadata(ctx, SQLModel.metadata)
    assert diff == [], f"models and migrations differ: {diff}"
    engine.dispose()


def test_file_db_uses_wal_and_foreign_keys(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'wal.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar_one().lower() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
    engine.dispose()


def test_foreign_keys_are_enforced(engine):
    with pytest.raises(IntegrityError), get_session(engine) as session:
        session.add(EvalRound(run_id=12345, text="orphan"))
        session.flush()


def test_reopening_a_file_db_keeps_its_runs(tmp_path):
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    engine = make_engine(url)
    run_id = saved_run(engine, rounds=two_rounds())
    engine.dispose()

    again = make_engine(url)  # runs the upgrade again: must be a no-op
    detail = load(again, run_id)
    assert detail is not None and detail.candidate == CAND
    assert [r.index for r in detail.rounds] == [0, 1]
    with get_session(again) as session:
        assert db_runs.counts(session=session)["runs"] == 1
    with again.connect() as conn:
        heads = ScriptDirectory.from_config(alembic_config(again)).get_heads()
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == len(heads)
    again.dispose()


# -- round trips ------------------------------------------------------------------------------
def test_save_and_load_round_trip(engine):
    rounds = two_rounds()
    records = [
        CallRecord(
            stage="dce",
            prompt_version="dce@1",
            cached=False,
            requests=2,
            prompt_tokens=100,
            completion_tokens=20,
            latency_ms=1500.0,
        ),
        CallRecord(stage="dce", prompt_version="dce@1", cached=True),
        CallRecord(
            stage="rai",
            prompt_version="rai@1",
            cached=False,
            requests=1,
            prompt_tokens=50,
            completion_tokens=10,
            latency_ms=500.0,
            error="boom",
        ),
    ]
    run_id = saved_run(engine, rounds=rounds, records=records, task="semantic", criteria="be strict")
    d = load(engine, run_id)
    assert d.reference == REF and d.candidate == CAND
    assert d.run.status == "done" and d.run.task == "semantic" and d.run.criteria == "be strict"
    assert d.run.n_rounds == 2
    assert d.run.initial_score == pytest.approx(0.5) and d.run.final_score == 1.0

    r0, r1 = d.rounds
    assert [v.verdict for v in r0.evaluation.sentences] == ["consistent", "inconsistent"]
    assert [(v.mark, v.rule_mark, v.reason) for v in r0.evaluation.sentences] == [
        (1, 1, "reason 0"),
        (-1, -1, "reason 1"),
    ]
    assert r0.sentences == SENTS and r1.sentences == FIXED
    assert r0.evaluation.score == rounds[0].evaluation.score
    assert (r0.evaluation.score.alpha, r0.evaluation.score.beta) == (1.0, -1.0)
    assert [(x.text, x.mark) for x in r0.evaluation.extras] == [("overall bad", -1)]
    assert r0.evaluation.notes == ["a note"] and r0.evaluation.amc_agreement == (1, 2)
    assert r0.evaluation.model_is_consistent is False
    assert [(w.index, w.before, w.after, w.reason, w.accepted) for w in r0.rewrites] == [
        (1, SENTS[1], FIXED[1], "year", True)
    ]
    assert r1.rewrites == [] and r1.evaluation.all_consistent

    assert d.usage["calls"] == 3 and d.usage["cache_hits"] == 1 and d.usage["errors"] == 1
    assert (d.usage["prompt_tokens"], d.usage["completion_tokens"], d.usage["latency_s"]) == (150, 30, 2.0)
    by_stage = {s["stage"]: s for s in d.usage_by_stage}
    assert by_stage["dce"]["calls"] == 2 and by_stage["rai"]["errors"] == 1


def test_unknown_sentences_and_missing_score_round_trip(engine):
    failed = make_round(0, SENTS, [None, None])
    failed.evaluation.score = None
    failed.evaluation.error = "Cannot reach the server"
    run_id = saved_run(engine, rounds=[failed])
    d = load(engine, run_id)
    ev = d.rounds[0].evaluation
    assert ev.score.z_hat is None and d.run.initial_score is None
    assert ev.error == "Cannot reach the server"
    assert [v.verdict for v in ev.sentences] == ["unknown", "unknown"] and ev.n_judged == 0


def test_saving_a_round_again_replaces_it(engine):
    rounds = two_rounds()
    run_id = saved_run(engine, rounds=rounds)
    replaced = make_round(0, SENTS, [1, 1])
    with get_session(engine) as session:
        save_round(session=session, run_id=run_id, rnd=replaced)
        counts = db_runs.counts(session=session)
    assert counts["rounds"] == 2 and counts["sentence verdicts"] == 4
    d = load(engine, run_id)
    assert d.rounds[0].rewrites == [] and d.rounds[0].evaluation.all_consistent
    assert d.run.initial_score == 1.0 and d.run.final_score == 1.0 and d.run.n_rounds == 2


def test_set_rewrite_accepted_changes_the_final_text(engine):
    run_id = saved_run(engine, rounds=two_rounds())
    assert dcr.compose_final(load(engine, run_id).rounds) == FIXED
    with get_session(engine) as session:
        assert db_runs.set_rewrite_accepted(session=session, run_id=run_id, round_idx=0, sentence_idx=1, accepted=False)
        assert not db_runs.set_rewrite_accepted(
            session=session, run_id=run_id, round_idx=0, sentence_idx=0, accepted=False
        )
        assert not db_runs.set_rewrite_accepted(
            session=session, run_id=run_id, round_idx=5, sentence_idx=1, accepted=True
        )
    d = load(engine, run_id)
    assert d.rounds[0].rewrites[0].accepted is False
    assert dcr.compose_final(d.rounds) == SENTS


def test_delete_run_removes_its_rows_but_keeps_documents(engine):
    records = [CallRecord(stage="dce", prompt_version="p", cached=False, requests=1)]
    run_id = saved_run(engine, rounds=two_rounds(), records=records)
    keep_id = saved_run(engine, rounds=[make_round(0, SENTS, [1, 1])], records=records, candidate="Other text.")
    with get_session(engine) as session:
        before = db_runs.counts(session=session)
        assert db_runs.delete_run(session=session, run_id=run_id)
    with get_session(engine) as session:
        after = db_runs.counts(session=session)
        assert not db_runs.delete_run(session=session, run_id=run_id)
        assert {r for r in session.exec(select(EvalRound.run_id)).all()} == {keep_id}
    assert load(engine, run_id) is None
    assert after["runs"] == before["runs"] - 1 == 1
    assert after["rounds"] == 1 and after["sentence verdicts"] == 2
    assert after["model calls"] == 1
    assert after["documents"] == before["documents"] == 3  # REF, CAND, "Other text."
    assert load(engine, keep_id).rounds[0].evaluation.all_consistent


def test_documents_are_stored_once(engine):
    saved_run(engine, rounds=[])
    saved_run(engine, rounds=[])
    saved_run(engine, rounds=[], candidate="A different candidate.")
    with get_session(engine) as session:
        docs = session.exec(select(Document)).all()
    assert sorted(d.text for d in docs) == sorted([REF, CAND, "A different candidate."])
    assert all(d.n_chars == len(d.text) and len(d.sha256) == 64 for d in docs)


def test_list_runs_newest_first(engine):
    ids = [saved_run(engine, rounds=[], candidate=f"Candidate number {i}. " + "x" * 300) for i in range(3)]
    with get_session(engine) as session:
        rows = db_runs.list_runs(session=session)
        limited = db_runs.list_runs(session=session, limit=2)
    assert [r.id for r, _ in rows] == ids[::-1]
    assert rows[0][1].startswith("Candidate number 2.") and len(rows[0][1]) == 160
    assert [r.id for r, _ in limited] == ids[:0:-1]


def test_counts(engine):
    records = [
        CallRecord(stage="dce", prompt_version="p", cached=False, requests=3),
        CallRecord(stage="dce", prompt_version="p", cached=True),
    ]
    saved_run(engine, rounds=two_rounds(), records=records)
    SqlCache(engine).put("k1", model="m", prompt_version="p", payload={"raw": "{}"})
    with get_session(engine) as session:
        assert db_runs.counts(session=session) == {
            "runs": 1,
            "documents": 2,
            "rounds": 2,
            "sentence verdicts": 4,
            "cached answers": 1,
            "model calls": 3,
        }


def test_empty_db_counts_are_zero(engine):
    with get_session(engine) as session:
        assert set(db_runs.counts(session=session).values()) == {0}


def test_sql_cache_put_twice_keeps_the_first(engine):
    cache = SqlCache(engine)
    assert cache.get("key") is None
    cache.put("key", model="m", prompt_version="p@1", payload={"raw": '{"a": 1}'})
    cache.put("key", model="m", prompt_version="p@1", payload={"raw": '{"a": 2}'})
    assert cache.get("key") == {"raw": '{"a": 1}'}
    assert SqlCache(engine).get("key") == {"raw": '{"a": 1}'}


def test_get_session_rolls_back_on_error(engine):
    with pytest.raises(RuntimeError), get_session(engine) as session:
        db_runs.create_run(session=session, data=run_data())
        raise RuntimeError("boom")
    with get_session(engine) as session:
        assert db_runs.counts(session=session)["runs"] == 0
