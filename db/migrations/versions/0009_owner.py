"""The owner stays signed in (sessions), sign-in failures are counted, the chosen backend is kept

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 18:10:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "owner_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=320), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("owner_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_owner_session_token_hash"), ["token_hash"], unique=True)
        batch_op.create_index(batch_op.f("ix_owner_session_expires_at"), ["expires_at"], unique=False)
    op.create_table(
        "sign_in_failure",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sign_in_failure", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sign_in_failure_client"), ["client"], unique=False)
        batch_op.create_index(batch_op.f("ix_sign_in_failure_at"), ["at"], unique=False)
    op.create_table(
        "owner_backend",
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=320), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("typed_key", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner"),
    )


def downgrade() -> None:
    op.drop_table("owner_backend")
    with op.batch_alter_table("sign_in_failure", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sign_in_failure_at"))
        batch_op.drop_index(batch_op.f("ix_sign_in_failure_client"))
    op.drop_table("sign_in_failure")
    with op.batch_alter_table("owner_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_owner_session_expires_at"))
        batch_op.drop_index(batch_op.f("ix_owner_session_token_hash"))
    op.drop_table("owner_session")
