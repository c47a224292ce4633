"""Daily digest mode: a subscription's time of day for its one message a day (NULL: a
digest per episode) and when its current mode began.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(sa.Column("daily_at", sa.String(5)))
        batch.add_column(sa.Column("mode_changed_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_column("mode_changed_at")
        batch.drop_column("daily_at")
