"""DHP: user-added tasks, perturbation sets and texts, evaluator runs and scores, expert-weight surveys

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 07:50:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dhp_task",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("text_label", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
        sa.Column("source_label", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=True),
        sa.Column("definition", sa.Text(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("perturbations", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dhp_task", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_task_key"), ["key"], unique=True)

    op.create_table(
        "dhp_set",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("task", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("items", sa.JSON(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dhp_set", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_set_task"), ["task"], unique=False)

    op.create_table(
        "dhp_text",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("perturbation", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
        sa.Column("level", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["set_id"], ["dhp_set.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("set_id", "item_id", "perturbation", name="uq_dhp_text"),
    )
    with op.batch_alter_table("dhp_text", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_text_set_id"), ["set_id"], unique=False)

    op.create_table(
        "dhp_run",
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("backend_kind", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("base_url", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("prompt_versions", sa.JSON(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("n_total", sa.Integer(), nullable=False),
        sa.Column("n_done", sa.Integer(), nullable=False),
        sa.Column("n_failed", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("worker", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column("heartbeat_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["set_id"], ["dhp_set.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dhp_run", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_run_set_id"), ["set_id"], unique=False)

    op.create_table(
        "dhp_score",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("text_id", sa.Integer(), nullable=False),
        sa.Column("metric", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("scores", sa.JSON(), nullable=False),
        sa.Column("mean", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["dhp_run.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["text_id"], ["dhp_text.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "text_id", "metric", name="uq_dhp_score"),
    )
    with op.batch_alter_table("dhp_score", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_score_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_dhp_score_text_id"), ["text_id"], unique=False)

    op.create_table(
        "dhp_survey",
        sa.Column("title", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("task", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("task_definition", sa.Text(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("questions", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("closed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dhp_survey", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_survey_task"), ["task"], unique=False)

    op.create_table(
        "dhp_survey_expert",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("survey_id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("token", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["survey_id"], ["dhp_survey.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("survey_id", "name", name="uq_dhp_survey_expert_name"),
    )
    with op.batch_alter_table("dhp_survey_expert", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_survey_expert_survey_id"), ["survey_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_dhp_survey_expert_token"), ["token"], unique=True)

    op.create_table(
        "dhp_survey_vote",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("survey_id", sa.Integer(), nullable=False),
        sa.Column("expert_id", sa.Integer(), nullable=False),
        sa.Column("question", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
        sa.Column("metric", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["expert_id"], ["dhp_survey_expert.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["survey_id"], ["dhp_survey.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("expert_id", "question", name="uq_dhp_survey_vote"),
    )
    with op.batch_alter_table("dhp_survey_vote", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dhp_survey_vote_expert_id"), ["expert_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_dhp_survey_vote_survey_id"), ["survey_id"], unique=False)


def downgrade() -> None:
    for table, indexes in (
        ("dhp_survey_vote", ("ix_dhp_survey_vote_survey_id", "ix_dhp_survey_vote_expert_id")),
        ("dhp_survey_expert", ("ix_dhp_survey_expert_token", "ix_dhp_survey_expert_survey_id")),
        ("dhp_survey", ("ix_dhp_survey_task",)),
        ("dhp_score", ("ix_dhp_score_text_id", "ix_dhp_score_run_id")),
        ("dhp_run", ("ix_dhp_run_set_id",)),
        ("dhp_text", ("ix_dhp_text_set_id",)),
        ("dhp_set", ("ix_dhp_set_task",)),
        ("dhp_task", ("ix_dhp_task_key",)),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name in indexes:
                batch_op.drop_index(name)
        op.drop_table(table)
