"""The PostgreSQL test databases that are emptied and handed on (tests/db/pg.py `recycle_database`): the next test
gets one that cannot be told from a new copy of the migrated template, or a new copy when the last one changed."""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from db.engine import make_engine
from tests.annotation_seed import make_dataset
from tests.db import pg


def _rows(url: str) -> dict[str, int]:
    """Every user table's row count, and alembic_version's content."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            tables = conn.execute(text(pg.USER_TABLES)).scalars().all()
            counts = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}
            counts["version"] = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
            return counts
    finally:
        engine.dispose()


def _oid(cluster: pg.Cluster, url: str) -> int:
    with cluster._admin.connect() as conn:
        name = make_url(url).database
        return conn.execute(text("SELECT oid FROM pg_database WHERE datname = :n"), {"n": name}).scalar_one()


def _exists(cluster: pg.Cluster, url: str) -> bool:
    with cluster._admin.connect() as conn:
        name = make_url(url).database
        return conn.execute(text("SELECT count(*) FROM pg_database WHERE datname = :n"), {"n": name}).scalar_one() == 1


def test_a_used_database_comes_back_empty_with_ids_from_one_under_a_new_name():
    cluster = pg.cluster()
    fresh = cluster.new_database(migrated=True)
    expected = _rows(fresh)
    assert expected["public.dataset"] == 0 and expected["version"]
    engine = make_engine(fresh)
    make_dataset(engine, [["One."], ["Two."]], name="first")
    make_dataset(engine, [["Three."]], name="second")
    held = engine.connect()  # a connection the test left open: ended, not waited for
    held.execute(text("SELECT 1"))
    assert _rows(fresh)["public.dataset_item"] == 3
    used = _oid(cluster, fresh)

    cluster.recycle_database(fresh)
    held.invalidate()  # its server process was ended: nothing to give back to the pool
    again = cluster.new_database(migrated=True)
    assert make_url(again).database != make_url(fresh).database  # no engine cache has seen this name
    assert not _exists(cluster, fresh)
    assert _oid(cluster, again) == used  # the same database, emptied: not dropped for a new copy
    assert _rows(again) == expected
    engine2 = make_engine(again)
    dataset_id, item_ids = make_dataset(engine2, [["Four."]], name="third")
    assert (dataset_id, item_ids) == (1, [1])  # every sequence starts again
    engine2.dispose()
    engine.dispose()
    cluster.recycle_database(again)


def test_a_database_whose_schema_or_version_changed_is_dropped_not_handed_on():
    cluster = pg.cluster()
    for change in (
        "CREATE TABLE left_behind (id integer)",
        "ALTER TABLE dataset ADD COLUMN extra text",
        "CREATE INDEX ix_extra ON dataset (name)",
        "UPDATE alembic_version SET version_num = 'elsewhere'",
    ):
        url = cluster.new_database(migrated=True)
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as conn:
            conn.execute(text(change))
        engine.dispose()
        cluster.recycle_database(url)
        assert not _exists(cluster, url), change
        handed = cluster.new_database(migrated=True)
        assert _rows(handed)["version"] != "elsewhere", change
        engine = create_engine(handed, poolclass=NullPool)
        with engine.connect() as conn:
            digest = conn.execute(text(pg.SCHEMA_DIGEST)).scalar_one()
        engine.dispose()
        assert digest == cluster._template_state[0], change
        cluster.recycle_database(handed)
