"""The Store: one object, built from a database URL, passed to whoever needs it.

SQLAlchemy Core over a sync engine. Rows are turned into ``Episode`` models and small
records before they leave; every SQLAlchemy failure leaves as a one-line ``StoreError``.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar, cast

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from digests.errors import StoreError
from digests.models import Episode, PullRequestRef, guid_key
from digests.store.schema import (
    PG_SEARCH_COLUMN,
    SQLITE_FTS_TABLE,
    episode_prs,
    episodes,
    shows,
    subscriptions,
)
from digests.types import (
    UNKNOWN_DATE,
    EpisodeStatus,
    FetchState,
    PrMention,
    Subscription,
    UpsertResult,
)

_T = TypeVar("_T")
_Key = tuple[str, str]  # (show, guid)

# Well under SQLite's bound-parameter limit and PostgreSQL's comfortable IN-list size.
_CHUNK = 500
# Arbitrary constant: serialises concurrent `migrate()` calls (web + clock starting together).
_PG_MIGRATION_LOCK = 0x64696765
_MAX_SEARCH_TOKENS = 16
_WRITE_ATTEMPTS = 3
_WAL_ATTEMPTS = 25  # about 10 s of waiting, as the busy timeout allows other statements
_PG_CONNECT_TIMEOUT = 10
_MAX_SEARCH_LIMIT = 100
_WORD = re.compile(r"\w+")
_SOURCES = ("config", "slash")

_EPISODE_COLUMNS = (
    episodes.c.id,
    shows.c.name.label("show_name"),
    episodes.c.guid,
    episodes.c.title,
    episodes.c.headline,
    episodes.c.summary,
    episodes.c.transcript,
    episodes.c.published_at,
    episodes.c.duration_seconds,
    episodes.c.url,
    episodes.c.audio_url,
    episodes.c.nearby,
)
_EPISODES_JOIN = episodes.join(shows, episodes.c.show_id == shows.c.id)


class _Stored(NamedTuple):
    id: int
    content_hash: str
    published_at: datetime
    first_seen_at: datetime


def _chunks(items: Sequence[_T], size: int = _CHUNK) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _aware(value: datetime, name: str) -> datetime:
    if value.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware (got {value.isoformat()})")
    return value.astimezone(UTC)


def _reason(error: BaseException) -> str:
    """The first meaningful line of a driver error, without SQLAlchemy's boilerplate."""
    cause = getattr(error, "orig", None) or error
    text = str(cause).strip()
    line = text.splitlines()[0].strip() if text else type(cause).__name__
    return line[:300]


def url_variants(url: str) -> list[str]:
    """``url`` and the spellings of it that name the same page."""
    base = url.strip().split("#", 1)[0]
    if not base:
        return []
    stems = [base.rstrip("/") or base]
    for scheme, other in (("https://", "http://"), ("http://", "https://")):
        if base.startswith(scheme):
            stems.append(other + stems[0][len(scheme) :])
    variants = [url.strip()]
    for stem in stems:
        variants += [stem, stem + "/"]
    return list(dict.fromkeys(variants))


def search_tokens(query: str) -> list[str]:
    """User input as plain words: no operators, quotes, prefixes or column filters survive."""
    return _WORD.findall(query)[:_MAX_SEARCH_TOKENS]


def fts5_match(tokens: Sequence[str], mode: Literal["all", "any"] = "all") -> str:
    """An FTS5 MATCH string where every token is a quoted string (so ``NEAR`` is a word)."""
    quoted = ['"' + token.replace('"', '""') + '"' for token in tokens]
    return (" " if mode == "all" else " OR ").join(quoted)


def websearch_query(tokens: Sequence[str], mode: Literal["all", "any"] = "all") -> str:
    """A ``websearch_to_tsquery`` string of quoted words (``or`` and ``-`` stay words)."""
    quoted = ['"' + token.replace('"', " ") + '"' for token in tokens]
    return (" " if mode == "all" else " or ").join(quoted)


