"""Where each label came from: an assignment's origin (how its item was chosen)

Assignments made before this revision were chosen by a way nobody recorded: they become "unknown" (not a
random draw), never silently "random". Imported labels live on the dataset's items and need no column.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 21:50:00.000000
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("annotation_assignment", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("origin", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False, server_default="unknown")
        )


def downgrade() -> None:
    with op.batch_alter_table("annotation_assignment", schema=None) as batch_op:
        batch_op.drop_column("origin")
