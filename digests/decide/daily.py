"""Daily digest mode, pure: times of day, which day a run covers, what goes in it.

A channel in daily mode (``subscribe … daily 17:00``) gets one message a day at its time in
``timezone``, listing the matching episodes that reached digestbot since the day before's
(the 24 hours, 23 or 25 across a DST change, between two scheduled times), and nothing on a
day without any. An episode counts by when digestbot first had it, so one polled a minute
after the time is in the next day's message instead of in none; an item the feed dates more
than ``ARCHIVE_AFTER`` before the window began is the archive (a first poll, a backdated
item), not news.

A time of day inside a DST gap (02:30 on the spring-forward night) is taken with the offset
before the change, so it is the first moment after the gap (03:30); one inside an overlap
(02:30 on the fall-back night) is its first occurrence (``fold=0``): once either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from digests.decide.deliveries import matches
from digests.models import Episode
from digests.types import Subscription

DEFAULT_TIME = "17:00"
# Older than this before the day's window began, an episode first seen in it is archive.
ARCHIVE_AFTER = timedelta(days=1)

_CLOCK_RE = re.compile(r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?", re.I)


class BadTime(ValueError):
    """A time of day that is not one: ``25:00``, ``9:75``, ``13pm``."""


def parse_time_of_day(text: str) -> str:
    """``17:00``, ``9:05``, ``5pm``, ``5:30 PM``, ``12am`` → ``"HH:MM"`` (24-hour)."""
    m = _CLOCK_RE.fullmatch(text.strip())
    if m is None or (m.group("m") is None and m.group("ampm") is None):
        raise BadTime(text)
    hour, minute = int(m.group("h")), int(m.group("m") or 0)
    ampm = (m.group("ampm") or "").lower()[:1]
    if ampm:
        if not 1 <= hour <= 12:
            raise BadTime(text)
        hour = hour % 12 + (12 if ampm == "p" else 0)
    if hour > 23 or minute > 59:
        raise BadTime(text)
    return f"{hour:02d}:{minute:02d}"


def clock_time(value: str) -> time:
    hour, minute = value.split(":")
    return time(int(hour), int(minute))


def fire_time(day: date, at: str, tz: tzinfo) -> datetime:
    """When ``day``'s digest at local ``at`` is due, in UTC (gap: after it; overlap: the
    first occurrence)."""
    local = datetime.combine(day, clock_time(at), tzinfo=tz).replace(fold=0)
    return local.astimezone(UTC)


def last_due(now: datetime, at: str, tz: tzinfo) -> tuple[date, datetime]:
    """The local day whose digest at ``at`` is the latest due at or before ``now``, and when."""
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    today = now.astimezone(tz).date()
    for day in (today, today - timedelta(days=1)):
        due = fire_time(day, at, tz)
        if due <= now:
            return day, due
    day = today - timedelta(days=2)  # unreachable for real zones; keeps the type total
    return day, fire_time(day, at, tz)


def next_due(now: datetime, at: str, tz: tzinfo) -> datetime:
    """The first digest time at ``at`` after ``now``."""
    day, _ = last_due(now, at, tz)
    return fire_time(day + timedelta(days=1), at, tz)


def window(day: date, at: str, tz: tzinfo) -> tuple[datetime, datetime]:
    """[the day before's digest time, ``day``'s): what ``day``'s digest covers, in UTC."""
    return fire_time(day - timedelta(days=1), at, tz), fire_time(day, at, tz)


def day_key(day: date) -> str:
    """The ledger key of a channel's daily digest: one row per channel and local day."""
    return day.isoformat()


# A catch-up (`resume … --catch-up` in a daily channel) is one message of what arrived while
# paused, a "daily" delivery keyed by the show's pause window (distinct from any day's key).
_CATCH_UP = "catch-up"


def catch_up_key(show: str, start: datetime, end: datetime) -> str:
    """The ledger key of a daily channel's catch-up of ``show``'s pause [start, end)."""
    return (
        f"{_CATCH_UP} {start.astimezone(UTC).isoformat()} {end.astimezone(UTC).isoformat()} {show}"
    )


CATCH_UP_PREFIX = f"{_CATCH_UP} "


def read_catch_up_key(key: str) -> tuple[str, datetime, datetime] | None:
    """(show, start, end) of a ``catch_up_key``; None for any other key."""
    parts = key.split(" ", 3)
    if len(parts) != 4 or parts[0] != _CATCH_UP:
        return None
    try:
        start, end = datetime.fromisoformat(parts[1]), datetime.fromisoformat(parts[2])
    except ValueError:
        return None
    return parts[3], start, end


@dataclass(frozen=True)
class Arrival:
    """An episode with when digestbot first had it."""

    episode: Episode
    seen_at: datetime


def wanted(sub: Subscription, item: Arrival, start: datetime, end: datetime) -> bool:
    """Whether ``item`` (of ``sub``'s show) goes in ``sub``'s digest of [start, end)."""
    episode = item.episode
    return (
        episode.show == sub.show
        and start <= item.seen_at < end
        and episode.published_at >= start - ARCHIVE_AFTER
        # Arrived while the channel had the other mode, or during a user pause: not here.
        and (sub.mode_changed_at is None or item.seen_at >= sub.mode_changed_at)
        and not sub.holds(item.seen_at)
        and matches(episode, sub.filter)
    )


def channel_episodes(
    subs: Iterable[Subscription], arrivals: Iterable[Arrival], start: datetime, end: datetime
) -> list[Episode]:
    """One channel's daily digest: the episodes its subscriptions want, oldest first."""
    subs = list(subs)
    kept = {
        (a.episode.show, a.episode.guid): a
        for a in arrivals
        if any(wanted(s, a, start, end) for s in subs)
    }
    ordered = sorted(kept.values(), key=lambda a: (a.episode.published_at, a.seen_at))
    return [a.episode for a in ordered]
