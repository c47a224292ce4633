"""Shows added from Slack: where a show came from (``source``: 'config' or 'slack'), and for
one added by `/episodes add-show` the workspace, the admin and when.

Existing rows are config-file shows.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTER TABLE, no batch copy on SQLite: copying ``shows`` would drop the original,
    # and with foreign keys on that deletes every episode (ON DELETE CASCADE).
    op.add_column(
        "shows", sa.Column("source", sa.String(16), nullable=False, server_default="config")
    )
    op.add_column("shows", sa.Column("team_id", sa.String(32)))
    op.add_column("shows", sa.Column("added_by", sa.String(32)))
    op.add_column("shows", sa.Column("added_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    # The shows added from Slack go with the columns that tell them apart (their episodes
    # with them, by the foreign key): an older release would take them for config shows.
    op.execute("DELETE FROM shows WHERE source = 'slack'")
    # ALTER TABLE … DROP COLUMN on both (SQLite since 3.35), for the reason above.
    for column in ("added_at", "added_by", "team_id", "source"):
        op.drop_column("shows", column)
