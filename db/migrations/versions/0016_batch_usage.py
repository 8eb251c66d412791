"""Every model call of a batch kept: one usage row per call, so a re-run or a retry adds to what the batch cost

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07 16:30:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "batch_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("batch_item_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("stage", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("prompt_version", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("cached", sa.Boolean(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("answered", sa.Integer(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_batch_usage_batch_id", "batch_usage", ["batch_id"])


def downgrade() -> None:
    op.drop_index("ix_batch_usage_batch_id", table_name="batch_usage")
    op.drop_table("batch_usage")
