"""User pauses: when a subscription's pause began and when it ends (NULL: until resumed).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(sa.Column("held_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("held_until", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_column("held_until")
        batch.drop_column("held_at")
