"""Tables, as SQLAlchemy Core. The migrations create them; this module is what queries use.

Every timestamp column is a :class:`UTCDateTime`: aware datetimes in, aware UTC datetimes
out, on SQLite (which has no time zones and keeps naive UTC text) as on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from digests.store.installations import oauth_tables
from digests.types import LedgerState

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

# Full text. SQLite: an external-content FTS5 table kept in step by triggers. PostgreSQL: a
# stored generated ``tsvector`` column (headline weighted A, summary B, transcript D) with a
# GIN index. Both are created by migration 0001 and kept out of ``metadata`` because each
# exists on one backend only; they are named here for the queries.
SQLITE_FTS_TABLE = "episodes_fts"
# Its text columns; its last, ``show_key`` (migration 0021: ``showid<id>``, one token per
# show, from the view ``episodes_search``), scopes a search to shows.
SQLITE_FTS_TEXT_COLUMNS = ("headline", "summary", "transcript")
SQLITE_SHOW_KEY = "showid"
# SQLite only: a trigram FTS5 index of headline and title (migration 0012), for title words.
SQLITE_TITLE_TRIGRAMS = "episodes_fts_titles"
PG_SEARCH_COLUMN = "search_document"
_FULL_TEXT_NAMES = (SQLITE_FTS_TABLE, PG_SEARCH_COLUMN, "ix_episodes_search_document")
# Case-folded title lookups (``by_title``) use expression indexes on ``lower(headline)`` and
# ``lower(title)``, created by migration 0008; kept out of ``metadata`` too, because
# autogenerate cannot compare expression indexes on SQLite.
TITLE_INDEXES = ("ix_episodes_lower_headline", "ix_episodes_lower_title")
# PostgreSQL only (migration 0021): a search within shows reads these (``digests.store.search``).
PG_SCOPE_INDEXES = ("ix_episodes_show_id_id", "ix_episodes_show_id_search_document")


def include_object(obj: object, name: str | None, type_: str, *_: object) -> bool:
    """Alembic autogenerate filter: the full-text objects are not in ``metadata`` on purpose,
    nor the job queue's (procrastinate's own schema, migration 0029)."""
    skipped = (*_FULL_TEXT_NAMES, *TITLE_INDEXES, *PG_SCOPE_INDEXES, "procrastinate_")
    return not (name or "").startswith(skipped)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware datetimes on both backends; naive input is refused, not guessed."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()} given to the store; use UTC")
        value = value.astimezone(UTC)
        # SQLite's text format drops the offset anyway; storing naive UTC keeps the text
        # sortable and comparable with bound parameters.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


shows = sa.Table(
    "shows",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("feed", sa.Text, nullable=False, server_default=""),
    sa.Column("repo", sa.String(200), nullable=False, server_default=""),
    sa.Column("etag", sa.Text),
    sa.Column("last_modified", sa.Text),
    sa.Column("last_polled_at", UTCDateTime),
    sa.Column("last_success_at", UTCDateTime),
    sa.Column("last_error", sa.Text),
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_poll_at", UTCDateTime),
    sa.Column("failing_notified", sa.Boolean, nullable=False, server_default=sa.false()),
    # What is wrong with the feed's XML when its last read was lenient (migration 0025).
    sa.Column("read_note", sa.Text),
    # Shows added from Slack (`/episodes add-show`, migration 0016): the workspace and the
    # admin who added it; config-file shows are 'config' and have neither.
    sa.Column("source", sa.String(16), nullable=False, server_default="config"),
    sa.Column("team_id", sa.String(32)),
    sa.Column("added_by", sa.String(32)),
    sa.Column("added_at", UTCDateTime),
    # Grown by a trigger (migration 0017) on every write to the show's subscriptions;
    # quiet_plan is the key of the plan inputs under which the last plan found nothing due
    # (bot.jobs.poll_state), NULL once a plan found something.
    sa.Column("subscriptions_version", sa.Integer, nullable=False, server_default="0"),
    sa.Column("quiet_plan", sa.Text),
)

# Grown by triggers (migration 0017) on every statement writing the show's episodes: a row
# apart from the show's, so a first read of a large archive holds no lock a subscribe needs.
episode_versions = sa.Table(
    "episode_versions",
    metadata,
    sa.Column(
        "show_id", sa.Integer, sa.ForeignKey("shows.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
)

episodes = sa.Table(
    "episodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("show_id", sa.Integer, sa.ForeignKey("shows.id", ondelete="CASCADE"), nullable=False),
    sa.Column("guid", sa.Text, nullable=False),
    # sha256 of guid (digests.models.guid_key): buttons name a too-long guid by it.
    sa.Column("guid_key", sa.String(64), nullable=False, server_default=""),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("headline", sa.Text, nullable=False, server_default=""),
    sa.Column("summary", sa.Text, nullable=False, server_default=""),
    sa.Column("transcript", sa.Text, nullable=False, server_default=""),
    sa.Column("published_at", UTCDateTime, nullable=False),
    sa.Column("duration_seconds", sa.Integer),
    sa.Column("url", sa.Text),
    sa.Column("audio_url", sa.Text),
    sa.Column("nearby", sa.JSON, nullable=False),
    # PRs the text names when more than the episode_prs kept (0: all are there).
    sa.Column("pull_requests_named", sa.Integer, nullable=False, server_default="0"),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("first_seen_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    # The hash of the feed item's bytes it was read from (digests.parse.item_hashes): a
    # re-read skips the item while it hashes the same. NULL: read it every time.
    sa.Column("raw_hash", sa.String(32)),
    # Where each PR is first named, from a timed transcript: [[PR URL, seconds], …]; NULL: none.
    sa.Column("pr_times", sa.JSON),
    # Its chapters: [[start seconds, title, url or null], …]; NULL: none.
    sa.Column("chapters", sa.JSON),
    sa.UniqueConstraint("show_id", "guid"),
    sa.Index(None, "published_at"),
    # A show's episodes newest first (the poll's candidates, neighbours) stop at the limit.
    sa.Index("ix_episodes_show_id_published_at", "show_id", "published_at", "id"),
    sa.Index("ix_episodes_show_id_first_seen_at", "show_id", "first_seen_at"),
    # A show's item hashes, read from the index (the column sits after the transcript).
    sa.Index("ix_episodes_show_id_raw_hash", "show_id", "raw_hash"),
    sa.Index(None, "url"),
    sa.Index(None, "guid_key"),
)
episode_prs = sa.Table(
    "episode_prs",
    metadata,
    sa.Column(
        "episode_id",
        sa.Integer,
        sa.ForeignKey("episodes.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    # Empty when ``sentence`` names the episode's sentence (migration 0008 moved them all).
    sa.Column("context", sa.Text, nullable=False, server_default=""),
    sa.Column("sentence", sa.Integer),
    sa.Index(None, "number"),
)

# Each sentence naming PRs, once per episode (a sentence naming 470 PRs is one row, not 470
# copies): episode_prs rows point at theirs by (episode_id, sentence = position).
episode_sentences = sa.Table(
    "episode_sentences",
    metadata,
    sa.Column(
        "episode_id",
        sa.Integer,
        sa.ForeignKey("episodes.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
)

subscriptions = sa.Table(
    "subscriptions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.String(32), nullable=False),
    sa.Column("channel_id", sa.String(32), nullable=False),
    sa.Column("show", sa.String(200), nullable=False),
    # The channel's filter, structured (migration 0014; before, a "keywords" list of
    # strings): {"any": [...], "all": [...], "none": [...]}, a phrase one item.
    sa.Column("filter", sa.JSON, nullable=False, server_default=sa.text("'{}'")),
    sa.Column("recap", sa.Boolean, nullable=False, server_default=sa.true()),
    # `subscribe … pr-updates on`: a reply in a posted digest's thread when a key PR settles.
    sa.Column("pr_updates", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("paused_reason", sa.Text),
    sa.Column("paused_at", UTCDateTime),
    sa.Column("source", sa.String(16), nullable=False, server_default="slash"),
    sa.Column("created_at", UTCDateTime, nullable=False),
    # The Slack user who subscribed it by slash command (told when it is paused).
    sa.Column("created_by", sa.String(32)),
    # Set on a config-file subscription a user unsubscribed: a tombstone the config sync
    # respects, so the unsubscribe survives restarts.
    sa.Column("unsubscribed_at", UTCDateTime),
    # A pause a user asked for: what arrives from held_at until held_until (NULL: until
    # resumed) is not posted (migration 0012).
    sa.Column("held_at", UTCDateTime),
    sa.Column("held_until", UTCDateTime),
    # Daily digest mode: "HH:MM" in `timezone` (NULL: a digest per episode), and when the
    # current mode began (migration 0015).
    sa.Column("daily_at", sa.String(5)),
    sa.Column("mode_changed_at", UTCDateTime),
    sa.UniqueConstraint("team_id", "channel_id", "show"),
    sa.CheckConstraint("source IN ('config', 'slash')", name="source"),
)

deliveries = sa.Table(
    "deliveries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.String(32), nullable=False),
    sa.Column("channel_id", sa.String(32), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("key", sa.String(300), nullable=False),
    # The show an episode delivery belongs to (NULL for other kinds, and for rows from
    # before migration 0004 whose key names no known show).
    sa.Column("show", sa.String(200)),
    sa.Column("state", sa.String(16), nullable=False, server_default=LedgerState.PENDING.value),
    sa.Column("ts", sa.String(32)),
    sa.Column("thread_ts", sa.String(32)),
    sa.Column("content_hash", sa.String(64)),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("error", sa.Text),
    sa.Column("owner", sa.String(200)),
    sa.Column("claimed_at", UTCDateTime),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    # The last chat.update of a posted digest for a changed episode (`why` says "updated").
    sa.Column("edited_at", UTCDateTime),
    sa.UniqueConstraint("team_id", "channel_id", "kind", "key"),
    sa.Index(None, "state"),
    # A show's newest ledger row in one probe (bot.jobs.poll_state: has the show's ledger grown?).
    sa.Index("ix_deliveries_show_id", "show", "id"),
    sa.CheckConstraint(
        "state IN (" + ", ".join(f"'{state.value}'" for state in LedgerState) + ")", name="state"
    ),
)

# What GitHub said about a PR (digests.types.PrDetails); ``state`` is GitHub's own word, the
# shown one (merged by label, reverted) is decided in digests.pulls.
pr_details = sa.Table(
    "pr_details",
    metadata,
    sa.Column("repo", sa.String(200), primary_key=True),
    sa.Column("number", sa.Integer, primary_key=True),
    sa.Column("title", sa.Text, nullable=False, server_default=""),
    sa.Column("state", sa.String(16), nullable=False, server_default="open"),
    sa.Column("draft", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("merged_at", UTCDateTime),
    sa.Column("author", sa.String(100)),
    sa.Column("labels", sa.JSON, nullable=False),
    sa.Column("fetched_at", UTCDateTime),
    sa.Column("etag", sa.Text),
    sa.Column("missing", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.CheckConstraint("state IN ('open', 'closed', 'merged')", name="state"),
)

# Transcripts fetched from episodes' <podcast:transcript> links (digests.types.StoredTranscript):
# once per episode, by show name and guid key, so a poll re-reads them instead of re-fetching.
episode_transcripts = sa.Table(
    "episode_transcripts",
    metadata,
    sa.Column("show", sa.String(200), primary_key=True),
    sa.Column("guid_key", sa.String(64), primary_key=True),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("text", sa.Text, nullable=False, server_default=""),
    sa.Column("error", sa.Text),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
    sa.Column("fetched_at", UTCDateTime, nullable=False),
    sa.Column("pr_times", sa.JSON),  # [[PR URL, seconds], …] when the transcript is timed
    sa.CheckConstraint("status IN ('ok', 'failed')", name="status"),
)

# Chapters documents fetched from episodes' <podcast:chapters> links, once per episode, as
# transcripts are: ``chapters`` is what was read ([[start, title, url], …]) when ``ok``.
episode_chapters = sa.Table(
    "episode_chapters",
    metadata,
    sa.Column("show", sa.String(200), primary_key=True),
    sa.Column("guid_key", sa.String(64), primary_key=True),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("chapters", sa.JSON),
    sa.Column("error", sa.Text),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
    sa.Column("fetched_at", UTCDateTime, nullable=False),
    sa.CheckConstraint("status IN ('ok', 'failed')", name="status"),
)

# People's follows (/episodes follow): a DM when a new episode names the PR or the words,
# and when a followed PR's state becomes merged, closed or reverted (``last_state``).
follows = sa.Table(
    "follows",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.String(32), nullable=False),
    sa.Column("user_id", sa.String(32), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("target", sa.String(600), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("last_state", sa.String(16)),
    sa.UniqueConstraint("team_id", "user_id", "kind", "target"),
    sa.CheckConstraint("kind IN ('pr', 'words')", name="kind"),
    sa.Index("ix_follows_kind_target", "kind", "target"),
)

# Signed requests that change something (subscribe, button clicks, events), seen recently:
# a replay of one within Slack's five minutes, or an event Slack retries, is not run twice.
seen_requests = sa.Table(
    "seen_requests",
    metadata,
    sa.Column("key", sa.String(100), primary_key=True),
    sa.Column("seen_at", UTCDateTime, nullable=False, index=True),
)

# `/episodes` answers shown with a "Share in channel" button, by the token the button carries
# (JSON of the message): a click on any web process shares what the person saw.
shared_answers = sa.Table(
    "shared_answers",
    metadata,
    sa.Column("token", sa.String(64), primary_key=True),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("shown_at", UTCDateTime, nullable=False, index=True),
)

# One row (id 1): ``version`` grows with every write to ``subscriptions`` (triggers, migration
# 0026); cached answers about a channel's shows are good while it stays the same.
answers_version = sa.Table(
    "answers_version",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
)

# slack_sdk's OAuth tables (migration 0010), read and written only by its async stores.
slack_installations, slack_bots, slack_oauth_states = oauth_tables(metadata)

# Small facts a process keeps between starts, by name (migration 0030): the hash of the
# config file's channels last subscribed, so a start with the same file skips the sync.
bot_state = sa.Table(
    "bot_state",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
