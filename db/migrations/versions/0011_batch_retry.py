"""Re-run failed items only: a batch's retry_only flag and its items' refresh flag

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 18:10:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("batch", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retry_only", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("batch_item", schema=None) as batch_op:
        batch_op.add_column(sa.Column("refresh", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("batch_item", schema=None) as batch_op:
        batch_op.drop_column("refresh")
    with op.batch_alter_table("batch", schema=None) as batch_op:
        batch_op.drop_column("retry_only")
