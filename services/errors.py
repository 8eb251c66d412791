"""The errors a user can fix: one family, each message saying what to change."""

from __future__ import annotations


class InputError(ValueError):
    """Input the user must fix; the message says how."""


class SurveyError(InputError):
    """An expert survey refuses the action (closed, revoked link, unknown expert or question)."""


DISK_FULL_ERRNOS = {28, 122}  # ENOSPC, EDQUOT
SQLITE_FULL = 13
PG_DISK_FULL = "53100"


def is_disk_full(exc: BaseException) -> bool:
    """Whether an error (or one it wraps) says the disk is full: ENOSPC, SQLite's SQLITE_FULL ("database or
    disk is full") or PostgreSQL's disk_full."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
            return True
        if getattr(e, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(e):
            return True
        if getattr(e, "sqlstate", None) == PG_DISK_FULL:
            return True
        todo += [getattr(e, "orig", None), e.__cause__, e.__context__]
    return False
