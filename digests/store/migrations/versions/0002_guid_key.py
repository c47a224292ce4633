"""Episodes get ``guid_key`` (sha256 of the guid), indexed, for buttons whose guid is hashed.

A digest button carries ``{"show", "guid_sha256"}`` when the guid is too long for a button
value; this column finds the episode again without scanning the show's guids.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 500


def upgrade() -> None:
    # NOT NULL needs a default for the rows already there (SQLite's ADD COLUMN insists);
    # the backfill below replaces it at once.
    op.add_column(
        "episodes", sa.Column("guid_key", sa.String(64), nullable=False, server_default="")
    )
    episodes = sa.table(
        "episodes", sa.column("id", sa.Integer), sa.column("guid", sa.Text), sa.column("guid_key")
    )
    bind = op.get_bind()
    # Hashed here rather than in SQL: SQLite has no sha256, and this is the same function
    # the store uses for new rows (frozen copy: a migration must not follow later code).
    rows = bind.execute(sa.select(episodes.c.id, episodes.c.guid)).all()
    update = (
        sa.update(episodes)
        .where(episodes.c.id == sa.bindparam("row_id"))
        .values(guid_key=sa.bindparam("key"))
    )
    for start in range(0, len(rows), _BATCH):
        bind.execute(
            update,
            [
                {"row_id": row.id, "key": hashlib.sha256(row.guid.encode()).hexdigest()}
                for row in rows[start : start + _BATCH]
            ],
        )
    op.create_index("ix_episodes_guid_key", "episodes", ["guid_key"])


def downgrade() -> None:
    op.drop_index("ix_episodes_guid_key", table_name="episodes")
    op.drop_column("episodes", "guid_key")
