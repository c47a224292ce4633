"""PR news in digest threads, opted into per subscription (``subscribe … pr-updates on``):
``subscriptions.pr_updates``, off for every subscription before this migration.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "subscriptions",
        sa.Column("pr_updates", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # Plain ALTER TABLE (SQLite 3.35+), no batch copy: copying the table would drop the
    # triggers later migrations put on it.
    op.drop_column("subscriptions", "pr_updates")
