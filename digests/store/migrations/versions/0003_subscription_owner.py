"""Subscriptions remember who made them and whether a config-file one was unsubscribed.

``created_by``: the Slack user whose ``/episodes subscribe`` set it up (NULL for the config
file's), told by DM when delivery pauses it. ``unsubscribed_at``: a config-file subscription
a user unsubscribed stays as a tombstone, so a restart does not subscribe it again.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable, no default: plain ADD COLUMN on both backends, existing rows untouched.
    op.add_column("subscriptions", sa.Column("created_by", sa.String(32)))
    op.add_column("subscriptions", sa.Column("unsubscribed_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_column("unsubscribed_at")
        batch.drop_column("created_by")
