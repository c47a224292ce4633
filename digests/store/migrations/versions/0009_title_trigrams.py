"""SQLite: a trigram index of episode titles, so title-word lookups stop scanning the archive.

``by_title_words`` looks for words as substrings of the headline or the full title; no
B-tree index answers ``LIKE '%word%'``. An external-content FTS5 table with the trigram
tokenizer (SQLite 3.34+) does: it finds the rows that contain every word, the query then
checks them exactly as before. Kept in step by triggers, like ``episodes_fts``. PostgreSQL
is left as it is (its equivalent, ``pg_trgm``, is an extension a deployment may not have).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STATEMENTS = [
    """
    CREATE VIRTUAL TABLE episodes_fts_titles USING fts5(
        headline, title, content='episodes', content_rowid='id', tokenize='trigram'
    )
    """,
    """
    CREATE TRIGGER episodes_fts_titles_ai AFTER INSERT ON episodes BEGIN
        INSERT INTO episodes_fts_titles(rowid, headline, title)
        VALUES (new.id, new.headline, new.title);
    END
    """,
    """
    CREATE TRIGGER episodes_fts_titles_ad AFTER DELETE ON episodes BEGIN
        INSERT INTO episodes_fts_titles(episodes_fts_titles, rowid, headline, title)
        VALUES ('delete', old.id, old.headline, old.title);
    END
    """,
    """
    CREATE TRIGGER episodes_fts_titles_au AFTER UPDATE OF headline, title ON episodes BEGIN
        INSERT INTO episodes_fts_titles(episodes_fts_titles, rowid, headline, title)
        VALUES ('delete', old.id, old.headline, old.title);
        INSERT INTO episodes_fts_titles(rowid, headline, title)
        VALUES (new.id, new.headline, new.title);
    END
    """,
    "INSERT INTO episodes_fts_titles(episodes_fts_titles) VALUES ('rebuild')",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in _STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for trigger in ("episodes_fts_titles_ai", "episodes_fts_titles_ad", "episodes_fts_titles_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS episodes_fts_titles")
