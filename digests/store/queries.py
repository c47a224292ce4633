"""Episode lookups: by guid, guid key, URL, date, title, PR; neighbours and the newest."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from digests.models import Episode
from digests.store.database import Database, aware, chunks, clean
from digests.store.episodes import (
    EPISODE_COLUMNS,
    EPISODES_JOIN,
    NEWEST,
    OLDEST,
    PR_CONTEXT,
    PRS_JOIN,
    hydrate,
    in_shows,
    select_episodes,
)
from digests.store.schema import (
    SQLITE_TITLE_TRIGRAMS,
    UTCDateTime,
    episode_prs,
    episodes,
    shows,
)
from digests.types import PrMention

MAX_SEARCH_TOKENS = 16
MAX_SEARCH_LIMIT = 100
# Title-word lookups on SQLite read the trigram index first when it narrows the archive to
# at most this many rows; words in more titles than that are found sooner by the scan
# newest first, which stops at the limit.
TITLE_TRIGRAM_BOUND = 1000


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


def _neighbour_conditions(
    row: Any, when: datetime
) -> tuple[sa.ColumnElement[bool], sa.ColumnElement[bool]]:
    """Earlier / later than the episode; ties on publication time fall back to row id, so
    equal timestamps still chain. Row values, so both engines read them as one range of the
    ``(show_id, published_at, id)`` index rather than an OR they scan the show for."""
    if row is None:
        return episodes.c.published_at < when, episodes.c.published_at > when
    key = sa.tuple_(episodes.c.published_at, episodes.c.id)
    at = sa.tuple_(sa.literal(when, UTCDateTime), sa.literal(row.id, sa.Integer))
    return key < at, key > at


def show_id_of(name: str) -> sa.ScalarSelect[Any]:
    """The show's id as a subquery: equality on ``episodes.show_id`` the planner can use
    with the show's indexes (a join on the name leaves it guessing which side to read)."""
    return sa.select(shows.c.id).where(shows.c.name == clean(name)).scalar_subquery()


@functools.cache
def _between(transcripts: bool, one_show: bool | None) -> sa.Select[Any]:
    """``between``'s statement for its shape (``one_show`` None: every show), built once
    and bound at execution: a week's read built and keyed it anew every time. As
    ``in_shows`` limits it: one show by equality (its index), more by ``IN``."""
    when = episodes.c.published_at
    stmt = (
        select_episodes(transcripts=transcripts)
        .where(when >= sa.bindparam("start", type_=when.type))
        .where(when < sa.bindparam("end", type_=when.type))
        .order_by(*OLDEST)
    )
    if one_show is None:
        return stmt
    named = sa.select(shows.c.id)
    if one_show:
        one = named.where(shows.c.name == sa.bindparam("names", type_=shows.c.name.type))
        return stmt.where(episodes.c.show_id == one.scalar_subquery())
    wanted = named.where(shows.c.name.in_(sa.bindparam("names", expanding=True)))
    return stmt.where(episodes.c.show_id.in_(wanted))


