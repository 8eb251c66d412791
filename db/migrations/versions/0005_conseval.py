"""ConsEval studies, their items, model ratings, human raters and human ratings

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 07:45:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conseval_study",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("n_planned", sa.Integer(), nullable=False),
        sa.Column("n_done", sa.Integer(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("cache_hits", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("results", sa.JSON(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("heartbeat_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("conseval_study", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conseval_study_created_at"), ["created_at"], unique=False)

    op.create_table(
        "conseval_item",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("criterion", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("source_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("oracle_score", sa.Float(), nullable=True),
        sa.Column("oracle_scale", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=True),
        sa.ForeignKeyConstraint(["study_id"], ["conseval_study.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("conseval_item", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conseval_item_study_id"), ["study_id"], unique=False)

    op.create_table(
        "conseval_rating",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("rater", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("granularity", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("scale", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("sample", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("raw", sa.Text(), nullable=False),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["item_id"], ["conseval_item.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["study_id"], ["conseval_study.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "item_id", "rater", "method", "granularity", "scale", "sample", name="uq_conseval_rating_call"
        ),
    )
    with op.batch_alter_table("conseval_rating", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conseval_rating_item_id"), ["item_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_conseval_rating_study_id"), ["study_id"], unique=False)

    op.create_table(
        "conseval_rater",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("token", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["conseval_study.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("conseval_rater", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conseval_rater_study_id"), ["study_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_conseval_rater_token"), ["token"], unique=True)

    op.create_table(
        "conseval_human_rating",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rater_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("scale", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["item_id"], ["conseval_item.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["rater_id"], ["conseval_rater.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("rater_id", "item_id", "scale", name="uq_conseval_human_rating"),
    )
    with op.batch_alter_table("conseval_human_rating", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conseval_human_rating_item_id"), ["item_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_conseval_human_rating_rater_id"), ["rater_id"], unique=False)


def downgrade() -> None:
    for table, indexes in (
        ("conseval_human_rating", ("item_id", "rater_id")),
        ("conseval_rater", ("study_id", "token")),
        ("conseval_rating", ("item_id", "study_id")),
        ("conseval_item", ("study_id",)),
        ("conseval_study", ("created_at",)),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for col in indexes:
                batch_op.drop_index(batch_op.f(f"ix_{table}_{col}"))
        op.drop_table(table)
