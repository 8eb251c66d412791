"""Judge comparisons: the batches compared on the Judges page and their card options

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 18:20:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_panel",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("batch_ids", sa.JSON(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["dataset.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("judge_panel", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judge_panel_dataset_id"), ["dataset_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("judge_panel", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judge_panel_dataset_id"))
    op.drop_table("judge_panel")
