"""Documents: texts stored once each, found by their SHA-256."""

from __future__ import annotations

import hashlib

from sqlmodel import Session, col, select

from db.engine import dialect_insert
from db.models import Document, utcnow


def get_or_create_document(*, session: Session, text: str) -> Document:
    """The stored document with this exact text, created if new."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    doc = session.exec(select(Document).where(Document.sha256 == digest)).first()
    if doc is None:
        # ON CONFLICT DO NOTHING: a concurrent writer may create it meanwhile, and a failed INSERT would
        # abort the whole transaction on PostgreSQL (and a rollback would drop this session's earlier work).
        session.execute(
            dialect_insert(session.connection())(Document.__table__)
            .values(sha256=digest, text=text, n_chars=len(text), created_at=utcnow())
            .on_conflict_do_nothing(index_elements=["sha256"])
        )
        doc = session.exec(select(Document).where(Document.sha256 == digest)).one()
    return doc


def get_or_create_documents(*, session: Session, texts: list[str]) -> list[int]:
    """Document ids for many texts at once (same hashing as get_or_create_document), in the order given."""
    by_hash: dict[str, str] = {}
    digests = []
    for text in texts:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        by_hash.setdefault(digest, text)
        digests.append(digest)
    ids: dict[str, int] = {}
    unique = list(by_hash)
    for i in range(0, len(unique), 500):  # stay under every backend's bound-parameter limit
        chunk = unique[i : i + 500]
        rows = session.exec(select(Document.sha256, Document.id).where(col(Document.sha256).in_(chunk))).all()
        ids.update({sha: doc_id for sha, doc_id in rows if doc_id is not None})
    missing = [d for d in unique if d not in ids]
    if missing:
        now = utcnow()
        session.execute(
            dialect_insert(session.connection())(Document.__table__).on_conflict_do_nothing(index_elements=["sha256"]),
            [{"sha256": d, "text": by_hash[d], "n_chars": len(by_hash[d]), "created_at": now} for d in missing],
        )
        for i in range(0, len(missing), 500):
            chunk = missing[i : i + 500]
            rows = session.exec(select(Document.sha256, Document.id).where(col(Document.sha256).in_(chunk))).all()
            ids.update({sha: doc_id for sha, doc_id in rows if doc_id is not None})
    return [ids[d] for d in digests]
