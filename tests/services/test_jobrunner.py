"""The job runner: one worker per job, stale jobs queued again, cancel by request, one registry of kinds."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import Session

from db.models import ConsevalStudy, utcnow
from services.errors import InputError
from services.jobs import runner as jobrunner
from services.jobs.runner import JobTable

JOBS = JobTable(ConsevalStudy)


def _job(engine, **values) -> int:
    with Session(engine) as s:
        row = ConsevalStudy(name="t", config={}, **values)
        s.add(row)
        s.commit()
        return int(row.id)


def _row(engine, ident: int) -> ConsevalStudy:
    with Session(engine, expire_on_commit=False) as s:
        return s.get(ConsevalStudy, ident)


def test_one_worker_claims_a_job(file_engine):
    ident = _job(file_engine)
    wins: list[bool] = []
    start = threading.Barrier(4)

    def claim(name: str) -> None:
        start.wait()
        wins.append(JOBS.claim(file_engine, ident, name))

    threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False, False, False, True]
    row = _row(file_engine, ident)
    assert row.status == "running" and row.heartbeat_at is not None and row.started_at is not None
    assert not JOBS.claim(file_engine, ident, "late"), "a live worker holds it"


def test_finished_cancelled_and_asked_to_cancel_jobs_are_not_claimed(engine):
    for values in ({"status": "done"}, {"status": "cancelled"}, {"cancel_requested": True}):
        assert not JOBS.claim(engine, _job(engine, **values), "w"), values
    assert JOBS.claim(engine, _job(engine, status="failed"), "w"), "a failed job is resumed"


def test_a_silent_worker_loses_its_job(engine):
    limit = jobrunner.stale_limit()
    quiet = _job(engine, status="running", heartbeat_at=utcnow() - limit - timedelta(seconds=1))
    alive = _job(engine, status="running", heartbeat_at=utcnow())
    assert JOBS.claim(engine, quiet, "other"), "a duplicate task takes over a stale job"
    with engine.begin() as conn:
        conn.execute(
            update(ConsevalStudy)
            .where(ConsevalStudy.id == quiet)
            .values(heartbeat_at=utcnow() - limit - timedelta(seconds=1))
        )
    assert JOBS.recover(engine) == [quiet]
    assert _row(engine, quiet).status == "queued" and _row(engine, alive).status == "running"
    assert JOBS.recover(engine) == [], "queued once"
    asked = _job(engine, status="running", cancel_requested=True, heartbeat_at=utcnow() - limit - timedelta(seconds=1))
    assert JOBS.recover(engine) == [] and _row(engine, asked).status == "cancelled", "nobody left to stop it"
    assert not jobrunner.is_fresh(utcnow() - limit - timedelta(seconds=1)) and jobrunner.is_fresh(utcnow())


def test_cancel_is_a_request_the_runner_honours_at_a_safe_point(engine):
    queued = _job(engine)
    with engine.begin() as conn:
        JOBS.request_cancel(conn, queued)
    assert _row(engine, queued).status == "cancelled", "nobody runs it: cancelled at once"

    ident = _job(engine)
    seen: list[str] = []

    def work() -> dict:
        with engine.begin() as conn:
            JOBS.request_cancel(conn, ident)
        seen.append(_row(engine, ident).status)  # still running: the worker decides when to stop
        with engine.begin() as conn:  # progress and the cancel flag read in one statement
            cancelled = JOBS.advance(conn, ident, n_done=3)
        if cancelled:
            raise jobrunner.Cancelled
        return {"results": {"never": "saved"}}

    assert jobrunner.run(engine, JOBS, ident, work) == "cancelled"
    row = _row(engine, ident)
    assert seen == ["running"]
    assert row.status == "cancelled" and row.n_done == 3 and row.results is None and row.finished_at is not None
    assert jobrunner.run(engine, JOBS, ident, work) is None, "a cancelled job is not run again"


def test_the_runner_records_how_a_job_ended(engine):
    done = _job(engine)
    assert jobrunner.run(engine, JOBS, done, lambda: {"results": {"a": 1}}) == "done"
    assert _row(engine, done).results == {"a": 1} and _row(engine, done).heartbeat_at is None

    def bad_input() -> None:
        raise InputError("the model could not be reached")

    def bug() -> None:
        raise KeyError("x")

    for work, error in ((bad_input, "the model could not be reached"), (bug, "KeyError: 'x'")):
        ident = _job(engine)
        assert jobrunner.run(engine, JOBS, ident, work) == "failed"
        assert _row(engine, ident).error == error


def test_every_kind_of_job_is_registered():
    kinds = jobrunner.kinds()
    assert {"batch", "conseval", "dhp-run", "dhp-perturb"} <= set(kinds)
    assert all(callable(k.process) for k in kinds.values())
    with pytest.raises(InputError, match="Unknown kind of job 'nope'"):
        jobrunner.kind("nope")
