"""When a posted digest was last edited because its episode changed (``deliveries.edited_at``).

``/episodes why`` says a digest was posted *and updated* (and when): ``updated_at`` moves on
every ledger write (claims, failed attempts), so it cannot tell an edit from a retry. NULL:
never edited, which every row before this migration is taken to be.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN on both engines: SQLite does it in place (no table copy).
    op.add_column("deliveries", sa.Column("edited_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("edited_at")
