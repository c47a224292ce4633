"""Pull-request details from GitHub, keyed by (repo, number): what a digest shows of a PR.

``missing`` remembers that GitHub has no such PR (a number that is an issue, a typo), so it
is not asked for again every poll; ``etag`` is the REST validator for a 304 revalidation.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pr_details",
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("title", sa.Text, nullable=False, server_default=""),
        sa.Column("state", sa.String(16), nullable=False, server_default="open"),
        sa.Column("draft", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("merged_at", sa.DateTime(timezone=True)),
        sa.Column("author", sa.String(100)),
        sa.Column("labels", sa.JSON, nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True)),
        sa.Column("etag", sa.Text),
        sa.Column("missing", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("repo", "number", name="pk_pr_details"),
        sa.CheckConstraint("state IN ('open', 'closed', 'merged')", name="ck_pr_details_state"),
    )


def downgrade() -> None:
    op.drop_table("pr_details")
