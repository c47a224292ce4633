"""Search within some shows answered by the full-text index, not by the whole archive.

SQLite: ``episodes_fts`` gains a ``show_key`` column (``showid<id>``, one token no text
says), so a search scoped to some shows is one FTS5 query (``show_key : "showid3" AND …``)
that intersects the show's short posting list with the words' inside the index. Before, the
scope was a ``rowid IN (…)`` over the show's episodes: one probe of the index per episode of
the show, or, for a word common in the archive and absent from the show, every match in the
archive read to find none (docs/benchmarks.md). The index's content is the view
``episodes_search`` (the episode's text columns and its show key), so FTS5's own rebuild and
checks read what the triggers write. The text columns keep their order, so bm25's weights
and scores are unchanged (the query gives the new column weight 0 and keeps the user's words
to the text columns). Rebuilt from ``episodes``, then merged into one segment.

PostgreSQL: the same scope had the planner walk the primary key backwards, guessing the
show and the words independent, so a word common in the archive and absent from the show
read all 100k rows. The query now reads the show's newest episodes first, by the
new ``(show_id, id)`` index, and otherwise asks a GIN index over ``(show_id,
search_document)``, which intersects the show and the words inside the index. A GIN index
of an integer needs ``btree_gin`` (a trusted extension that ships with PostgreSQL), found
or created as ``pg_trgm`` is in 0018; without it that index is skipped with a log line
(the query stays correct, only a rare word within a large show is slower).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger(__name__)

_TRIGGERS = ("episodes_fts_ai", "episodes_fts_ad", "episodes_fts_au")
_TEXT = ("headline", "summary", "transcript")
_VIEW = """CREATE VIEW episodes_search AS
    SELECT id, headline, summary, transcript, 'showid' || show_id AS show_key FROM episodes"""


def _values(row: str, shows: bool) -> str:
    """A trigger's values for the index: ``row``'s text columns, and its show key."""
    values = [f"{row}.{column}" for column in _TEXT]
    if shows:
        values.append(f"'showid' || {row}.show_id")
    return ", ".join(values)


def _fts(content: str, shows: bool) -> list[str]:
    """``episodes_fts`` over ``content`` (with the show key or without), its triggers and
    its rebuild."""
    names = ", ".join((*_TEXT, "show_key") if shows else _TEXT)
    new, old = _values("new", shows), _values("old", shows)
    changed = ", ".join((*_TEXT, "show_id") if shows else _TEXT)
    delete = (
        f"INSERT INTO episodes_fts(episodes_fts, rowid, {names}) VALUES ('delete', old.id, {old})"
    )
    insert = f"INSERT INTO episodes_fts(rowid, {names}) VALUES (new.id, {new})"
    return [
        *(f"DROP TRIGGER IF EXISTS {trigger}" for trigger in _TRIGGERS),
        "DROP TABLE IF EXISTS episodes_fts",
        f"""CREATE VIRTUAL TABLE episodes_fts USING fts5(
            {names}, content='{content}', content_rowid='id', tokenize='porter unicode61'
        )""",
        f"CREATE TRIGGER episodes_fts_ai AFTER INSERT ON episodes BEGIN {insert}; END",
        f"CREATE TRIGGER episodes_fts_ad AFTER DELETE ON episodes BEGIN {delete}; END",
        f"""CREATE TRIGGER episodes_fts_au AFTER UPDATE OF {changed} ON episodes
            BEGIN {delete}; {insert}; END""",
        "INSERT INTO episodes_fts(episodes_fts) VALUES ('rebuild')",
        "INSERT INTO episodes_fts(episodes_fts) VALUES ('optimize')",
    ]


def _btree_gin_schema(conn: sa.Connection) -> str | None:
    """The schema ``btree_gin`` is installed in, creating it if need be; None without it."""
    find = sa.text(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'btree_gin'"
    )
    found = conn.execute(find).scalar()
    if found is None:
        public = conn.execute(sa.text("SELECT 1 FROM pg_namespace WHERE nspname = 'public'"))
        where = " SCHEMA public" if public.scalar() else ""
        try:
            with conn.begin_nested():
                conn.exec_driver_sql(f"CREATE EXTENSION IF NOT EXISTS btree_gin{where}")
        except sa.exc.DBAPIError as exc:
            log.warning("btree_gin is not available (%s): no GIN index of show and words", exc)
            return None
        found = conn.execute(find).scalar()
    return str(found) if found is not None else None


def _upgrade_postgresql(conn: sa.Connection) -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_episodes_show_id_id ON episodes (show_id, id)")
    schema = _btree_gin_schema(conn)
    if schema is not None:
        quoted = conn.dialect.identifier_preparer.quote_identifier(schema)
        op.execute(
            "CREATE INDEX IF NOT EXISTS ix_episodes_show_id_search_document ON episodes"
            f" USING gin (show_id {quoted}.int4_ops, search_document)"
        )
    op.execute("ANALYZE episodes")


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        _upgrade_postgresql(conn)
        return
    op.execute("DROP VIEW IF EXISTS episodes_search")
    op.execute(_VIEW)
    for statement in _fts("episodes_search", shows=True):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # The extension stays: other schemas of the database may use it.
        op.execute("DROP INDEX IF EXISTS ix_episodes_show_id_search_document")
        op.execute("DROP INDEX IF EXISTS ix_episodes_show_id_id")
        return
    for statement in _fts("episodes", shows=False):
        op.execute(statement)
    op.execute("DROP VIEW IF EXISTS episodes_search")
