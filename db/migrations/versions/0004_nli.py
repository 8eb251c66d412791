"""method results of runs (NLI paradigms, comparisons) and batch method options

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 07:50:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "method_result",
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("window", sa.Integer(), nullable=True),
        sa.Column("label", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("n_units", sa.Integer(), nullable=False),
        sa.Column("n_failed", sa.Integer(), nullable=False),
        sa.Column("compare_group", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("method_result", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_method_result_compare_group"), ["compare_group"], unique=False)
        batch_op.create_index(batch_op.f("ix_method_result_run_id"), ["run_id"], unique=True)

    op.create_table(
        "batch_options",
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("window", sa.Integer(), nullable=False),
        sa.Column("sample", sa.Integer(), nullable=False),
        sa.Column("repeat_group", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["batch.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("batch_id"),
    )
    with op.batch_alter_table("batch_options", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_batch_options_repeat_group"), ["repeat_group"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("batch_options", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_batch_options_repeat_group"))
    op.drop_table("batch_options")
    with op.batch_alter_table("method_result", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_method_result_run_id"))
        batch_op.drop_index(batch_op.f("ix_method_result_compare_group"))
    op.drop_table("method_result")
