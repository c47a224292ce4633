"""Fresh planner statistics for ``episodes``, so a new index does not lose the planner its way.

0020 created ``ix_episodes_show_id_raw_hash`` after the last ``ANALYZE``: SQLite had no
statistics for it, guessed it the best index for ``show_id = ?``, and read a show's newest
episodes through it plus a sort of the whole show instead of the ``(show_id, published_at,
id)`` range that stops at the limit (docs/benchmarks.md). ``ANALYZE`` with the bound the
store uses after a large upsert (``digests.store.episodes``), so the statistics cover every
index; PostgreSQL is analyzed too (0021 added two indexes).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA analysis_limit = 400")
    op.execute("ANALYZE episodes")


def downgrade() -> None:
    """Statistics are not schema: nothing to undo."""
