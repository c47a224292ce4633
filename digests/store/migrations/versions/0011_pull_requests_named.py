"""Episodes: how many PRs their text names when more than the 200 kept (the thread says
"first 200 of 250"); 0 for the rest.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "episodes",
        sa.Column("pull_requests_named", sa.Integer, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    # Not a batch (table copy) on SQLite: that would lose the expression indexes of 0008,
    # which their own downgrade then drops. SQLite 3.35+ drops a column in place.
    op.drop_column("episodes", "pull_requests_named")
