"""Indexes that hold what a running batch's page counts: items by state with their usage, and recent finishes

The Batches page polls a running batch every 1.5 s. Both of its queries read only these columns, so with the
indexes they never read the rows, whose results are most of the table.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29 06:00:00.000000
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_batch_item_finishes", "batch_item", ["batch_id", "status", "updated_at"])
    op.create_index(
        "ix_batch_item_totals",
        "batch_item",
        ["batch_id", "status", "calls", "cache_hits", "prompt_tokens", "completion_tokens", "answered"],
    )


def downgrade() -> None:
    op.drop_index("ix_batch_item_totals", table_name="batch_item")
    op.drop_index("ix_batch_item_finishes", table_name="batch_item")
