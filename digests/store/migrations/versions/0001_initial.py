"""Initial schema: shows, episodes (+ full text), episode PRs, subscriptions, deliveries.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies (a migration must not change when schema.py does).
_TS = sa.DateTime(timezone=True)
# PostgreSQL keeps the weighted document as a stored generated column: ts_rank then reads it
# instead of re-parsing every matching transcript (an expression index only helps the match;
# ranking 5,000 matches by re-running to_tsvector took about a second).
_PG_SEARCH_DOCUMENT = """
    ALTER TABLE episodes ADD COLUMN search_document tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', headline), 'A')
        || setweight(to_tsvector('english', summary), 'B')
        || setweight(to_tsvector('english', transcript), 'D')
    ) STORED
"""

# External-content FTS5 table: the text lives once, in `episodes`; triggers keep the index
# in step with every insert, update and delete, whoever writes the row.
_SQLITE_FTS = [
    """
    CREATE VIRTUAL TABLE episodes_fts USING fts5(
        headline, summary, transcript,
        content='episodes', content_rowid='id', tokenize='porter unicode61'
    )
    """,
    """
    CREATE TRIGGER episodes_fts_ai AFTER INSERT ON episodes BEGIN
        INSERT INTO episodes_fts(rowid, headline, summary, transcript)
        VALUES (new.id, new.headline, new.summary, new.transcript);
    END
    """,
    """
    CREATE TRIGGER episodes_fts_ad AFTER DELETE ON episodes BEGIN
        INSERT INTO episodes_fts(episodes_fts, rowid, headline, summary, transcript)
        VALUES ('delete', old.id, old.headline, old.summary, old.transcript);
    END
    """,
    """
    CREATE TRIGGER episodes_fts_au AFTER UPDATE OF headline, summary, transcript ON episodes
    BEGIN
        INSERT INTO episodes_fts(episodes_fts, rowid, headline, summary, transcript)
        VALUES ('delete', old.id, old.headline, old.summary, old.transcript);
        INSERT INTO episodes_fts(rowid, headline, summary, transcript)
        VALUES (new.id, new.headline, new.summary, new.transcript);
    END
    """,
]


def upgrade() -> None:
    op.create_table(
        "shows",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("feed", sa.Text, nullable=False, server_default=""),
        sa.Column("repo", sa.String(200), nullable=False, server_default=""),
        sa.Column("etag", sa.Text),
        sa.Column("last_modified", sa.Text),
        sa.Column("last_polled_at", _TS),
        sa.Column("last_success_at", _TS),
        sa.Column("last_error", sa.Text),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_poll_at", _TS),
        sa.Column("failing_notified", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("id", name="pk_shows"),
        sa.UniqueConstraint("name", name="uq_shows_name"),
    )
    op.create_table(
        "episodes",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("show_id", sa.Integer, nullable=False),
        sa.Column("guid", sa.Text, nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("headline", sa.Text, nullable=False, server_default=""),
        sa.Column("summary", sa.Text, nullable=False, server_default=""),
        sa.Column("transcript", sa.Text, nullable=False, server_default=""),
        sa.Column("published_at", _TS, nullable=False),
        sa.Column("duration_seconds", sa.Integer),
        sa.Column("url", sa.Text),
        sa.Column("audio_url", sa.Text),
        sa.Column("nearby", sa.JSON, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("first_seen_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_episodes"),
        sa.ForeignKeyConstraint(
            ["show_id"], ["shows.id"], name="fk_episodes_show_id_shows", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("show_id", "guid", name="uq_episodes_show_id_guid"),
    )
    op.create_index("ix_episodes_published_at", "episodes", ["published_at"])
    op.create_index("ix_episodes_url", "episodes", ["url"])
    op.create_table(
        "episode_prs",
        sa.Column("episode_id", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("context", sa.Text, nullable=False, server_default=""),
        sa.PrimaryKeyConstraint("episode_id", "position", name="pk_episode_prs"),
        sa.ForeignKeyConstraint(
            ["episode_id"],
            ["episodes.id"],
            name="fk_episode_prs_episode_id_episodes",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_episode_prs_number", "episode_prs", ["number"])
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("show", sa.String(200), nullable=False),
        sa.Column("keywords", sa.JSON, nullable=False),
        sa.Column("recap", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("paused_reason", sa.Text),
        sa.Column("paused_at", _TS),
        sa.Column("source", sa.String(16), nullable=False, server_default="slash"),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_subscriptions"),
        sa.UniqueConstraint(
            "team_id", "channel_id", "show", name="uq_subscriptions_team_id_channel_id_show"
        ),
        sa.CheckConstraint("source IN ('config', 'slash')", name="ck_subscriptions_source"),
    )
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("state", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("ts", sa.String(32)),
        sa.Column("thread_ts", sa.String(32)),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("error", sa.Text),
        sa.Column("owner", sa.String(200)),
        sa.Column("claimed_at", _TS),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_deliveries"),
        sa.UniqueConstraint(
            "team_id",
            "channel_id",
            "kind",
            "key",
            name="uq_deliveries_team_id_channel_id_kind_key",
        ),
        sa.CheckConstraint(
            "state IN ('pending', 'posting', 'posted', 'failed', 'paused')",
            name="ck_deliveries_state",
        ),
    )
    op.create_index("ix_deliveries_state", "deliveries", ["state"])

    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in _SQLITE_FTS:
            op.execute(statement)
    elif dialect == "postgresql":
        op.execute(_PG_SEARCH_DOCUMENT)
        op.create_index(
            "ix_episodes_search_document", "episodes", ["search_document"], postgresql_using="gin"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("episodes_fts_ai", "episodes_fts_ad", "episodes_fts_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS episodes_fts")
    op.drop_table("deliveries")
    op.drop_table("subscriptions")
    op.drop_table("episode_prs")
    op.drop_table("episodes")
    op.drop_table("shows")
