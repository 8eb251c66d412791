"""read-only share links of reports

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 07:50:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report_share",
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=False),
        sa.Column("title", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("report_share", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_report_share_kind"), ["kind"], unique=False)
        batch_op.create_index(batch_op.f("ix_report_share_token"), ["token"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("report_share", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_report_share_token"))
        batch_op.drop_index(batch_op.f("ix_report_share_kind"))
    op.drop_table("report_share")
