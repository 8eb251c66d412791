"""Report share queries: read-only tokens to one report (keyword-only, `*, session`, typed results)."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session, col, select

from db.models import ReportShare, ReportShareCreate, ReportSharePublic


def add_share(*, session: Session, data: ReportShareCreate) -> ReportSharePublic:
    row = ReportShare.model_validate(data)
    session.add(row)
    session.flush()
    return ReportSharePublic.model_validate(row)


def share_by_token(*, session: Session, token: str) -> ReportSharePublic | None:
    """The share with this token (revoked or not)."""
    row = session.exec(select(ReportShare).where(ReportShare.token == token)).first()
    return ReportSharePublic.model_validate(row) if row else None


def active_share(*, session: Session, kind: str, ref_id: int) -> ReportSharePublic | None:
    """The newest share of one report that is not revoked; None when there is none."""
    q = (
        select(ReportShare)
        .where(ReportShare.kind == kind, ReportShare.ref_id == ref_id, col(ReportShare.revoked_at).is_(None))
        .order_by(col(ReportShare.created_at).desc(), col(ReportShare.id).desc())
    )
    row = session.exec(q).first()
    return ReportSharePublic.model_validate(row) if row else None


def list_shares(*, session: Session, include_revoked: bool = True) -> list[ReportSharePublic]:
    """Shares, newest first."""
    q = select(ReportShare).order_by(col(ReportShare.created_at).desc())
    if not include_revoked:
        q = q.where(col(ReportShare.revoked_at).is_(None))
    return [ReportSharePublic.model_validate(r) for r in session.exec(q).all()]


def revoke_share(*, session: Session, share_id: int, at: datetime) -> bool:
    """Mark a share revoked at `at` unless it is already; False when it does not exist."""
    row = session.get(ReportShare, share_id)
    if row is None:
        return False
    if row.revoked_at is None:
        row.revoked_at = at
        session.add(row)
    return True
