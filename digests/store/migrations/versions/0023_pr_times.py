"""Where in the episode each PR is named (``episodes.pr_times``), from a timed transcript
(``episode_transcripts.pr_times``, kept with the transcript so a re-read needs no fetch).

JSON lists of ``[PR URL, seconds]``; NULL: no timings, which every row before this
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
    op.add_column("episode_transcripts", sa.Column("pr_times", sa.JSON))


def downgrade() -> None:
    # Plain ALTER TABLE (SQLite 3.35+), no batch copy: copying ``episodes`` would drop the
    # triggers and break the search view that read it.
    op.drop_column("episode_transcripts", "pr_times")
    op.drop_column("episodes", "pr_times")
