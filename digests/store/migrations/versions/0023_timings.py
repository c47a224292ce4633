"""Where in the episode: each PR's first mention (``pr_times``) from a timed transcript, and
the episode's chapters from its ``<podcast:chapters>`` document.

``episodes.pr_times`` / ``episode_transcripts.pr_times``: JSON lists of ``[PR URL,
seconds]`` (kept with the transcript too, so a re-read needs no fetch); ``episodes.chapters``:
``[[start, title, url], …]``; ``episode_chapters``: each episode's chapters document as
fetched once (like ``episode_transcripts``). NULL: none, which every row before this
migration is taken to have.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("episodes", sa.Column("pr_times", sa.JSON))
    op.add_column("episodes", sa.Column("chapters", sa.JSON))
    op.add_column("episode_transcripts", sa.Column("pr_times", sa.JSON))
    op.create_table(
        "episode_chapters",
        sa.Column("show", sa.String(200), primary_key=True),
        sa.Column("guid_key", sa.String(64), primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("chapters", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('ok', 'failed')", name="ck_episode_chapters_status"),
    )


def downgrade() -> None:
    op.drop_table("episode_chapters")
    # Plain ALTER TABLE (SQLite 3.35+), no batch copy: copying ``episodes`` would drop the
    # triggers and break the search view that read it.
    op.drop_column("episode_transcripts", "pr_times")
    op.drop_column("episodes", "chapters")
    op.drop_column("episodes", "pr_times")
