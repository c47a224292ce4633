"""Episode transcripts fetched from ``<podcast:transcript>`` links, once per episode.

Keyed by show name and guid key (sha256 of the guid, as ``episodes.guid_key``); ``status``
is ``ok`` (``text`` holds the converted transcript) or ``failed`` (``error`` says why,
``attempts`` how often it was tried), so a poll reads them back instead of fetching again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "episode_transcripts",
        sa.Column("show", sa.String(200), nullable=False),
        sa.Column("guid_key", sa.String(64), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("text", sa.Text, nullable=False, server_default=""),
        sa.Column("error", sa.Text),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("show", "guid_key", name="pk_episode_transcripts"),
        sa.CheckConstraint("status IN ('ok', 'failed')", name="ck_episode_transcripts_status"),
    )


def downgrade() -> None:
    op.drop_table("episode_transcripts")
