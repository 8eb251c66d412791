"""The errors a user can fix: one family, each message saying what to change."""

from __future__ import annotations


class InputError(ValueError):
    """Input the user must fix; the message says how."""


class SurveyError(InputError):
    """An expert survey refuses the action (closed, revoked link, unknown expert or question)."""
