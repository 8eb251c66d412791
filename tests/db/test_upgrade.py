"""On SQLite and PostgreSQL: the schema at head matches the models, and a database made by the first
released schema (0001), with data in it, upgrades to the current schema with its data intact."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlmodel import SQLModel

from db import runs as db_runs
from db.cache import SqlCache
from db.engine import alembic_config, get_session, make_engine, upgrade
from db.models import RunCreate
from services import dcr
from services.run_records import load_run

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
REF = "The bridge opened in 1932. It is 503 metres long."
CAND = "The bridge opened in 1923. It is 503 metres long."


def _insert_0001_data(conn) -> None:
    """Rows as version 0001 of the app wrote them (plain SQL: today's models may have moved on)."""
    docs = [(1, hashlib.sha256(REF.encode()).hexdigest(), REF), (2, hashlib.sha256(CAND.encode()).hexdigest(), CAND)]
    for i, sha, body in docs:
        conn.execute(
            text("INSERT INTO document (id, sha256, text, n_chars, created_at) VALUES (:i, :s, :t, :n, :c)"),
            {"i": i, "s": sha, "t": body, "n": len(body), "c": WHEN},
        )
    conn.execute(
        text(
            "INSERT INTO run (id, title, source, task, criteria, method, amc, max_rounds, backend_kind, model,"
            " base_url, params, prompt_versions, reference_id, candidate_id, status, error, initial_score,"
            " final_score, n_rounds, created_at, updated_at) VALUES (7, 'bridge', 'app', 'summarization', '',"
            " 'dce-amc', 'rule', 3, 'openai', 'gpt-x', 'http://example.invalid/v1', :params, :pv, 1, 2, 'done',"
            " NULL, 0.5, 1.0, 2, :c, :c)"
        ),
        {"params": json.dumps({"temperature": 0.0, "seed": 3}), "pv": json.dumps({"dce": "dce@1"}), "c": WHEN},
    )
    for rid, idx, body, z_hat in ((11, 0, CAND, 0.5), (12, 1, REF, 1.0)):
        conn.execute(
            text(
                "INSERT INTO eval_round (id, run_id, idx, text, k, alpha, beta, z, z_hat, n_judged, n_unknown,"
                " model_is_consistent, error, improve_error, notes, extras, amc_agree, amc_compared, created_at)"
                " VALUES (:id, 7, :idx, :t, 2, 0, 0, :z, :zh, 2, 0, :mic, NULL, NULL, :notes, :extras, 2, 2, :c)"
            ),
            {
                "id": rid,
                "idx": idx,
                "t": body,
                "z": 2 * z_hat - 1,
                "zh": z_hat,
                "mic": idx == 1,
                "notes": json.dumps(["kept note ü"]),
                "extras": json.dumps([]),
                "c": WHEN,
            },
        )
    sentences = [
        (11, 0, "The bridge opened in 1923.", "inconsistent", "The article says 1932.", -1),
        (11, 1, "It is 503 metres long.", "consistent", "Stated in the article.", 1),
        (12, 0, "The bridge opened in 1932.", "consistent", "Stated.", 1),
        (12, 1, "It is 503 metres long.", "consistent", "Stated.", 1),
    ]
    for rid, idx, body, verdict, reason, mark in sentences:
        conn.execute(
            text(
                "INSERT INTO sentence_verdict (round_id, idx, text, verdict, reason, mark, rule_mark, error)"
                " VALUES (:r, :i, :t, :v, :why, :m, :m, NULL)"
            ),
            {"r": rid, "i": idx, "t": body, "v": verdict, "why": reason, "m": mark},
        )
    conn.execute(
        text(
            "INSERT INTO rewrite (round_id, idx, before, after, reason, accepted)"
            " VALUES (11, 0, 'The bridge opened in 1923.', 'The bridge opened in 1932.', 'year', :acc)"
        ),
        {"acc": False},
    )
    conn.execute(
        text(
            "INSERT INTO llm_cache (key, model, prompt_version, payload, created_at)"
            " VALUES (:k, 'gpt-x', 'dce@1', :p, :c)"
        ),
        {"k": "k" * 64, "p": json.dumps({"raw": '{"reason": []}'}), "c": WHEN},
    )
    conn.execute(
        text(
            "INSERT INTO usage_event (run_id, stage, prompt_version, cached, requests, prompt_tokens,"
            " completion_tokens, latency_ms, error, created_at) VALUES (7, 'dce', 'dce@1', :cached, 1, 120, 30,"
            " 850.0, NULL, :c)"
        ),
        {"cached": False, "c": WHEN},
    )


def test_the_schema_at_head_matches_the_models(db_url):
    engine = make_engine(db_url)
    heads = set(ScriptDirectory.from_config(alembic_config(engine)).get_heads())
    with engine.connect() as conn:
        assert set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == heads
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": False})
        diff = compare_metadata(ctx, SQLModel.metadata)
    assert diff == [], f"models and migrations differ on {engine.dialect.name}: {diff}"
    engine.dispose()


def test_a_database_made_by_the_first_schema_upgrades_with_its_data(db_url):
    old = make_engine(db_url, migrate=False)
    upgrade(old, "0001")
    with old.begin() as conn:
        _insert_0001_data(conn)
        if conn.dialect.name == "postgresql":  # explicit ids: move the sequences past them, as a real app had
            for table in ("document", "run", "eval_round"):
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), 100)"))
    old.dispose()

    engine = make_engine(db_url)  # the app opening the old database: upgrade to every head
    heads = set(ScriptDirectory.from_config(alembic_config(engine)).get_heads())
    with engine.connect() as conn:
        assert set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == heads
    with get_session(engine) as session:
        d = load_run(session=session, run_id=7)
        counts = db_runs.counts(session=session)
    assert d is not None and d.reference == REF and d.candidate == CAND
    assert d.run.params == {"temperature": 0.0, "seed": 3} and d.run.prompt_versions == {"dce": "dce@1"}
    assert d.run.created_at.replace(tzinfo=d.run.created_at.tzinfo or UTC) == WHEN
    r0, r1 = d.rounds
    assert [v.verdict for v in r0.evaluation.sentences] == ["inconsistent", "consistent"]
    assert [v.reason for v in r0.evaluation.sentences] == ["The article says 1932.", "Stated in the article."]
    assert r0.evaluation.notes == ["kept note ü"] and r0.evaluation.model_is_consistent is False
    assert r1.evaluation.model_is_consistent is True and r1.evaluation.all_consistent
    assert [(w.before, w.after, w.accepted) for w in r0.rewrites] == [
        ("The bridge opened in 1923.", "The bridge opened in 1932.", False)
    ]
    assert d.usage["calls"] == 1 and d.usage["prompt_tokens"] == 120
    assert counts["documents"] == 2 and counts["cached answers"] == 1 and counts["sentence verdicts"] == 4
    assert SqlCache(engine).get("k" * 64) == {"raw": '{"reason": []}'}

    # The upgraded database takes new work beside the old.
    with get_session(engine) as session:
        run = db_runs.create_run(
            session=session, data=RunCreate(reference=REF, candidate="A new candidate.", model="m")
        )
        new_id = run.id
    with get_session(engine) as session:
        assert load_run(session=session, run_id=new_id).candidate == "A new candidate."
        assert db_runs.counts(session=session)["runs"] == 2 and db_runs.counts(session=session)["documents"] == 3
    assert dcr.compose_final(d.rounds)  # old rounds still compose a final text
    engine.dispose()


def test_a_plain_postgresql_url_uses_the_installed_driver(pg_url):
    """DATABASE_URL=postgresql://... (or postgres://, as hosting services write it) works as given."""
    for scheme in ("postgresql://", "postgres://"):
        engine = make_engine(pg_url.replace("postgresql+psycopg://", scheme))
        assert engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
        with get_session(engine) as session:
            assert db_runs.counts(session=session)["runs"] == 0
        engine.dispose()
