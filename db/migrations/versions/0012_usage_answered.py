"""What runs cost: answered requests apart from retries (batch items, usage events, studies, DHP runs), and the
tokens of ConsEval studies and DHP runs

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 21:40:00.000000

Rows written before are left NULL: their answered requests and tokens were not counted, and say so.
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

ADDED = {
    "batch_item": ("answered",),
    "usage_event": ("answered",),
    "conseval_study": ("answered", "prompt_tokens", "completion_tokens"),
    "dhp_run": ("calls", "answered", "cache_hits", "prompt_tokens", "completion_tokens"),
}


def upgrade() -> None:
    for table, columns in ADDED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name in columns:
                batch_op.add_column(sa.Column(name, sa.Integer(), nullable=True))


def downgrade() -> None:
    for table, columns in ADDED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name in reversed(columns):
                batch_op.drop_column(name)
