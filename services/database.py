"""The app's database: db/'s engine factory given the URL and options of the settings."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from db import engine as db_engine
from services.config import get_settings


def database_url(url: str | None = None) -> str:
    """`url`, else DATABASE_URL, else the SQLite file in the data folder."""
    return url or get_settings().resolved_database_url()


def pool_size(concurrency: int | None = None) -> int:
    """Connections an engine keeps for `concurrency` threads (default: the configured concurrency)."""
    return db_engine.pool_size(concurrency if concurrency is not None else get_settings().llm_concurrency)


def make_engine(url: str | None = None, *, migrate: bool = True, concurrency: int | None = None) -> Engine:
    """A new engine for `url` (default: the configured database), upgraded to the current schema."""
    s = get_settings()
    return db_engine.make_engine(
        database_url(url),
        migrate=migrate,
        concurrency=concurrency if concurrency is not None else s.llm_concurrency,
        busy_timeout=s.db_busy_timeout,
    )


def get_engine(url: str | None = None, *, concurrency: int | None = None) -> Engine:
    """The process-wide engine for `url` (default: the configured database), fit for `concurrency` threads."""
    s = get_settings()
    return db_engine.get_engine(
        database_url(url),
        concurrency=concurrency,
        default_concurrency=s.llm_concurrency,
        busy_timeout=s.db_busy_timeout,
    )
