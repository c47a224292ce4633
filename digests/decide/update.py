"""The episode upsert, decided: new, changed or unchanged, and the date of an undated item.

Pure: it takes what the store has for a poll's guids (:class:`StoredEpisode`), the parsed
episodes and ``now``, and returns :class:`UpsertIntents` — rows to insert, rows to
overwrite, rows to re-date — with the :class:`UpsertResult` of each episode. The store reads
the state (``Store.state_for_update``) and applies the intents (``Store.apply_intents``);
``Store.upsert_episodes`` does the three in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from digests.extract.feed_order import feed_order_dates
from digests.models import Episode
from digests.types import (
    EpisodeIdentity,
    EpisodeStatus,
    EpisodeWrite,
    Redate,
    Rehash,
    StoredEpisode,
    UpsertIntents,
    UpsertResult,
    is_undated,
)

# An item the feed dates further ahead than this of when the bot first saw it is dated when
# first seen, as an undated one is (README): otherwise it would top every "recent" list until
# its date. A day covers clocks and feeds off by a time zone.
AHEAD = timedelta(days=1)


def dated_ahead(when: datetime, seen_at: datetime) -> bool:
    """Whether a feed's date ``when`` is too far ahead of ``seen_at`` to be believed."""
    return not is_undated(when) and when > seen_at + AHEAD


def episode_identity(episode: Episode) -> EpisodeIdentity:
    """(show, guid) as the store keys it: without NUL, which PostgreSQL text refuses.

    Two guids that differ only by a NUL are one episode, the last copy winning.
    """
    return (episode.show.replace("\x00", ""), episode.guid.replace("\x00", ""))


# PostgreSQL's INTEGER, which every stored count and number is.
_MAX_INT = 2**31 - 1


def unstorable(episode: Episode) -> str | None:
    """Why ``episode`` cannot be stored, or None. Parsing replaces unencodable text where
    it enters, so this is the last line: a field no database column can take."""
    for name, value in episode.__dict__.items():
        texts = value if isinstance(value, tuple) else (value,)
        for text in texts:
            if isinstance(text, str) and not _encodable(text):
                return f"{name} holds text that cannot be encoded as UTF-8"
            if isinstance(text, int) and not -_MAX_INT <= text <= _MAX_INT:
                return f"{name} is out of range ({text})"
    return None


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def latest_copies(episodes: Iterable[Episode]) -> dict[EpisodeIdentity, Episode]:
    """One episode per identity, the last copy winning, in the order first seen."""
    batch: dict[EpisodeIdentity, Episode] = {}
    for episode in episodes:
        batch[episode_identity(episode)] = episode
    return batch


def _dates(
    batch: Mapping[EpisodeIdentity, Episode],
    stored: Mapping[EpisodeIdentity, StoredEpisode],
    now: datetime,
    first_read: bool,
) -> tuple[dict[EpisodeIdentity, datetime], list[EpisodeIdentity]]:
    """The date each undated episode gets, and those stored undated that get repaired.

    An episode the feed gives no usable date keeps, on later polls, the date it got when
    the bot first stored it: otherwise it would be posted as 1970 and fall outside every
    "recent" list and weekly recap. On the first read of a feed (nothing of it stored) it
    takes its place among its dated neighbours — it is part of the archive, not news;
    one that appears on a later poll is dated when first seen. So is one the feed dates
    more than ``AHEAD`` after it was first seen, and it keeps that date as an undated one
    does.
    """
    dates: dict[EpisodeIdentity, datetime] = {}
    repaired: list[EpisodeIdentity] = []
    keys = list(batch)
    placed = feed_order_dates(list(batch.values()), newest_at=now) if first_read else {}
    for i, key in enumerate(keys):
        if i in placed:
            dates[key] = placed[i]
    # In feed order (newest first, by convention), which the dates given here keep.
    undated = [key for key, episode in batch.items() if _unbelieved(episode, stored.get(key), now)]
    for order, key in enumerate(k for k in undated if k not in dates):
        row = stored.get(key)
        if row is None:
            # New ones a microsecond apart: a feed without dates still has a newest item,
            # so the first poll posts the newest `backfill`, not all of them.
            dates[key] = now - timedelta(microseconds=order)
        elif is_undated(row.published_at):
            # Stored before undated episodes got their first-seen date.
            dates[key] = row.first_seen_at
            repaired.append(key)
        else:
            dates[key] = row.published_at
    return dates, repaired


def _unbelieved(episode: Episode, row: StoredEpisode | None, now: datetime) -> bool:
    """An item whose date the store does not take from the feed: none, or one further
    ahead of when the bot first saw it than ``AHEAD`` (stored: when the store dated it
    earlier than the feed does, that is, when first seen)."""
    when = episode.published_at
    if is_undated(when):
        return True
    if row is None:
        return dated_ahead(when, now)
    return dated_ahead(when, row.first_seen_at) and row.published_at < when


def decide_upsert(
    stored: Mapping[EpisodeIdentity, StoredEpisode],
    episodes: Iterable[Episode],
    now: datetime,
    *,
    skipped: int = 0,
) -> UpsertIntents:
    """What storing ``episodes`` means, given what the store has for them (``stored``).

    'changed' when the content hash differs. The hash is of the episode as the feed has
    it, so an undated episode is not 'changed' on every poll; the results and the written
    rows carry the date as stored. ``skipped``: how many of the feed's items the parse
    skipped as stored (their bytes hash as before); they are unchanged and not among
    ``episodes``, but the feed is not being read for the first time. An unchanged episode
    whose item now hashes differently gets the new hash (a rehash).
    """
    batch = latest_copies(episodes)
    dates, repaired = _dates(batch, stored, now, first_read=not stored and not skipped)
    inserts: list[EpisodeWrite] = []
    updates: list[EpisodeWrite] = []
    results: list[UpsertResult] = []
    rehashes: list[Rehash] = []
    for key, episode in batch.items():
        content_hash = episode.content_hash()
        if key in dates:
            episode = episode.model_copy(update={"published_at": dates[key]})
        row = stored.get(key)
        if row is None:
            inserts.append(EpisodeWrite(episode, content_hash))
            status = EpisodeStatus.NEW
        elif row.content_hash != content_hash:
            updates.append(EpisodeWrite(episode, content_hash, row.id))
            status = EpisodeStatus.CHANGED
        else:
            status = EpisodeStatus.UNCHANGED
            if row.raw_hash != episode.raw_hash:
                rehashes.append(Rehash(row.id, episode.raw_hash))
        results.append(UpsertResult(episode=episode, status=status))
    updated = {write.id for write in updates}
    redates = tuple(
        Redate(stored[key].id, dates[key]) for key in repaired if stored[key].id not in updated
    )
    return UpsertIntents(tuple(inserts), tuple(updates), redates, tuple(results), tuple(rehashes))
