"""DHP runs are cancelled by request, like batches and ConsEval studies

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 23:20:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dhp_run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("dhp_run", schema=None) as batch_op:
        batch_op.drop_column("cancel_requested")
