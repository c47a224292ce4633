"""Seen requests: the keys of recent state-changing Slack requests, so replays run once.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "seen_requests",
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_seen_requests"),
    )
    op.create_index("ix_seen_requests_seen_at", "seen_requests", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_seen_requests_seen_at", table_name="seen_requests")
    op.drop_table("seen_requests")
