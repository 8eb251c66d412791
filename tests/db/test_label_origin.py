"""Migration 0014: a database made before label origins were recorded opens with its assignments and labels
intact, each assignment's origin "unknown" (never silently "random")."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text
from sqlmodel import Session

from db.engine import alembic_config, make_engine
from db.models import AnnotationAssignment, Annotator, Dataset, DatasetItem, Document, SentenceLabel


def test_assignments_made_before_0014_become_unknown_with_nothing_lost(db_url):
    engine = make_engine(db_url)
    with Session(engine) as s:
        ref = Document(sha256="r", text="The council met.", n_chars=16)
        ds = Dataset(name="d", sha256="d", n_items=1)
        ann = Annotator(name="ana")
        s.add_all([ref, ds, ann])
        s.flush()
        item = DatasetItem(dataset_id=ds.id, reference_id=ref.id, candidate="It met.", sentences=["It met."])
        s.add(item)
        s.flush()
        s.add(AnnotationAssignment(dataset_id=ds.id, dataset_item_id=item.id, annotator_id=ann.id, origin="random"))
        s.add(SentenceLabel(dataset_item_id=item.id, sentence_idx=0, label=0, annotator_id=ann.id))
        s.commit()
    command.downgrade(alembic_config(engine), "0013")  # the schema before this revision, with its rows
    with engine.connect() as conn:
        cols = (
            {r[1] for r in conn.execute(text("PRAGMA table_info(annotation_assignment)"))}
            if "sqlite" in db_url
            else None
        )
    assert cols is None or "origin" not in cols
    engine.dispose()

    engine = make_engine(db_url)  # the new version opens the old database: upgrade to head
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT origin, status FROM annotation_assignment")).all()
        labels = conn.execute(text("SELECT label FROM sentence_label")).scalars().all()
    assert rows == [("unknown", "pending")] and labels == [0]
    engine.dispose()
