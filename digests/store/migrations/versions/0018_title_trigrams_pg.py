"""PostgreSQL: trigram indexes of the case-folded titles, so title words stop scanning the archive.

``by_title_words`` looks for words as substrings (``lower(headline) LIKE '%word%'``); no
B-tree answers that, so PostgreSQL read every episode newest first until it had found its
candidates (all of them, for a word in few titles). ``pg_trgm``'s GIN operator class does
answer ``LIKE '%word%'``: these index ``lower(headline)`` and ``lower(title)``, the very
expressions the query compares, so nothing in the query changes. SQLite has had its trigram
table since 0009; this migration does nothing there.

``pg_trgm`` ships with PostgreSQL and is a trusted extension (PostgreSQL 13+: a database
owner may create it). Where it is already installed, its schema is used; otherwise it is
created in ``public`` when that exists (so dropping an application schema never drops the
extension under another's indexes). A server without it, or a role that may not create
it, keeps working without the indexes (the query is the same, only slower), and the
migration says so in the log.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger(__name__)

INDEXES = {
    "ix_episodes_lower_headline_trgm": "headline",
    "ix_episodes_lower_title_trgm": "title",
}


def _trgm_schema(conn: sa.Connection) -> str | None:
    """The schema ``pg_trgm`` is installed in, creating it if need be; None without it."""
    find = sa.text(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'pg_trgm'"
    )
    found = conn.execute(find).scalar()
    if found is not None:
        return str(found)
    has_public = conn.execute(sa.text("SELECT 1 FROM pg_namespace WHERE nspname = 'public'"))
    where = " SCHEMA public" if has_public.scalar() else ""
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(f"CREATE EXTENSION IF NOT EXISTS pg_trgm{where}")
    except sa.exc.DBAPIError as exc:
        log.warning("pg_trgm is not available (%s): title words are read without an index", exc)
        return None
    found = conn.execute(find).scalar()
    return str(found) if found is not None else None


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    schema = _trgm_schema(conn)
    if schema is None:
        return
    quoted = conn.dialect.identifier_preparer.quote_identifier(schema)
    for name, column in INDEXES.items():
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON episodes"
            f" USING gin (lower({column}) {quoted}.gin_trgm_ops)"
        )
    op.execute("ANALYZE episodes")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # The extension stays: other schemas of the database may use it.
    for name in INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