class Store:
    """Episodes, shows, subscriptions and the delivery table, on SQLite or PostgreSQL."""

    def __init__(self, url: str) -> None:
        """Create the engine (no connection yet). ``url`` is a SQLAlchemy URL."""
        try:
            parsed = make_url(url)
        except (sa_exc.ArgumentError, ValueError) as error:
            # Not echoed: a malformed URL may still carry a password.
            raise StoreError(
                "invalid database URL (expected e.g. sqlite:///path/to/file.db or "
                "postgresql+psycopg://user@host/db)"
            ) from error
        self._url = parsed
        self._safe_url = parsed.render_as_string(hide_password=True)
        kwargs: dict[str, Any] = {}
        if parsed.get_backend_name() == "sqlite":
            database = parsed.database or ""
            if database in ("", ":memory:"):
                # One shared connection, or each pooled connection would see its own empty DB.
                kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
            elif not database.startswith("file:"):
                try:
                    Path(database).parent.mkdir(parents=True, exist_ok=True)
                except OSError as error:
                    raise StoreError(
                        f"cannot create the directory for {database}: {error.strerror}"
                    ) from error
        elif parsed.get_backend_name() == "postgresql":
            kwargs.update(pool_pre_ping=True)
            if "connect_timeout" not in parsed.query:
                # libpq waits for the OS otherwise (minutes) when the host drops packets.
                kwargs.update(connect_args={"connect_timeout": _PG_CONNECT_TIMEOUT})
        try:
            self._engine = sa.create_engine(parsed, **kwargs)
        except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ImportError) as error:
            raise StoreError(f"cannot use database {self._safe_url}: {_reason(error)}") from error
        if self._engine.dialect.name == "sqlite":
            _configure_sqlite(self._engine)

    @classmethod
    def open(cls, url: str) -> Store:
        """Engine + ``migrate()``: the usual way to get a ready store."""
        store = cls(url)
        try:
            store.migrate()
        except BaseException:
            store.close()
            raise
        return store

    @property
    def engine(self) -> sa.Engine:
        """For the delivery ledger (``digests.store.ledger``), which shares this database."""
        return self._engine

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    def migrate(self) -> None:
        """Alembic ``upgrade head`` (programmatic, migrations shipped in the package)."""
        config = Config()
        script_location = resources.files("digests.store").joinpath("migrations")
        config.set_main_option("script_location", str(script_location))
        with self._tx("migrating the database") as conn:
            if self.dialect == "postgresql":
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_MIGRATION_LOCK)))
            # env.py migrates this very connection: no URL (nor password) goes into config.
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def ping(self) -> bool:
        """True when the database answers ``SELECT 1``."""
        try:
            with self._engine.connect() as conn:
                return conn.execute(sa.text("SELECT 1")).scalar() == 1
        except sa_exc.SQLAlchemyError:
            return False

    def close(self) -> None:
        self._engine.dispose()

    @contextmanager
    def _tx(self, action: str, write: bool = True) -> Iterator[sa.Connection]:
        """One transaction; SQLAlchemy errors become a one-line ``StoreError``."""
        try:
            with self._engine.connect() as conn:
                if write and self.dialect == "sqlite":
                    # Take the write lock up front: a deferred transaction that upgrades
                    # from read to write fails at once with "database is locked" instead of
                    # waiting its turn behind another process.
                    conn.execution_options(digestbot_sqlite_begin="IMMEDIATE")
                with conn.begin():
                    yield conn
        except sa_exc.DBAPIError as error:
            if error.connection_invalidated or isinstance(
                error, sa_exc.OperationalError | sa_exc.InterfaceError
            ):
                raise StoreError(
                    f"database {self._safe_url} failed while {action}: {_reason(error)}"
                ) from error
            raise StoreError(f"database refused {action}: {_reason(error)}") from error
        except sa_exc.SQLAlchemyError as error:
            raise StoreError(f"database error while {action}: {_reason(error)}") from error

    def _write(self, action: str, work: Callable[[sa.Connection], _T]) -> _T:
        """``work`` in a write transaction, run again if a concurrent writer won a race.

        Two pollers that both find a guid missing both insert it; the loser's unique
        violation means "someone else stored it", so a fresh attempt sees the row instead.
        """
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with self._tx(action) as conn:
                    return work(conn)
            except StoreError as error:
                conflict = isinstance(error.__cause__, sa_exc.IntegrityError)
                if not conflict or attempt == _WRITE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    # -- shows and their fetch state ------------------------------------------------------
    def ensure_show(self, name: str, feed: str, repo: str) -> None:
        """Create the show if missing; the configuration wins for its feed and repo."""

        def write(conn: sa.Connection) -> None:
            row = conn.execute(
                sa.select(shows.c.id, shows.c.feed, shows.c.repo).where(shows.c.name == name)
            ).first()
            if row is None:
                self._insert_show(conn, name, feed=feed, repo=repo)
            elif (row.feed, row.repo) != (feed, repo):
                conn.execute(
                    sa.update(shows).where(shows.c.id == row.id).values(feed=feed, repo=repo)
                )

        self._write(f"saving show {name!r}", write)

    def show_names(self) -> list[str]:
        with self._tx("listing shows", write=False) as conn:
            return list(conn.execute(sa.select(shows.c.name).order_by(shows.c.name)).scalars())

    def fetch_state(self, show: str) -> FetchState:
        """The show's polling state; a show never polled (or unknown) has the defaults."""
        with self._tx(f"reading fetch state of {show!r}", write=False) as conn:
            row = conn.execute(
                sa.select(
                    shows.c.etag,
                    shows.c.last_modified,
                    shows.c.last_polled_at,
                    shows.c.last_success_at,
                    shows.c.last_error,
                    shows.c.failures,
                    shows.c.next_poll_at,
                    shows.c.failing_notified,
                ).where(shows.c.name == show)
            ).first()
        if row is None:
            return FetchState()
        return FetchState(
            etag=row.etag,
            last_modified=row.last_modified,
            last_polled_at=row.last_polled_at,
            last_success_at=row.last_success_at,
            last_error=row.last_error,
            failures=row.failures,
            next_poll_at=row.next_poll_at,
            failing_notified=bool(row.failing_notified),
        )

    def save_fetch_state(self, show: str, state: FetchState) -> None:
        values = {
            "etag": state.etag,
            "last_modified": state.last_modified,
            "last_polled_at": state.last_polled_at,
            "last_success_at": state.last_success_at,
            "last_error": state.last_error,
            "failures": state.failures,
            "next_poll_at": state.next_poll_at,
            "failing_notified": state.failing_notified,
        }

        def write(conn: sa.Connection) -> None:
            updated = conn.execute(sa.update(shows).where(shows.c.name == show).values(values))
            if updated.rowcount == 0:
                self._insert_show(conn, show, **values)

        self._write(f"saving fetch state of {show!r}", write)

    @staticmethod
    def _insert_show(conn: sa.Connection, name: str, **values: Any) -> int:
        values.setdefault("feed", "")
        values.setdefault("repo", "")
        result = conn.execute(sa.insert(shows).values(name=name, **values))
        key = result.inserted_primary_key
        assert key is not None
        return int(key[0])

    def _show_ids(self, conn: sa.Connection, names: Iterable[str]) -> dict[str, int]:
        """Ids of ``names``, creating rows for shows not seen before."""
        wanted = sorted(set(names))
        ids = {
            row.name: row.id
            for row in conn.execute(
                sa.select(shows.c.id, shows.c.name).where(shows.c.name.in_(wanted))
            )
        }
        for name in wanted:
            if name not in ids:
                ids[name] = self._insert_show(conn, name)
        return ids

    # -- episodes ---------------------------------------------------------------------------
    def upsert_episodes(self, episodes_in: Iterable[Episode], now: datetime) -> list[UpsertResult]:
        """One row per (show, guid); 'changed' when the content hash differs.

        An episode the feed gives no usable date (``UNKNOWN_DATE``) is dated when the bot
        first saw it, and keeps that date on later polls: otherwise it would be posted as
        1970 and fall outside every "recent" list and weekly recap. The content hash is of
        the episode as the feed has it, so such an episode is not "changed" on every poll;
        the returned episodes carry the date as stored.

        One transaction; a constant number of statements per 500 episodes whatever happens,
        so re-reading a feed of thousands of unchanged episodes costs a few SELECTs.
        """
        now = _aware(now, "now")
        batch: dict[_Key, Episode] = {}
        for episode in episodes_in:
            # The last copy of a guid wins.
            batch[(_clean(episode.show), _clean(episode.guid))] = episode
        if not batch:
            return []
        hashes = {key: episode.content_hash() for key, episode in batch.items()}
        # In feed order (newest first, by convention), which the dates given below keep.
        undated = [key for key, episode in batch.items() if episode.published_at == UNKNOWN_DATE]

        def write(conn: sa.Connection) -> tuple[list[_Key], list[_Key], dict[_Key, Episode]]:
            show_ids = self._show_ids(conn, (show for show, _ in batch))
            existing = self._existing(conn, batch.keys(), show_ids)
            dated = dict(batch)
            repaired: list[_Key] = []
            for order, key in enumerate(undated):
                row = existing.get(key)
                # New ones a microsecond apart: a feed without dates still has a newest
                # item, so the first poll posts the newest `backfill`, not all of them.
                when = now - timedelta(microseconds=order) if row is None else row.published_at
                if row is not None and row.published_at == UNKNOWN_DATE:
                    # Stored before undated episodes got their first-seen date.
                    when = row.first_seen_at
                    repaired.append(key)
                dated[key] = batch[key].model_copy(update={"published_at": when})
            new_keys = [key for key in batch if key not in existing]
            changed_keys = [
                key
                for key in batch
                if key in existing and existing[key].content_hash != hashes[key]
            ]
            if new_keys:
                rows = [
                    _episode_values(dated[key], show_ids[key[0]], hashes[key], now)
                    | {"first_seen_at": now}
                    for key in new_keys
                ]
                # Plain executemany, then read the ids back: SQLite cannot promise RETURNING
                # order for multi-row inserts, so SQLAlchemy would fall back to one per row.
                conn.execute(sa.insert(episodes), rows)
                created = self._existing(conn, new_keys, show_ids)
                new_ids = {key: created[key].id for key in new_keys}
                self._insert_prs(conn, [(new_ids[key], dated[key]) for key in new_keys])
            if changed_keys:
                changed_ids = [existing[key].id for key in changed_keys]
                conn.execute(
                    sa.update(episodes)
                    .where(episodes.c.id == sa.bindparam("row_id"))
                    .values({name: sa.bindparam(f"v_{name}") for name in _UPDATED_COLUMNS}),
                    [
                        {"row_id": existing[key].id}
                        | {
                            f"v_{name}": value
                            for name, value in _episode_values(
                                dated[key], show_ids[key[0]], hashes[key], now
                            ).items()
                            if name in _UPDATED_COLUMNS
                        }
                        for key in changed_keys
                    ],
                )
                for chunk in _chunks(changed_ids):
                    conn.execute(sa.delete(episode_prs).where(episode_prs.c.episode_id.in_(chunk)))
                self._insert_prs(conn, [(existing[key].id, dated[key]) for key in changed_keys])
            repaired = [key for key in repaired if key not in changed_keys]
            if repaired:
                conn.execute(
                    sa.update(episodes)
                    .where(episodes.c.id == sa.bindparam("row_id"))
                    .values(published_at=sa.bindparam("when")),
                    [
                        {"row_id": existing[key].id, "when": dated[key].published_at}
                        for key in repaired
                    ],
                )
            return new_keys, changed_keys, dated

        new_keys, changed_keys, dated = self._write("saving episodes", write)
        new_set, changed_set = set(new_keys), set(changed_keys)
        results: list[UpsertResult] = []
        for key in batch:
            status = (
                EpisodeStatus.NEW
                if key in new_set
                else EpisodeStatus.CHANGED
                if key in changed_set
                else EpisodeStatus.UNCHANGED
            )
            results.append(UpsertResult(episode=dated[key], status=status))
        return results

    @staticmethod
    def _existing(
        conn: sa.Connection,
        keys: Iterable[tuple[str, str]],
        show_ids: Mapping[str, int],
    ) -> dict[tuple[str, str], _Stored]:
        """(show, guid) → what the upsert needs of its row, for the keys already stored."""
        by_show: dict[str, list[str]] = {}
        for show, guid in keys:
            by_show.setdefault(show, []).append(guid)
        found: dict[tuple[str, str], _Stored] = {}
        for show, guids in by_show.items():
            for chunk in _chunks(guids):
                rows = conn.execute(
                    sa.select(
                        episodes.c.id,
                        episodes.c.guid,
                        episodes.c.content_hash,
                        episodes.c.published_at,
                        episodes.c.first_seen_at,
                    ).where(episodes.c.show_id == show_ids[show], episodes.c.guid.in_(chunk))
                )
                for row in rows:
                    found[(show, row.guid)] = _Stored(
                        row.id, row.content_hash, row.published_at, row.first_seen_at
                    )
        return found

    @staticmethod
    def _insert_prs(conn: sa.Connection, rows: Sequence[tuple[int, Episode]]) -> None:
        values = [
            {
                "episode_id": episode_id,
                "position": position,
                "number": pr.number,
                "url": _clean(pr.url),
                "context": _clean(pr.context),
            }
            for episode_id, episode in rows
            for position, pr in enumerate(episode.pull_requests)
        ]
        if values:
            conn.execute(sa.insert(episode_prs), values)

    def _hydrate(self, conn: sa.Connection, rows: Sequence[Any]) -> list[Episode]:
        """Rows (with ``_EPISODE_COLUMNS``) → Episodes, PRs fetched in one query per chunk."""
        ids = [row.id for row in rows]
        prs: dict[int, list[PullRequestRef]] = {}
        for chunk in _chunks(ids):
            for pr in conn.execute(
                sa.select(episode_prs)
                .where(episode_prs.c.episode_id.in_(chunk))
                .order_by(episode_prs.c.episode_id, episode_prs.c.position)
            ):
                prs.setdefault(pr.episode_id, []).append(
                    PullRequestRef(number=pr.number, url=pr.url, context=pr.context)
                )
        return [
            Episode(
                guid=row.guid,
                show=row.show_name,
                title=row.title,
                headline=row.headline,
                summary=row.summary,
                transcript=row.transcript,
                published_at=row.published_at,
                duration_seconds=row.duration_seconds,
                url=row.url,
                audio_url=row.audio_url,
                pull_requests=tuple(prs.get(row.id, ())),
                nearby=tuple(row.nearby or ()),
            )
            for row in rows
        ]

    def _episodes(
        self, action: str, stmt: sa.Select[Any], shows_: Sequence[str] | None = None
    ) -> list[Episode]:
        if shows_ is not None:
            stmt = stmt.where(shows.c.name.in_(list(shows_)))
        with self._tx(action, write=False) as conn:
            return self._hydrate(conn, conn.execute(stmt).all())

    def episode(self, show: str, guid: str) -> Episode | None:
        found = self._episodes(
            f"reading episode {guid!r}",
            _select().where(shows.c.name == _clean(show), episodes.c.guid == _clean(guid)),
        )
        return found[0] if found else None

    def episode_by_guid_key(self, show: str, key: str) -> Episode | None:
        """The episode of ``show`` whose guid hashes to ``key`` (``digests.models.guid_key``):
        how a digest button names an episode whose guid is too long for a button value."""
        found = self._episodes(
            "reading an episode by guid key",
            _select().where(shows.c.name == _clean(show), episodes.c.guid_key == _clean(key)),
        )
        return found[0] if found else None

    def episode_by_url(self, url: str) -> Episode | None:
        """The episode at ``url``; a link pasted into Slack may differ from the feed's by a
        trailing slash, a ``#fragment`` or http/https, so those variants match too (the
        exact URL first). Failing those, the URL without its query string: share links
        carry ``?utm_source=…`` that the feed's link does not."""
        url = _clean(url)
        found = self._episode_at(url)
        if found is None:
            bare = url.strip().split("#", 1)[0].split("?", 1)[0]
            if bare and bare != url.strip():
                found = self._episode_at(bare)
        return found

    def _episode_at(self, url: str) -> Episode | None:
        variants = url_variants(url)
        if not variants:
            return None
        exact = sa.case((episodes.c.url == url.strip(), 0), else_=1)
        found = self._episodes(
            "reading an episode by URL",
            _select().where(episodes.c.url.in_(variants)).order_by(exact, *_NEWEST).limit(1),
        )
        return found[0] if found else None

    def first_seen(self, show: str, guids: Sequence[str]) -> dict[str, datetime]:
        """guid → when the store first had that episode of ``show`` (the guids it knows)."""
        found: dict[str, datetime] = {}
        with self._tx("reading when episodes arrived", write=False) as conn:
            for chunk in _chunks(list(dict.fromkeys(_clean(g) for g in guids))):
                rows = conn.execute(
                    sa.select(episodes.c.guid, episodes.c.first_seen_at)
                    .select_from(_EPISODES_JOIN)
                    .where(shows.c.name == _clean(show), episodes.c.guid.in_(chunk))
                )
                for guid, when in rows:
                    found[guid] = _aware(when, "first_seen_at")
        return found

    def recent(self, limit: int, shows: Sequence[str] | None = None) -> list[Episode]:
        """Newest first."""
        if limit <= 0:
            return []
        return self._episodes(
            "reading recent episodes", _select().order_by(*_NEWEST).limit(limit), shows
        )

    def between(
        self, start: datetime, end: datetime, shows: Sequence[str] | None = None
    ) -> list[Episode]:
        """Published in [start, end), oldest first."""
        start, end = _aware(start, "start"), _aware(end, "end")
        return self._episodes(
            "reading episodes by date",
            _select()
            .where(episodes.c.published_at >= start, episodes.c.published_at < end)
            .order_by(*_OLDEST),
            shows,
        )

    def nearest(self, when: datetime, shows: Sequence[str] | None = None) -> Episode | None:
        """The episode published closest to ``when``; the earlier one on a tie."""
        when = _aware(when, "when")
        before = self._episodes(
            "finding the nearest episode",
            _select().where(episodes.c.published_at <= when).order_by(*_NEWEST).limit(1),
            shows,
        )
        after = self._episodes(
            "finding the nearest episode",
            _select().where(episodes.c.published_at > when).order_by(*_OLDEST).limit(1),
            shows,
        )
        candidates = before + after
        if not candidates:
            return None
        return min(candidates, key=lambda episode: abs(episode.published_at - when))

    def neighbours(self, episode: Episode) -> tuple[Episode | None, Episode | None]:
        """(previous, next) episode of the same show by publication time."""
        with self._tx("finding neighbouring episodes", write=False) as conn:
            row = conn.execute(
                sa.select(episodes.c.id, episodes.c.published_at)
                .select_from(_EPISODES_JOIN)
                .where(
                    shows.c.name == _clean(episode.show),
                    episodes.c.guid == _clean(episode.guid),
                )
            ).first()
            when = row.published_at if row else episode.published_at
            same_show = shows.c.name == _clean(episode.show)
            # Ties on publication time fall back to row id, so equal timestamps still chain.
            if row is not None:
                earlier = sa.or_(
                    episodes.c.published_at < when,
                    sa.and_(episodes.c.published_at == when, episodes.c.id < row.id),
                )
                later = sa.or_(
                    episodes.c.published_at > when,
                    sa.and_(episodes.c.published_at == when, episodes.c.id > row.id),
                )
            else:
                earlier = episodes.c.published_at < when
                later = episodes.c.published_at > when
            prev_rows = conn.execute(
                _select().where(same_show, earlier).order_by(*_NEWEST).limit(1)
            ).all()
            next_rows = conn.execute(
                _select().where(same_show, later).order_by(*_OLDEST).limit(1)
            ).all()
            found = self._hydrate(conn, [*prev_rows, *next_rows])
        previous = found[0] if prev_rows else None
        following = found[-1] if next_rows else None
        return previous, following

    def by_title(self, title: str, shows: Sequence[str] | None = None) -> Episode | None:
        """The episode whose headline equals ``title`` (case-insensitive), else None.

        A full title (``Show: Headline``) matches too, and whitespace is normalised, so the
        titles a page lists under "Nearby episodes" find their episodes either way.
        """
        wanted = " ".join(_clean(title).split())
        if not wanted:
            return None
        needle = sa.func.lower(sa.literal(wanted, sa.Text))
        found = self._episodes(
            "finding an episode by title",
            _select()
            .where(
                sa.or_(
                    sa.func.lower(episodes.c.headline) == needle,
                    sa.func.lower(episodes.c.title) == needle,
                )
            )
            .order_by(*_NEWEST)
            .limit(1),
            shows,
        )
        return found[0] if found else None

    def by_title_words(
        self, words: Sequence[str], limit: int = 50, shows: Sequence[str] | None = None
    ) -> list[Episode]:
        """Episodes whose title contains every one of ``words`` (case-insensitive, as
        substrings, so callers check whole words themselves), newest first."""
        needles = [w.lower() for w in words if w.strip()][:_MAX_SEARCH_TOKENS]
        if not needles or limit <= 0:
            return []
        headline, title = sa.func.lower(episodes.c.headline), sa.func.lower(episodes.c.title)
        has_all = [
            sa.or_(headline.contains(n, autoescape=True), title.contains(n, autoescape=True))
            for n in needles
        ]
        return self._episodes(
            "finding episodes by title words",
            _select().where(*has_all).order_by(*_NEWEST).limit(min(limit, _MAX_SEARCH_LIMIT)),
            shows,
        )

    def by_pr(self, number: int, shows: Sequence[str] | None = None) -> list[PrMention]:
        """Every episode naming PR ``number``, newest first, with the sentence that names it."""
        stmt = (
            sa.select(*_EPISODE_COLUMNS, episode_prs.c.context.label("pr_context"))
            .select_from(
                _EPISODES_JOIN.join(episode_prs, episode_prs.c.episode_id == episodes.c.id)
            )
            .where(episode_prs.c.number == number)
            .order_by(*_NEWEST, episode_prs.c.position)
        )
        if shows is not None:
            stmt = stmt.where(shows_table_name_in(shows))
        with self._tx(f"finding PR {number}", write=False) as conn:
            rows: list[Any] = []
            seen: set[int] = set()
            for row in conn.execute(stmt):
                if row.id not in seen:  # a malformed episode could list a PR twice
                    seen.add(row.id)
                    rows.append(row)
            found = self._hydrate(conn, rows)
        return [
            PrMention(episode=episode, context=row.pr_context)
            for episode, row in zip(found, rows, strict=True)
        ]

    def search(
        self, query: str, limit: int = 10, shows: Sequence[str] | None = None
    ) -> list[Episode]:
        """Full text over headline, summary, transcript (FTS5 / PostgreSQL), ranked.

        The query is only ever a list of words: episodes with all of them first; if none
        has all, episodes with any of them, best match first.
        """
        tokens = search_tokens(query)
        limit = min(limit, _MAX_SEARCH_LIMIT)
        if not tokens or limit <= 0:
            return []
        modes: list[Literal["all", "any"]] = ["all", "any"] if len(tokens) > 1 else ["all"]
        with self._tx("searching episodes", write=False) as conn:
            for mode in modes:
                stmt = self._search_statement(tokens, mode, limit)
                if shows is not None:
                    stmt = stmt.where(shows_table_name_in(shows))
                rows = conn.execute(stmt).all()
                if rows:
                    return self._hydrate(conn, rows)
        return []

    def _search_statement(
        self, tokens: Sequence[str], mode: Literal["all", "any"], limit: int
    ) -> sa.Select[Any]:
        if self.dialect == "postgresql":
            tsquery = sa.func.websearch_to_tsquery(
                sa.literal_column("'english'"), sa.literal(websearch_query(tokens, mode))
            )
            document: sa.ColumnElement[Any] = sa.literal_column(f"episodes.{PG_SEARCH_COLUMN}")
            rank = sa.func.ts_rank(document, tsquery)
            return (
                _select()
                .where(document.op("@@")(tsquery))
                .order_by(rank.desc(), *_NEWEST)
                .limit(limit)
            )
        fts = sa.table(SQLITE_FTS_TABLE, sa.column("rowid"))
        fts_name: sa.ColumnElement[Any] = sa.literal_column(SQLITE_FTS_TABLE)
        # bm25 weights per column (headline, summary, transcript); lower scores are better.
        rank = sa.func.bm25(
            fts_name, sa.literal_column("10.0"), sa.literal_column("4.0"), sa.literal_column("1.0")
        )
        return (
            sa.select(*_EPISODE_COLUMNS)
            .select_from(_EPISODES_JOIN.join(fts, fts.c.rowid == episodes.c.id))
            .where(fts_name.op("MATCH")(fts5_match(tokens, mode)))
            .order_by(rank, *_NEWEST)
            .limit(limit)
        )

    def count_episodes(self, shows: Sequence[str] | None = None) -> int:
        stmt = sa.select(sa.func.count()).select_from(_EPISODES_JOIN)
        if shows is not None:
            stmt = stmt.where(shows_table_name_in(shows))
        with self._tx("counting episodes", write=False) as conn:
            return int(conn.execute(stmt).scalar_one())

    # -- subscriptions ----------------------------------------------------------------------
    def subscribe(
        self,
        team_id: str,
        channel_id: str,
        show: str,
        keywords: Sequence[str] = (),
        recap: bool = True,
        source: str = "slash",
        created_by: str | None = None,
    ) -> Subscription:
        """Create or replace; also un-pauses, and revives one a user unsubscribed.

        A subscription from the config file stays ``config`` when a user replaces its
        filter by slash command, so unsubscribing it still warns where it came from.
        ``created_by`` (the Slack user) replaces the earlier one when given.
        """
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {_SOURCES}, not {source!r}")
        clean: list[str] = []
        for keyword in keywords:
            keyword = " ".join(_clean(keyword).split())
            if keyword and keyword.lower() not in (k.lower() for k in clean):
                clean.append(keyword)
        now = datetime.now(UTC)
        values: dict[str, Any] = {
            "keywords": clean,
            "recap": recap,
            "paused_reason": None,
            "paused_at": None,
            "unsubscribed_at": None,
            "source": source,
            "created_by": created_by or None,
        }
        insert_ = (
            pg_dialect.insert(subscriptions)
            if self.dialect == "postgresql"
            else sqlite_dialect.insert(subscriptions)
        )
        stmt = insert_.values(team_id=team_id, channel_id=channel_id, show=show, created_at=now)
        stmt = stmt.values(**values)
        update = values | {
            "source": sa.case(
                (subscriptions.c.source == "config", "config"), else_=stmt.excluded.source
            ),
            "created_by": sa.func.coalesce(stmt.excluded.created_by, subscriptions.c.created_by),
        }
        stmt = stmt.on_conflict_do_update(
            index_elements=["team_id", "channel_id", "show"], set_=update
        )
        with self._tx(f"subscribing {channel_id} to {show!r}") as conn:
            conn.execute(stmt)
            row = conn.execute(
                sa.select(subscriptions).where(
                    subscriptions.c.team_id == team_id,
                    subscriptions.c.channel_id == channel_id,
                    subscriptions.c.show == show,
                )
            ).one()
        return _subscription(row)

    def unsubscribe(self, team_id: str, channel_id: str, show: str | None = None) -> int:
        """Drop the channel's subscription to ``show`` (all of them when None); the count.

        One from the config file is kept as a tombstone (``unsubscribed_at``) instead, so
        the config sync at the next start does not subscribe the channel again.
        """
        where = [
            subscriptions.c.team_id == team_id,
            subscriptions.c.channel_id == channel_id,
            subscriptions.c.unsubscribed_at.is_(None),
        ]
        if show is not None:
            where.append(subscriptions.c.show == show)
        with self._tx(f"unsubscribing {channel_id}") as conn:
            kept = conn.execute(
                sa.update(subscriptions)
                .where(*where, subscriptions.c.source == "config")
                .values(unsubscribed_at=datetime.now(UTC))
            ).rowcount
            dropped = conn.execute(
                sa.delete(subscriptions).where(*where, subscriptions.c.source != "config")
            ).rowcount
            return int(kept) + int(dropped)

    def subscriptions(
        self,
        team_id: str | None = None,
        channel_id: str | None = None,
        show: str | None = None,
        include_paused: bool = True,
        include_unsubscribed: bool = False,
    ) -> list[Subscription]:
        """The subscriptions matching the filters; tombstones only with
        ``include_unsubscribed`` (the config sync needs them, nothing else does)."""
        stmt = sa.select(subscriptions).order_by(
            subscriptions.c.team_id, subscriptions.c.channel_id, subscriptions.c.show
        )
        if team_id is not None:
            stmt = stmt.where(subscriptions.c.team_id == team_id)
        if channel_id is not None:
            stmt = stmt.where(subscriptions.c.channel_id == channel_id)
        if show is not None:
            stmt = stmt.where(subscriptions.c.show == show)
        if not include_paused:
            stmt = stmt.where(subscriptions.c.paused_reason.is_(None))
        if not include_unsubscribed:
            stmt = stmt.where(subscriptions.c.unsubscribed_at.is_(None))
        with self._tx("listing subscriptions", write=False) as conn:
            return [_subscription(row) for row in conn.execute(stmt)]

    def pause_channel(self, team_id: str, channel_id: str, reason: str, now: datetime) -> int:
        """Pause the channel's active subscriptions; the count (0 when already paused)."""
        return len(self.pause_subscriptions(team_id, channel_id, reason, now))

    def pause_subscriptions(
        self, team_id: str, channel_id: str, reason: str, now: datetime
    ) -> list[Subscription]:
        """Pause the channel's active subscriptions and return those this call paused.

        One statement (UPDATE … RETURNING): of two processes pausing the same channel at
        once, only one gets the rows back, so whoever set them up is told once.
        """
        now = _aware(now, "now")
        with self._tx(f"pausing {channel_id}") as conn:
            rows = conn.execute(
                sa.update(subscriptions)
                .where(
                    subscriptions.c.team_id == team_id,
                    subscriptions.c.channel_id == channel_id,
                    subscriptions.c.paused_reason.is_(None),
                    subscriptions.c.unsubscribed_at.is_(None),
                )
                .values(paused_reason=reason or "paused", paused_at=now)
                .returning(*subscriptions.c)
            ).all()
        return sorted((_subscription(row) for row in rows), key=lambda sub: sub.show)

    def resume_channel(self, team_id: str, channel_id: str) -> int:
        with self._tx(f"resuming {channel_id}") as conn:
            result = conn.execute(
                sa.update(subscriptions)
                .where(
                    subscriptions.c.team_id == team_id,
                    subscriptions.c.channel_id == channel_id,
                    subscriptions.c.paused_reason.is_not(None),
                    subscriptions.c.unsubscribed_at.is_(None),
                )
                .values(paused_reason=None, paused_at=None)
            )
            return int(result.rowcount)


