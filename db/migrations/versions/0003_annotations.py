"""annotators, their sentence labels and annotation assignments

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 06:40:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "annotator",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("annotator", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_annotator_name"), ["name"], unique=True)
        batch_op.create_index(batch_op.f("ix_annotator_token"), ["token"], unique=True)

    op.create_table(
        "annotation_assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("dataset_item_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("assigned_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("done_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["dataset.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_item_id"], ["dataset_item.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_item_id", "annotator_id", name="uq_annotation_assignment_item_annotator"),
    )
    with op.batch_alter_table("annotation_assignment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_annotation_assignment_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_annotation_assignment_dataset_id"), ["dataset_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_annotation_assignment_dataset_item_id"), ["dataset_item_id"], unique=False)

    op.create_table(
        "sentence_label",
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("round_idx", sa.Integer(), nullable=True),
        sa.Column("dataset_item_id", sa.Integer(), nullable=True),
        sa.Column("sentence_idx", sa.Integer(), nullable=False),
        sa.Column("label", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "(run_id IS NOT NULL AND round_idx IS NOT NULL AND dataset_item_id IS NULL) "
            "OR (run_id IS NULL AND round_idx IS NULL AND dataset_item_id IS NOT NULL)",
            name="ck_sentence_label_one_target",
        ),
        sa.CheckConstraint("label IN (0, 1)", name="ck_sentence_label_label"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_item_id"], ["dataset_item.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        # NULLs are distinct in a unique constraint: each one binds only the rows of its own target kind.
        sa.UniqueConstraint("annotator_id", "dataset_item_id", "sentence_idx", name="uq_sentence_label_item"),
        sa.UniqueConstraint("annotator_id", "run_id", "round_idx", "sentence_idx", name="uq_sentence_label_run"),
    )
    with op.batch_alter_table("sentence_label", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sentence_label_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sentence_label_dataset_item_id"), ["dataset_item_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sentence_label_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sentence_label", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sentence_label_run_id"))
        batch_op.drop_index(batch_op.f("ix_sentence_label_dataset_item_id"))
        batch_op.drop_index(batch_op.f("ix_sentence_label_annotator_id"))
    op.drop_table("sentence_label")

    with op.batch_alter_table("annotation_assignment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_annotation_assignment_dataset_item_id"))
        batch_op.drop_index(batch_op.f("ix_annotation_assignment_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_annotation_assignment_annotator_id"))
    op.drop_table("annotation_assignment")

    with op.batch_alter_table("annotator", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_annotator_token"))
        batch_op.drop_index(batch_op.f("ix_annotator_name"))
    op.drop_table("annotator")
