"""Episodes: the state an upsert is decided on, applying its intents, and reading them back.

What is new, changed or unchanged (and how an undated item is dated) is decided by
:func:`digests.decide.update.decide_upsert`; this module only reads the state it needs and writes
what it says. Rows become ``Episode`` models (with their PRs) before they leave.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from digests.decide.update import decide_upsert, episode_identity, latest_copies
from digests.models import Chapter, Episode, PrTime, PullRequestRef, guid_key
from digests.store.database import Database, aware, chunks, clean, clean_opt
from digests.store.schema import episode_prs, episode_sentences, episodes, shows
from digests.store.shows import show_ids
from digests.types import (
    EpisodeIdentity,
    EpisodeStatus,
    EpisodeWrite,
    StoredEpisode,
    UpsertIntents,
    UpsertResult,
)

EPISODE_COLUMNS = (
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
    episodes.c.pull_requests_named,
    episodes.c.pr_times,
    episodes.c.chapters,
)
EPISODES_JOIN = episodes.join(shows, episodes.c.show_id == shows.c.id)
NEWEST = (episodes.c.published_at.desc(), episodes.c.id.desc())
OLDEST = (episodes.c.published_at.asc(), episodes.c.id.asc())
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
    "pull_requests_named",
    "pr_times",
    "chapters",
    "content_hash",
    "raw_hash",
    "updated_at",
)


# In place of the transcript when a read does not need it (a week's list, a count).
NO_TRANSCRIPT = sa.literal("", sa.Text).label("transcript")


def select_episodes(*, transcripts: bool = True) -> sa.Select[Any]:
    """Episode rows with ``EPISODE_COLUMNS``; ``transcripts=False`` reads each transcript
    as ``""`` (the largest column by far, which only search and keyword filters look at)."""
    if transcripts:
        return sa.select(*EPISODE_COLUMNS).select_from(EPISODES_JOIN)
    columns = [NO_TRANSCRIPT if c is episodes.c.transcript else c for c in EPISODE_COLUMNS]
    return sa.select(*columns).select_from(EPISODES_JOIN)


def in_shows(stmt: sa.Select[Any], names: Sequence[str] | None) -> sa.Select[Any]:
    """``stmt`` limited to the shows named (None: every show).

    By show id, not by the joined name: one show is an equality the planner reads the
    ``(show_id, published_at, id)`` index with, newest first, stopping at the limit.
    """
    if names is None:
        return stmt
    wanted = list(dict.fromkeys(clean(n) for n in names))
    if len(wanted) == 1:
        one = sa.select(shows.c.id).where(shows.c.name == wanted[0]).scalar_subquery()
        return stmt.where(episodes.c.show_id == one)
    return stmt.where(episodes.c.show_id.in_(sa.select(shows.c.id).where(shows.c.name.in_(wanted))))


# episode_prs with the sentence each names (stored once per episode, see schema).
PRS_JOIN = episode_prs.outerjoin(
    episode_sentences,
    sa.and_(
        episode_sentences.c.episode_id == episode_prs.c.episode_id,
        episode_sentences.c.position == episode_prs.c.sentence,
    ),
)
PR_CONTEXT = sa.func.coalesce(episode_sentences.c.text, episode_prs.c.context)


# The PRs of the episodes ``ids`` names, in order: one statement, bound at execution, so
# no read builds and keys it again (a week's read did, for its 120 episodes).
_PRS_OF = (
    sa.select(
        episode_prs.c.episode_id,
        episode_prs.c.number,
        episode_prs.c.url,
        PR_CONTEXT.label("context"),
    )
    .select_from(PRS_JOIN)
    .where(episode_prs.c.episode_id.in_(sa.bindparam("ids", expanding=True)))
    .order_by(episode_prs.c.episode_id, episode_prs.c.position)
)

# What ``hydrate`` reads of each row, in the order it unpacks them.
_HYDRATED = (
    "id",
    "guid",
    "show_name",
    "title",
    "headline",
    "summary",
    "transcript",
    "published_at",
    "duration_seconds",
    "url",
    "audio_url",
    "nearby",
    "pull_requests_named",
    "pr_times",
    "chapters",
)


def hydrate(
    conn: sa.Connection, rows: Sequence[Any], *, pull_requests: bool = True
) -> list[Episode]:
    """Rows of one statement (with ``EPISODE_COLUMNS``) → Episodes, PRs fetched in one
    query per chunk (none read, and none on the Episodes, without ``pull_requests``)."""
    if not rows:
        return []
    # The columns by position, found once: a Row's attribute lookup by name costs about
    # a microsecond each, 13 of them an episode (a week of 20 shows reads 100-140).
    fields = list(rows[0]._fields)
    take = operator.itemgetter(*(fields.index(name) for name in _HYDRATED))
    values = [take(row) for row in rows]
    ids = [v[0] for v in values]
    prs: dict[int, list[PullRequestRef]] = {}
    for chunk in chunks(ids) if pull_requests else ():
        # one fetchall: iterating the result fetches a row per call (psycopg)
        for pr in conn.execute(_PRS_OF, {"ids": list(chunk)}).all():
            episode_id, number, url, context = pr
            prs.setdefault(episode_id, []).append(PullRequestRef(number, url, context))
    out: list[Episode] = []
    for (
        episode_id,
        guid,
        show,
        title,
        headline,
        summary,
        transcript,
        published_at,
        duration_seconds,
        url,
        audio_url,
        nearby,
        named,
        times,
        chapters,
    ) in values:
        out.append(
            Episode(
                guid=guid,
                show=show,
                title=title,
                headline=headline,
                summary=summary,
                transcript=transcript,
                published_at=published_at,
                duration_seconds=duration_seconds,
                url=url,
                audio_url=audio_url,
                pull_requests=tuple(prs.get(episode_id, ())),
                nearby=tuple(nearby or ()),
                pull_requests_named=named or 0,
                pr_times=read_pr_times(times),
                chapters=read_chapters(chapters),
            )
        )
    return out


def read_pr_times(value: Any) -> tuple[PrTime, ...]:
    """``[[url, seconds], …]`` as stored (NULL or anything else: none)."""
    if not isinstance(value, list):
        return ()
    return tuple(
        PrTime(str(url), int(at))
        for url, at in (v for v in value if isinstance(v, list) and len(v) == 2)
    )


def write_pr_times(times: Iterable[PrTime]) -> list[list[Any]] | None:
    return [[t.url, t.at] for t in times] or None


def read_chapters(value: Any) -> tuple[Chapter, ...]:
    """``[[start, title, url], …]`` as stored (NULL or anything else: none)."""
    if not isinstance(value, list):
        return ()
    return tuple(
        Chapter(int(start), str(title), str(url) if url else None)
        for start, title, url in (v for v in value if isinstance(v, list) and len(v) == 3)
    )


def write_chapters(chapters: Iterable[Chapter]) -> list[list[Any]] | None:
    return [[c.start, c.title, c.url] for c in chapters] or None


def _stored(
    conn: sa.Connection, keys: Iterable[EpisodeIdentity]
) -> dict[EpisodeIdentity, StoredEpisode]:
    """(show, guid) → what the upsert decider needs of its row, for the keys stored."""
    by_show: dict[str, list[str]] = {}
    for show, guid in keys:
        by_show.setdefault(show, []).append(guid)
    found: dict[EpisodeIdentity, StoredEpisode] = {}
    for show, guids in by_show.items():
        show_id = sa.select(shows.c.id).where(shows.c.name == show).scalar_subquery()
        for chunk in chunks(guids):
            rows = conn.execute(
                sa.select(
                    episodes.c.id,
                    episodes.c.guid,
                    episodes.c.content_hash,
                    episodes.c.published_at,
                    episodes.c.first_seen_at,
                    episodes.c.raw_hash,
                ).where(episodes.c.show_id == show_id, episodes.c.guid.in_(chunk))
            )
            for row in rows:
                found[(show, row.guid)] = StoredEpisode(
                    row.id, row.content_hash, row.published_at, row.first_seen_at, row.raw_hash
                )
    return found


def _values(write: EpisodeWrite, now: datetime) -> dict[str, Any]:
    episode = write.episode
    return {
        "guid": clean(episode.guid),
        "guid_key": guid_key(clean(episode.guid)),
        "title": clean(episode.title),
        "headline": clean(episode.headline),
        "summary": clean(episode.summary),
        "transcript": clean(episode.transcript),
        "published_at": episode.published_at,
        "duration_seconds": episode.duration_seconds,
        "url": clean_opt(episode.url),
        "audio_url": clean_opt(episode.audio_url),
        "nearby": [clean(title) for title in episode.nearby],
        "pull_requests_named": episode.pull_requests_named,
        "pr_times": write_pr_times(episode.pr_times),
        "chapters": write_chapters(episode.chapters),
        "content_hash": write.content_hash,
        "raw_hash": episode.raw_hash,
        "updated_at": now,
    }


def _insert_prs(conn: sa.Connection, rows: Sequence[tuple[int, Episode]]) -> None:
    """PR rows, each sentence once per episode (at the position of its first PR)."""
    values: list[dict[str, Any]] = []
    sentences: list[dict[str, Any]] = []
    for episode_id, episode in rows:
        first: dict[str, int] = {}
        for position, pr in enumerate(episode.pull_requests):
            context = clean(pr.context)
            sentence = first.setdefault(context, position) if context else None
            if sentence == position:
                sentences.append({"episode_id": episode_id, "position": position, "text": context})
            values.append(
                {
                    "episode_id": episode_id,
                    "position": position,
                    "number": pr.number,
                    "url": clean(pr.url),
                    "context": "",
                    "sentence": sentence,
                }
            )
    if sentences:
        conn.execute(sa.insert(episode_sentences), sentences)
    if values:
        conn.execute(sa.insert(episode_prs), values)


def _insert(conn: sa.Connection, writes: Sequence[EpisodeWrite], now: datetime) -> None:
    keys = [episode_identity(write.episode) for write in writes]
    ids = show_ids(conn, (show for show, _ in keys))
    rows = [
        _values(write, now) | {"show_id": ids[show], "first_seen_at": now}
        for (show, _), write in zip(keys, writes, strict=True)
    ]
    # Plain executemany, then read the ids back: SQLite cannot promise RETURNING order for
    # multi-row inserts, so SQLAlchemy would fall back to one statement per row.
    conn.execute(sa.insert(episodes), rows)
    created = _stored(conn, keys)
    _insert_prs(conn, [(created[key].id, w.episode) for key, w in zip(keys, writes, strict=True)])


def _update(conn: sa.Connection, writes: Sequence[EpisodeWrite], now: datetime) -> None:
    params = []
    for write in writes:
        assert write.id is not None
        values = _values(write, now)
        params.append(
            {"row_id": write.id} | {f"v_{name}": values[name] for name in _UPDATED_COLUMNS}
        )
    conn.execute(
        sa.update(episodes)
        .where(episodes.c.id == sa.bindparam("row_id"))
        .values({name: sa.bindparam(f"v_{name}") for name in _UPDATED_COLUMNS}),
        params,
    )
    ids = [write.id for write in writes if write.id is not None]
    for chunk in chunks(ids):
        conn.execute(sa.delete(episode_prs).where(episode_prs.c.episode_id.in_(chunk)))
        conn.execute(
            sa.delete(episode_sentences).where(episode_sentences.c.episode_id.in_(chunk))
        )
    _insert_prs(conn, [(write.id, write.episode) for write in writes if write.id is not None])


def apply(conn: sa.Connection, intents: UpsertIntents, now: datetime) -> None:
    """Write what the decider said; a constant number of statements per 500 episodes."""
    if intents.inserts:
        _insert(conn, intents.inserts, now)
    if intents.updates:
        _update(conn, intents.updates, now)
    if intents.redates:
        conn.execute(
            sa.update(episodes)
            .where(episodes.c.id == sa.bindparam("row_id"))
            .values(published_at=sa.bindparam("when")),
            [{"row_id": r.id, "when": r.published_at} for r in intents.redates],
        )
    if intents.rehashes:
        conn.execute(
            sa.update(episodes)
            .where(episodes.c.id == sa.bindparam("row_id"))
            .values(raw_hash=sa.bindparam("hash")),
            [{"row_id": r.id, "hash": r.raw_hash} for r in intents.rehashes],
        )


# An upsert storing at least this many new episodes (a first read of an archive) refreshes
# the planner's statistics: both engines otherwise go on planning for the table it was, and
# SQLite never gathers them by itself (the title and show indexes are only chosen with them).
ANALYZE_AFTER = 1000


def refresh_statistics(conn: sa.Connection) -> None:
    if conn.dialect.name == "sqlite":
        # A sample is enough to choose indexes, and keeps this cheap on a large table.
        conn.exec_driver_sql("PRAGMA analysis_limit = 400")
    # The PRs too: `pr <n>` joins them, and they grow six times as fast.
    for table in ("episodes", "episode_prs"):
        conn.exec_driver_sql(f"ANALYZE {table}")


class EpisodesMixin:
    """The ``episodes`` aggregate of :class:`digests.store.Store`: upsert and lookups."""

    _db: Database

    def state_for_update(
        self, episodes_in: Iterable[Episode]
    ) -> dict[EpisodeIdentity, StoredEpisode]:
        """What the store has for these episodes' (show, guid): the decider's input."""
        keys = list(latest_copies(episodes_in))
        with self._db.transaction("reading episodes for an update", write=False) as conn:
            return _stored(conn, keys)

    def item_hashes(self, show: str) -> dict[str, str]:
        """The item hashes stored with ``show``'s episodes: hash → guid (one read)."""
        show_id = sa.select(shows.c.id).where(shows.c.name == clean(show)).scalar_subquery()
        query = sa.select(episodes.c.raw_hash, episodes.c.guid).where(
            episodes.c.show_id == show_id, episodes.c.raw_hash.is_not(None)
        )
        with self._db.transaction(f"reading item hashes of {show!r}", write=False) as conn:
            return {h: g for h, g in conn.execute(query)}

    def apply_intents(self, intents: UpsertIntents, now: datetime) -> None:
        """Write the decider's intents in one transaction.

        Fails (``StoreError``) when another writer stored one of the inserts since the
        state was read; :meth:`upsert_episodes` reads, decides and writes in one
        transaction and retries that race.
        """
        now = aware(now, "now")
        with self._db.transaction("saving episodes") as conn:
            apply(conn, intents, now)

    def upsert_episodes(
        self, episodes_in: Iterable[Episode], now: datetime, *, skipped: int = 0
    ) -> list[UpsertResult]:
        """Read the stored state, decide (:func:`digests.decide.update.decide_upsert`), apply.

        One transaction; a constant number of statements per 500 episodes whatever happens,
        so re-reading a feed of thousands of unchanged episodes costs a few SELECTs.
        ``skipped``: the feed's items the parse skipped as stored (see ``decide_upsert``).
        """
        now = aware(now, "now")
        batch = latest_copies(episodes_in)
        if not batch:
            return []

        def write(conn: sa.Connection) -> list[UpsertResult]:
            stored = _stored(conn, batch.keys())
            intents = decide_upsert(stored, batch.values(), now, skipped=skipped)
            apply(conn, intents, now)
            return list(intents.results)

        results = self._db.write("saving episodes", write)
        if sum(r.status == EpisodeStatus.NEW for r in results) >= ANALYZE_AFTER:
            with self._db.transaction("refreshing the planner's statistics") as conn:
                refresh_statistics(conn)
        return results
