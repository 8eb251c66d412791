"""Systems compared: a dataset item's system (or prompt, model, version), chosen at import

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 21:20:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dataset_item", schema=None) as batch_op:
        batch_op.add_column(sa.Column("system", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True))
        batch_op.create_index(batch_op.f("ix_dataset_item_system"), ["system"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("dataset_item", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_item_system"))
        batch_op.drop_column("system")
