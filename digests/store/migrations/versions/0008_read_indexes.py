"""Indexes that keep reads flat as the archive grows.

``(show_id, published_at, id)``: a show's newest episodes (the poll's candidates, an
episode's neighbours) read as an index range that stops at the limit instead of a sort of
the whole show. ``(show_id, first_seen_at)``: when a show's archive was first read.
``lower(headline)`` / ``lower(title)``: ``by_title`` compares case-folded titles, once per
title a page lists as nearby. Then the planner's statistics, so it knows the new indexes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_episodes_show_id_published_at", "episodes", ["show_id", "published_at", "id"]
    )
    op.create_index("ix_episodes_show_id_first_seen_at", "episodes", ["show_id", "first_seen_at"])
    # Expression indexes in plain SQL: the same text on both engines, and lower() is what
    # the query compares (autogenerate leaves them alone, see schema.TITLE_INDEXES).
    op.execute("CREATE INDEX ix_episodes_lower_headline ON episodes (lower(headline))")
    op.execute("CREATE INDEX ix_episodes_lower_title ON episodes (lower(title))")
    op.execute("ANALYZE episodes")


def downgrade() -> None:
    op.execute("DROP INDEX ix_episodes_lower_title")
    op.execute("DROP INDEX ix_episodes_lower_headline")
    op.drop_index("ix_episodes_show_id_first_seen_at", table_name="episodes")
    op.drop_index("ix_episodes_show_id_published_at", table_name="episodes")
