"""Alembic environment: the engine or connection comes from `db.engine.upgrade`."""

from alembic import context
from sqlmodel import SQLModel

import db.models  # noqa: F401 - registers the tables

target_metadata = SQLModel.metadata
config = context.config


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    with config.attributes["engine"].begin() as conn:
        _run(conn)
