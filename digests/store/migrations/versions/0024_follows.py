"""People's follows (``/episodes follow``): a direct message when a new episode names the PR
or the words they follow, and when a followed PR becomes merged, closed or reverted.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "follows",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target", sa.String(600), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_state", sa.String(16)),
        sa.UniqueConstraint(
            "team_id", "user_id", "kind", "target", name="uq_follows_team_id_user_id_kind_target"
        ),
        sa.CheckConstraint("kind IN ('pr', 'words')", name="ck_follows_kind"),
    )
    op.create_index("ix_follows_kind_target", "follows", ["kind", "target"])


def downgrade() -> None:
    op.drop_index("ix_follows_kind_target", table_name="follows")
    op.drop_table("follows")
