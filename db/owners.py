"""Owner queries: sign-in sessions, failed sign-ins, the chosen backend (keyword-only, `*, session`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Session, col, delete, func, select

from db.models import OwnerBackend, OwnerSession, SignInFailure


def add_owner_session(*, session: Session, token_hash: str, owner: str, expires_at: datetime) -> None:
    session.add(OwnerSession(token_hash=token_hash, owner=owner, expires_at=expires_at))
    session.flush()


def active_owner(*, session: Session, token_hash: str, now: datetime) -> str | None:
    """The owner of a session token that is neither expired nor signed out, else None."""
    row = session.exec(select(OwnerSession).where(OwnerSession.token_hash == token_hash)).first()
    if row is None or row.revoked_at is not None or _aware(row.expires_at) <= now:
        return None
    return row.owner


def revoke_owner_session(*, session: Session, token_hash: str, at: datetime) -> bool:
    row = session.exec(select(OwnerSession).where(OwnerSession.token_hash == token_hash)).first()
    if row is None:
        return False
    if row.revoked_at is None:
        row.revoked_at = at
        session.add(row)
    return True


def revoke_all_owner_sessions(*, session: Session, at: datetime) -> int:
    rows = session.exec(select(OwnerSession).where(col(OwnerSession.revoked_at).is_(None))).all()
    for row in rows:
        row.revoked_at = at
        session.add(row)
    return len(rows)


def purge_expired_sessions(*, session: Session, now: datetime) -> None:
    session.exec(delete(OwnerSession).where(col(OwnerSession.expires_at) <= now))  # type: ignore[call-overload]


def add_sign_in_failure(*, session: Session, client: str, at: datetime) -> None:
    session.add(SignInFailure(client=client, at=at))
    session.flush()


def count_sign_in_failures(*, session: Session, client: str | None, since: datetime) -> int:
    """Failures since `since`, from one (hashed) address, or from every address when client is None."""
    q = select(func.count()).select_from(SignInFailure).where(col(SignInFailure.at) >= since)
    if client is not None:
        q = q.where(SignInFailure.client == client)
    return int(session.exec(q).one())


def purge_sign_in_failures(*, session: Session, before: datetime) -> None:
    session.exec(delete(SignInFailure).where(col(SignInFailure.at) < before))  # type: ignore[call-overload]


def get_owner_backend(*, session: Session, owner: str) -> tuple[dict[str, Any], bool] | None:
    """The stored backend fields of this owner and whether a key had been typed for it."""
    row = session.get(OwnerBackend, owner)
    return (dict(row.config), row.typed_key) if row else None


def put_owner_backend(*, session: Session, owner: str, config: dict[str, Any], typed_key: bool, at: datetime) -> None:
    row = session.get(OwnerBackend, owner)
    if row is None:
        row = OwnerBackend(owner=owner)
    row.config, row.typed_key, row.updated_at = dict(config), typed_key, at
    session.add(row)


def _aware(value: datetime) -> datetime:
    from datetime import UTC

    return value if value.tzinfo else value.replace(tzinfo=UTC)