class QueriesMixin:
    """Reading episodes back, for :class:`digests.store.Store`."""

    _db: Database

    def _episodes(
        self, action: str, stmt: sa.Select[Any], names: Sequence[str] | None = None
    ) -> list[Episode]:
        with self._db.transaction(action, write=False) as conn:
            return hydrate(conn, conn.execute(in_shows(stmt, names)).all())

    def _one(self, action: str, stmt: sa.Select[Any]) -> Episode | None:
        found = self._episodes(action, stmt)
        return found[0] if found else None

    def episode(self, show: str, guid: str) -> Episode | None:
        return self._one(
            f"reading episode {guid!r}",
            select_episodes().where(shows.c.name == clean(show), episodes.c.guid == clean(guid)),
        )

    def episode_by_guid_key(self, show: str, key: str) -> Episode | None:
        """The episode of ``show`` whose guid hashes to ``key`` (``digests.models.guid_key``):
        how a digest button names an episode whose guid is too long for a button value."""
        return self._one(
            "reading an episode by guid key",
            select_episodes().where(shows.c.name == clean(show), episodes.c.guid_key == clean(key)),
        )

    def episode_by_url(self, url: str) -> Episode | None:
        """The episode at ``url``; a link pasted into Slack may differ from the feed's by a
        trailing slash, a ``#fragment`` or http/https, so those variants match too (the
        exact URL first). Failing those, the URL without its query string: share links
        carry ``?utm_source=…`` that the feed's link does not."""
        url = clean(url)
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
        return self._one(
            "reading an episode by URL",
            select_episodes().where(episodes.c.url.in_(variants)).order_by(exact, *NEWEST).limit(1),
        )

    def first_seen(self, show: str, guids: Sequence[str]) -> dict[str, datetime]:
        """guid → when the store first had that episode of ``show`` (the guids it knows)."""
        found: dict[str, datetime] = {}
        with self._db.transaction("reading when episodes arrived", write=False) as conn:
            for chunk in chunks(list(dict.fromkeys(clean(g) for g in guids))):
                rows = conn.execute(
                    sa.select(episodes.c.guid, episodes.c.first_seen_at).where(
                        episodes.c.show_id == show_id_of(show), episodes.c.guid.in_(chunk)
                    )
                )
                for guid, when in rows:
                    found[guid] = aware(when, "first_seen_at")
        return found

    def archive_seen_at(self, show: str) -> datetime | None:
        """When the store first had anything of ``show``: the first read of its archive."""
        with self._db.transaction("reading when the show was first read", write=False) as conn:
            when = conn.execute(
                sa.select(sa.func.min(episodes.c.first_seen_at)).where(
                    episodes.c.show_id == show_id_of(show)
                )
            ).scalar()
        return aware(when, "first_seen_at") if when is not None else None

    def recent(self, limit: int, shows: Sequence[str] | None = None) -> list[Episode]:
        """Newest first."""
        if limit <= 0:
            return []
        return self._episodes(
            "reading recent episodes", select_episodes().order_by(*NEWEST).limit(limit), shows
        )

    def between(
        self,
        start: datetime,
        end: datetime,
        shows: Sequence[str] | None = None,
        *,
        transcripts: bool = True,
    ) -> list[Episode]:
        """Published in [start, end), oldest first (``transcripts=False``: each with an
        empty transcript, for readers that never look at it)."""
        params: dict[str, Any] = {"start": aware(start, "start"), "end": aware(end, "end")}
        names = None if shows is None else list(dict.fromkeys(clean(n) for n in shows))
        if names is not None:
            params["names"] = names[0] if len(names) == 1 else names
        stmt = _between(transcripts, None if names is None else len(names) == 1)
        with self._db.transaction("reading episodes by date", write=False) as conn:
            return hydrate(conn, conn.execute(stmt, params).all())

    def count_between(
        self, start: datetime, end: datetime, shows: Sequence[str] | None = None
    ) -> int:
        """How many episodes :meth:`between` would return, without reading them."""
        start, end = aware(start, "start"), aware(end, "end")
        stmt = sa.select(sa.func.count()).where(
            episodes.c.published_at >= start, episodes.c.published_at < end
        )
        with self._db.transaction("counting episodes by date", write=False) as conn:
            return int(conn.execute(in_shows(stmt, shows)).scalar() or 0)

    def nearest(self, when: datetime, shows: Sequence[str] | None = None) -> Episode | None:
        """The episode published closest to ``when``; the earlier one on a tie."""
        when = aware(when, "when")
        before = self._episodes(
            "finding the nearest episode",
            select_episodes().where(episodes.c.published_at <= when).order_by(*NEWEST).limit(1),
            shows,
        )
        after = self._episodes(
            "finding the nearest episode",
            select_episodes().where(episodes.c.published_at > when).order_by(*OLDEST).limit(1),
            shows,
        )
        candidates = before + after
        if not candidates:
            return None
        return min(candidates, key=lambda episode: abs(episode.published_at - when))

    def neighbours(self, episode: Episode) -> tuple[Episode | None, Episode | None]:
        """(previous, next) episode of the same show by publication time."""
        same_show = episodes.c.show_id == show_id_of(episode.show)
        with self._db.transaction("finding neighbouring episodes", write=False) as conn:
            row = conn.execute(
                sa.select(episodes.c.id, episodes.c.published_at).where(
                    same_show, episodes.c.guid == clean(episode.guid)
                )
            ).first()
            when = row.published_at if row else episode.published_at
            earlier, later = _neighbour_conditions(row, when)
            prev_rows = conn.execute(
                select_episodes().where(same_show, earlier).order_by(*NEWEST).limit(1)
            ).all()
            next_rows = conn.execute(
                select_episodes().where(same_show, later).order_by(*OLDEST).limit(1)
            ).all()
            found = hydrate(conn, [*prev_rows, *next_rows])
        previous = found[0] if prev_rows else None
        following = found[-1] if next_rows else None
        return previous, following

    def by_title(self, title: str, shows: Sequence[str] | None = None) -> Episode | None:
        """The episode whose headline equals ``title`` (case-insensitive), else None.

        A full title (``Show: Headline``) matches too, and whitespace is normalised, so the
        titles a page lists under "Nearby episodes" find their episodes either way.
        """
        wanted = " ".join(clean(title).split())
        if not wanted:
            return None
        needle = sa.func.lower(sa.literal(wanted, sa.Text))
        found = self._episodes(
            "finding an episode by title",
            select_episodes()
            .where(
                sa.or_(
                    sa.func.lower(episodes.c.headline) == needle,
                    sa.func.lower(episodes.c.title) == needle,
                )
            )
            .order_by(*NEWEST)
            .limit(1),
            shows,
        )
        return found[0] if found else None

    def by_title_words(
        self, words: Sequence[str], limit: int = 50, shows: Sequence[str] | None = None
    ) -> list[Episode]:
        """Episodes whose title contains every one of ``words`` (case-insensitive, as
        substrings, so callers check whole words themselves), newest first."""
        needles = [w.lower() for w in words if w.strip()][:MAX_SEARCH_TOKENS]
        if not needles or limit <= 0:
            return []
        headline, title = sa.func.lower(episodes.c.headline), sa.func.lower(episodes.c.title)
        has_all = [
            sa.or_(headline.contains(n, autoescape=True), title.contains(n, autoescape=True))
            for n in needles
        ]
        stmt = select_episodes().where(*has_all)
        narrowed = self._title_trigram_rows(needles)
        if narrowed is not None:
            stmt = stmt.where(episodes.c.id.in_(narrowed))
        return self._episodes(
            "finding episodes by title words",
            stmt.order_by(*NEWEST).limit(min(limit, MAX_SEARCH_LIMIT)),
            shows,
        )

    def _title_trigram_rows(self, needles: Sequence[str]) -> sa.Select[Any] | None:
        """The rows whose headline or title contains every needle of 3+ characters, by the
        SQLite trigram index (a superset: the LIKEs still decide), as a subquery; None when
        it cannot narrow (PostgreSQL, only short needles, or too many rows). How many is
        counted in SQLite (a bounded count), so the rows never travel to Python and back
        as a thousand parameters."""
        long = [n for n in needles if len(n) >= 3]
        if self._db.dialect != "sqlite" or not long:
            return None
        fts: sa.ColumnElement[Any] = sa.literal_column(SQLITE_TITLE_TRIGRAMS)
        match = " ".join('"' + clean(n).replace('"', '""') + '"' for n in long)
        rows: sa.Select[Any] = (
            sa.select(sa.literal_column("rowid"))
            .select_from(sa.table(SQLITE_TITLE_TRIGRAMS))
            .where(fts.op("MATCH")(match))
        )
        bounded = rows.limit(TITLE_TRIGRAM_BOUND + 1).subquery()
        count = sa.select(sa.func.count()).select_from(bounded)
        with self._db.transaction("finding episodes by title words", write=False) as conn:
            found = int(conn.execute(count).scalar_one())
        return rows if found <= TITLE_TRIGRAM_BOUND else None

    def by_pr(self, number: int, shows: Sequence[str] | None = None) -> list[PrMention]:
        """Every episode naming PR ``number``, newest first, with the sentence that names it:
        once per PR URL (an episode naming the number in two repositories, twice)."""
        stmt = (
            sa.select(
                *EPISODE_COLUMNS, PR_CONTEXT.label("pr_context"), episode_prs.c.url.label("pr_url")
            )
            .select_from(EPISODES_JOIN.join(PRS_JOIN, episode_prs.c.episode_id == episodes.c.id))
            .where(episode_prs.c.number == number)
            .order_by(*NEWEST, episode_prs.c.position)
        )
        with self._db.transaction(f"finding PR {number}", write=False) as conn:
            rows: list[Any] = []
            seen: set[tuple[int, str]] = set()
            for row in conn.execute(in_shows(stmt, shows)):
                if (row.id, row.pr_url) not in seen:  # a malformed episode could list a PR twice
                    seen.add((row.id, row.pr_url))
                    rows.append(row)
            found = hydrate(conn, rows)
        return [
            PrMention(episode=episode, context=row.pr_context, url=row.pr_url)
            for episode, row in zip(found, rows, strict=True)
        ]
