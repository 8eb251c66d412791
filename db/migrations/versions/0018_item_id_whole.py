"""A dataset item's id kept whole, whatever its length: readers, cards and the CLI key items by it

The column was VARCHAR(200) and the import cut longer ids to fit, so two ids that differ after their 200th
character became one, and their labels were lost. PostgreSQL enforces the length: the column becomes TEXT (a
change of the catalog only; no row is rewritten). SQLite never enforces a declared length, so its column stays.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 17:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("dataset_item", "external_id", type_=sa.Text(), existing_type=sa.String(200))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("dataset_item", "external_id", type_=sa.String(200), existing_type=sa.Text())
