"""Read-only share links to a report: create, look up, list and revoke tokens."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import shares as db
from db.engine import get_session
from db.models import REPORT_KINDS, ReportShareCreate, ReportSharePublic, utcnow
from services.errors import InputError


def create_share(*, session: Session, data: ReportShareCreate) -> ReportSharePublic:
    """A new read-only token for one report."""
    if data.kind not in REPORT_KINDS:
        raise InputError(f"Unknown report kind {data.kind!r}; one of {', '.join(REPORT_KINDS)}.")
    return db.add_share(session=session, data=data)


def share_by_token(*, session: Session, token: str) -> ReportSharePublic | None:
    """The share with this token (revoked or not); None when there is none."""
    if not token or len(token) > 64:
        return None
    return db.share_by_token(session=session, token=token)


def list_shares(*, session: Session, include_revoked: bool = True) -> list[ReportSharePublic]:
    return db.list_shares(session=session, include_revoked=include_revoked)


def revoke_share(*, session: Session, share_id: int) -> bool:
    """Revoke a share (idempotent); False when it does not exist."""
    return db.revoke_share(session=session, share_id=share_id, at=utcnow())


# Engine-level wrappers for pages and the CLI (which never hold a session).
def new_share(engine: Engine, kind: str, ref_id: int, title: str = "") -> ReportSharePublic:
    with get_session(engine) as session:
        return create_share(session=session, data=ReportShareCreate(kind=kind, ref_id=ref_id, title=title[:200]))


def share_link(engine: Engine, kind: str, ref_id: int, title: str = "") -> ReportSharePublic:
    """The report's share link: the newest one not revoked, else a new one (pressing twice makes no duplicate)."""
    with get_session(engine) as session:
        found = db.active_share(session=session, kind=kind, ref_id=ref_id)
    return found or new_share(engine, kind, ref_id, title)


def find_share(engine: Engine, token: str) -> ReportSharePublic | None:
    with get_session(engine) as session:
        return share_by_token(session=session, token=token)


def shares(engine: Engine, *, include_revoked: bool = True) -> list[ReportSharePublic]:
    with get_session(engine) as session:
        return list_shares(session=session, include_revoked=include_revoked)


def revoke(engine: Engine, share_id: int) -> bool:
    with get_session(engine) as session:
        return revoke_share(session=session, share_id=share_id)


def share_problem(share: ReportSharePublic | None) -> str | None:
    """Why a share link cannot be shown (None: it can)."""
    if share is None:
        return "This share link is not valid: no report has this token. Ask whoever sent it for a new link."
    if share.revoked_at is not None:
        when = share.revoked_at.strftime("%Y-%m-%d %H:%M UTC")
        return f"This share link was revoked on {when}. Ask whoever sent it for a new link."
    return None