_NEWEST = (episodes.c.published_at.desc(), episodes.c.id.desc())
_OLDEST = (episodes.c.published_at.asc(), episodes.c.id.asc())
_UPDATED_COLUMNS = (
    "title",
    "headline",
    "summary",
    "transcript",
    "published_at",
    "duration_seconds",
    "url",
    "audio_url",
    "nearby",
    "content_hash",
    "updated_at",
)


def _select() -> sa.Select[Any]:
    return sa.select(*_EPISODE_COLUMNS).select_from(_EPISODES_JOIN)


def shows_table_name_in(names: Sequence[str]) -> sa.ColumnElement[bool]:
    return shows.c.name.in_(list(names))


def _clean(text: str) -> str:
    """Feed and user text minus NUL, which PostgreSQL text refuses (and SQLite truncates at)."""
    return text.replace("\x00", "")


def _clean_opt(text: str | None) -> str | None:
    return None if text is None else _clean(text)


def _episode_values(
    episode: Episode, show_id: int, content_hash: str, now: datetime
) -> dict[str, Any]:
    return {
        "show_id": show_id,
        "guid": _clean(episode.guid),
        "guid_key": guid_key(_clean(episode.guid)),
        "title": _clean(episode.title),
        "headline": _clean(episode.headline),
        "summary": _clean(episode.summary),
        "transcript": _clean(episode.transcript),
        "published_at": episode.published_at,
        "duration_seconds": episode.duration_seconds,
        "url": _clean_opt(episode.url),
        "audio_url": _clean_opt(episode.audio_url),
        "nearby": [_clean(title) for title in episode.nearby],
        "content_hash": content_hash,
        "updated_at": now,
    }


