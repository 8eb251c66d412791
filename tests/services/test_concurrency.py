"""Several writers at once, on a SQLite file (WAL, busy timeout) and on PostgreSQL: nothing is lost.

20 writers, each with its own engine (its own connection, as separate app sessions and workers have),
write for CONSISTENCY_CONCURRENCY_SECONDS (default 10; 30 or more for a soak) without pause: sentence labels
upserted over the same items (each writer as its own annotator, and all of them as one shared annotator on the same
sentences), survey votes (each writer an expert of one survey, changing answers), runs that share their
reference document, and usage rows. Afterwards every write is in
the database exactly once. The test is bounded by its duration, and nothing about speed is asserted.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest
from sqlalchemy import func, select
from sqlmodel import Session

from db import runs as db_runs
from db.engine import get_session, make_engine
from db.models import Document, Run, RunCreate, SentenceLabel, SurveyVote, UsageEvent
from services import annotations
from services.annotations import Target
from services.dhp import survey
from services.dhp.catalogue import TASKS
from services.llm import CallRecord
from services.run_records import save_usage
from tests.annotation_seed import make_dataset
from tests.db import pg

WRITERS = 20
# The writers collide from their first write; ten seconds is hundreds of collisions per kind of write on 2 cores.
SECONDS = float(os.environ.get("CONSISTENCY_CONCURRENCY_SECONDS", "10"))
MIN_OPS = 10  # each writer does at least two of each of its five kinds of write
REFERENCE = "The museum reopened on Friday after a two-year renovation costing 12 million euros."
SENTENCES = [["The museum reopened.", "It cost 12 million euros."], ["It took two years.", "It opened on Friday."]]


@dataclass
class Writes:
    labels: dict[tuple[int, int], int] = field(default_factory=dict)  # (item, sentence) -> last label written
    shared: list[int] = field(default_factory=list)  # labels written as the shared annotator
    votes: dict[str, str] = field(default_factory=dict)  # question -> last metric voted
    runs: list[int] = field(default_factory=list)
    usage: list[str] = field(default_factory=list)
    ops: int = 0
    errors: list[str] = field(default_factory=list)


def _writer(
    url: str,
    n: int,
    annotator_id: int,
    shared_id: int,
    items: list[int],
    expert: tuple[int, list, list],
    until: float,
    out: Writes,
) -> None:
    engine = make_engine(url, migrate=False)
    rng = random.Random(n)
    expert_id, questions, metrics = expert
    try:
        while time.monotonic() < until or out.ops < MIN_OPS:  # every kind of write, however slow the machine
            op = out.ops % 5
            try:
                if op in (0, 1):  # an annotator's own label, on items every writer labels
                    item = rng.randrange(len(items))
                    sent, label = rng.randrange(2), rng.randrange(2)
                    annotations.label_sentence(
                        engine,
                        annotator_id=annotator_id,
                        target=Target.item(items[item]),
                        sentence_idx=sent,
                        label=label,
                        note=f"w{n} op{out.ops}",
                    )
                    out.labels[(items[item], sent)] = label
                elif op == 2:  # everyone as one annotator, on the same sentence: one row, never two
                    label = rng.randrange(2)
                    annotations.label_sentence(
                        engine, annotator_id=shared_id, target=Target.item(items[0]), sentence_idx=0, label=label
                    )
                    out.shared.append(label)
                elif op == 3:  # an expert's vote in the survey everyone answers at once
                    question, metric = rng.choice(questions), rng.choice(metrics)
                    with get_session(engine) as session:
                        survey.vote(expert_id, question, metric, session=session)
                    out.votes[question] = metric
                else:  # a run on the shared reference (its document is created once) with a usage row
                    tag = f"w{n}-{out.ops}"
                    with get_session(engine) as session:
                        run = db_runs.create_run(
                            session=session,
                            data=RunCreate(reference=REFERENCE, candidate=f"Candidate {tag}.", title=tag, model="m"),
                        )
                        save_usage(
                            session=session,
                            run_id=run.id,
                            records=[CallRecord(stage="dce", prompt_version=tag, cached=False, requests=1)],
                        )
                        run_id = run.id
                    out.runs.append(run_id)
                    out.usage.append(tag)
            except Exception as exc:
                out.errors.append(f"writer {n} op {op}: {type(exc).__name__}: {exc}")
            out.ops += 1
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'many.db'}"
        return
    cluster = pg.cluster()
    url = cluster.new_database()
    yield url
    cluster.drop_database(url)


def test_twenty_concurrent_writers_lose_nothing(shared_url):
    engine = make_engine(shared_url)
    _, items = make_dataset(engine, SENTENCES * 3, name="contended")
    people = [annotations.create_annotator(engine, f"writer {i}").id for i in range(WRITERS)]
    shared = annotations.create_annotator(engine, "everyone").id
    with Session(engine) as s:
        docs_before = s.execute(select(func.count()).select_from(Document)).scalar_one()
    with get_session(engine) as session:
        sid = survey.create_survey(TASKS["summarization"], title="", session=session)
        experts = [survey.invite(sid, f"expert {i}", session=session).id for i in range(WRITERS)]
        sv = survey.get_survey(sid, session=session)
    questions, metrics = [q["key"] for q in sv.questions], [m["name"] for m in sv.metrics]

    outs = [Writes() for _ in range(WRITERS)]
    until = time.monotonic() + SECONDS
    threads = [
        threading.Thread(
            target=_writer,
            args=(shared_url, i, people[i], shared, items, (experts[i], questions, metrics), until, outs[i]),
        )
        for i in range(WRITERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    errors = [e for o in outs for e in o.errors]
    assert not errors, f"{len(errors)} write(s) failed, first: {errors[:3]}"
    assert all(o.ops >= MIN_OPS for o in outs), "every writer wrote"

    with Session(engine) as s:
        # Each annotator's labels: one row per sentence it labelled, holding the label it wrote last.
        for o, person in zip(outs, people, strict=True):
            rows = s.execute(
                select(SentenceLabel.dataset_item_id, SentenceLabel.sentence_idx, SentenceLabel.label).where(
                    SentenceLabel.annotator_id == person
                )
            ).all()
            assert {(i, j): lab for i, j, lab in rows} == o.labels
            assert len(rows) == len(o.labels)
        shared_rows = s.execute(select(SentenceLabel.label).where(SentenceLabel.annotator_id == shared)).all()
        assert len(shared_rows) == 1 and shared_rows[0][0] in {lab for o in outs for lab in o.shared}
        # Survey votes: one per expert and question, the answer each expert gave last.
        for o, expert_id in zip(outs, experts, strict=True):
            assert survey.my_votes(expert_id, session=s) == o.votes
        n_votes = s.execute(select(func.count()).select_from(SurveyVote)).scalar_one()
        assert n_votes == sum(len(o.votes) for o in outs)
        # Runs and usage rows: every one written is there exactly once; the shared reference is one document.
        written_runs = [r for o in outs for r in o.runs]
        stored_runs = list(s.execute(select(Run.id)).scalars())
        assert sorted(stored_runs) == sorted(written_runs) and len(set(written_runs)) == len(written_runs)
        tags = Counter(s.execute(select(UsageEvent.prompt_version)).scalars())
        assert tags == Counter(t for o in outs for t in o.usage) and set(tags.values()) <= {1}
        n_ref = s.execute(select(func.count()).where(Document.text == REFERENCE)).scalar_one()
        assert n_ref == (1 if written_runs else 0)
        assert (
            s.execute(select(func.count()).select_from(Document)).scalar_one()
            == docs_before + len(written_runs) + n_ref
        )
    engine.dispose()


def test_racing_claims_never_overlap_and_no_worker_gives_up_while_items_wait(shared_url):
    """Many workers claim from one batch at once: each item goes to exactly one, and a worker told
    "nothing left" is only ever told so when nothing is left (else it would stop working early)."""
    from db.models import BatchItem
    from services import dcr
    from services.config import BackendConfig
    from services.jobs import batches
    from tests.support.batches import make_dataset as make_batch_dataset

    engine = make_engine(shared_url)
    ds = make_batch_dataset(engine, 300)
    backend = BackendConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="m")
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(max_rounds=0))
    taken: list[list[int]] = [[] for _ in range(12)]
    early: list[int] = []

    def worker(n: int) -> None:
        eng = make_engine(shared_url, migrate=False)
        try:
            while got := batches.claim(eng, bid, f"w{n}", 3):
                taken[n].extend(got)
            with Session(eng) as s:  # pending only ever shrinks here: >0 now means >0 when told "none"
                left = s.execute(
                    select(func.count()).where(BatchItem.batch_id == bid, BatchItem.status == "pending")
                ).scalar_one()
            if left:
                early.append(n)
        finally:
            eng.dispose()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for got in taken for i in got]
    assert len(every) == len(set(every)) == 300
    assert early == []
    engine.dispose()
