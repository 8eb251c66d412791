"""Annotators: a name and an unguessable token, the key of their personal link."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db import annotations as queries
from db.engine import get_session
from db.models import AnnotatorPublic, new_token
from services.errors import InputError

MAX_NAME = 100


def clean_name(name: str) -> str:
    """The name with runs of whitespace made one space; InputError when empty or too long."""
    name = " ".join(str(name or "").split())
    if not name:
        raise InputError("Give the annotator a name.")
    if len(name) > MAX_NAME:
        raise InputError(f"An annotator's name has at most {MAX_NAME} characters.")
    return name


def create_annotator(engine: Engine, name: str) -> AnnotatorPublic:
    """A new annotator with an unguessable personal token; InputError when the name is taken."""
    name = clean_name(name)
    try:
        with get_session(engine) as session:
            queries.insert_annotator(session=session, name=name)
    except IntegrityError:
        raise InputError(f"An annotator named {name!r} exists already; pick that name instead.") from None
    found = annotator_by_name(engine, name)
    assert found is not None
    return found


def get_or_create_annotator(engine: Engine, name: str) -> AnnotatorPublic:
    """The annotator with this name, created when missing (safe when two callers race)."""
    name = clean_name(name)
    found = annotator_by_name(engine, name)
    if found is not None:
        return found
    with get_session(engine) as session:
        queries.insert_annotator_if_missing(session=session, name=name)
    found = annotator_by_name(engine, name)
    assert found is not None
    return found


def get_annotator(engine: Engine, annotator_id: int) -> AnnotatorPublic | None:
    with get_session(engine) as session:
        return queries.annotator_by_id(session=session, annotator_id=annotator_id)


def annotator_by_name(engine: Engine, name: str) -> AnnotatorPublic | None:
    with get_session(engine) as session:
        return queries.annotator_by_name(session=session, name=" ".join(str(name).split()))


def annotator_by_token(engine: Engine, token: str) -> AnnotatorPublic | None:
    """The annotator whose personal link carries this token, or None."""
    token = (token or "").strip()
    if not token:
        return None
    with get_session(engine) as session:
        return queries.annotator_by_token(session=session, token=token)


def annotator_token(engine: Engine, annotator_id: int) -> str | None:
    """The token of an annotator's personal link (for that annotator's eyes only)."""
    with get_session(engine) as session:
        return queries.annotator_token(session=session, annotator_id=annotator_id)


def replace_token(engine: Engine, annotator_id: int) -> str:
    """A new personal link for the annotator; the old one stops working at once. Labels are kept."""
    token = new_token()
    with get_session(engine) as session:
        queries.set_annotator_token(session=session, annotator_id=annotator_id, token=token)
    return token


def list_annotators(engine: Engine) -> list[AnnotatorPublic]:
    """Every annotator, by name."""
    with get_session(engine) as session:
        return queries.list_annotators(session=session)