def _subscription(row: sa.Row[Any]) -> Subscription:
    return Subscription(
        team_id=row.team_id,
        channel_id=row.channel_id,
        show=row.show,
        keywords=tuple(row.keywords or ()),
        recap=bool(row.recap),
        paused_reason=row.paused_reason,
        paused_at=row.paused_at,
        source=cast(Literal["config", "slash"], row.source),
        created_at=row.created_at,
        created_by=row.created_by,
        unsubscribed_at=row.unsubscribed_at,
    )


def _sqlite_wal(cursor: Any) -> bool:
    """Put the database file in WAL mode (once per file: the mode persists); False for an
    in-memory database, which has no WAL.

    Switching needs the file to itself and SQLite reports "database is locked" at once,
    without the busy timeout, when another connection (a web and a clock process starting
    together) has it open: so wait and look again, for about as long as that timeout.
    """
    for attempt in range(_WAL_ATTEMPTS):
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if mode == "memory":
                return False
            if mode != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return True
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == _WAL_ATTEMPTS - 1:
                raise
            time.sleep(min(0.01 * 2**attempt, 0.5))
    raise AssertionError("unreachable")


def _configure_sqlite(engine: sa.Engine) -> None:
    """Foreign keys, WAL and a busy timeout on every connection; BEGIN issued by us."""

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # pysqlite's own transaction handling defers BEGIN and ignores the mode we want.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA busy_timeout = 10000")
            if _sqlite_wal(cursor):
                cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        mode = conn.get_execution_options().get("digestbot_sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}".strip())
