"""Item hashes: ``episodes.raw_hash``, the hash of the feed item's bytes an episode was read
from, so a feed answered 200 without validators skips the text work of every item that
hashes as before (``digests.parse.item_hashes``); ``ix_episodes_show_id_raw_hash`` reads a
show's hashes from the index. Existing rows start NULL: the next poll reads their items as
it always did and stores the hashes of those that read the same.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("episodes", sa.Column("raw_hash", sa.String(32), nullable=True))
    op.create_index("ix_episodes_show_id_raw_hash", "episodes", ["show_id", "raw_hash"])


def downgrade() -> None:
    op.drop_index("ix_episodes_show_id_raw_hash", table_name="episodes")
    # Plain ALTER TABLE (SQLite 3.35+), no batch copy: copying ``episodes`` would drop the
    # plan-input triggers 0017 put on it.
    op.drop_column("episodes", "raw_hash")
