"""The first schema: documents, runs, rounds, sentence verdicts, rewrites, the LLM cache, usage.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("n_chars", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_document_sha256", "document", ["sha256"], unique=True)
    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("task", sa.String(length=20), nullable=False),
        sa.Column("criteria", sa.Text(), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("amc", sa.String(length=10), nullable=False),
        sa.Column("max_rounds", sa.Integer(), nullable=False),
        sa.Column("backend_kind", sa.String(length=20), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("base_url", sa.String(length=500), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("prompt_versions", sa.JSON(), nullable=False),
        sa.Column("reference_id", sa.Integer(), sa.ForeignKey("document.id"), nullable=False),
        sa.Column("candidate_id", sa.Integer(), sa.ForeignKey("document.id"), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("initial_score", sa.Float(), nullable=True),
        sa.Column("final_score", sa.Float(), nullable=True),
        sa.Column("n_rounds", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_run_reference_id", "run", ["reference_id"])
    op.create_index("ix_run_candidate_id", "run", ["candidate_id"])
    op.create_index("ix_run_created_at", "run", ["created_at"])
    op.create_table(
        "eval_round",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("run.id"), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("k", sa.Integer(), nullable=False),
        sa.Column("alpha", sa.Float(), nullable=False),
        sa.Column("beta", sa.Float(), nullable=False),
        sa.Column("z", sa.Float(), nullable=True),
        sa.Column("z_hat", sa.Float(), nullable=True),
        sa.Column("n_judged", sa.Integer(), nullable=False),
        sa.Column("n_unknown", sa.Integer(), nullable=False),
        sa.Column("model_is_consistent", sa.Boolean(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("improve_error", sa.Text(), nullable=True),
        sa.Column("notes", sa.JSON(), nullable=False),
        sa.Column("extras", sa.JSON(), nullable=False),
        sa.Column("amc_agree", sa.Integer(), nullable=True),
        sa.Column("amc_compared", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_eval_round_run_id", "eval_round", ["run_id"])
    op.create_table(
        "sentence_verdict",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("eval_round.id"), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("mark", sa.Integer(), nullable=True),
        sa.Column("rule_mark", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_index("ix_sentence_verdict_round_id", "sentence_verdict", ["round_id"])
    op.create_table(
        "rewrite",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("round_id", sa.Integer(), sa.ForeignKey("eval_round.id"), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("before", sa.Text(), nullable=False),
        sa.Column("after", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("accepted", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_rewrite_round_id", "rewrite", ["round_id"])
    op.create_table(
        "llm_cache",
        sa.Column("key", sa.String(length=64), primary_key=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("prompt_version", sa.String(length=100), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "usage_event",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("run.id"), nullable=True),
        sa.Column("stage", sa.String(length=40), nullable=False),
        sa.Column("prompt_version", sa.String(length=100), nullable=False),
        sa.Column("cached", sa.Boolean(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_usage_event_run_id", "usage_event", ["run_id"])


def downgrade() -> None:
    for table in ("usage_event", "llm_cache", "rewrite", "sentence_verdict", "eval_round", "run", "document"):
        op.drop_table(table)
