"""The connection pool fits the threads that use it, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import threading

from sqlalchemy import text

import db.engine
from db.engine import get_engine, make_engine
from tests.support.waiting import WAIT_LIMIT

THREADS = 48


def test_every_thread_holds_a_connection_at_once(db_url) -> None:
    engine = make_engine(db_url, concurrency=THREADS)
    # A thread left waiting for the pool gets the pool's own TimeoutError and breaks the barrier for all; the
    # barrier's limit only ends a hang (on a loaded machine, 48 threads can take long to all connect).
    all_in = threading.Barrier(THREADS, timeout=WAIT_LIMIT)
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
                all_in.wait()
        except BaseException as exc:
            errors.append(exc)
            all_in.abort()

    threads = [threading.Thread(target=hold) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    assert not errors, errors[:3]


def test_asking_for_more_threads_gives_a_larger_pool_on_the_same_database(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(db.engine, "_engines", {})
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    small = get_engine(url)
    assert get_engine(url, concurrency=2) is small
    large = get_engine(url, concurrency=THREADS)
    assert large is not small and large.pool.size() >= THREADS and get_engine(url) is large
    with large.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() >= 1
    db.engine.dispose_all()
