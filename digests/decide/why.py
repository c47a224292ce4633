"""Why an episode did or did not reach a channel: a pure decision over what the store knows.

``explain`` reads the channel's ledger row for the episode, its subscription to the show,
the episode (None: the archive does not have it) and the show's fetch state, and names the
one reason that applies, in the order the pipeline applies them: a ledger row is the
record of what happened (posted; updated too when the digest was edited because the
episode changed), and so is a daily channel's catch-up message listing it; without one, a
user pause, the subscription's age, the filter (which
term), the channel's daily digest listing it (or leaving it out as archive: dated more
than a day before the day it covers), a Slack-side pause, or the episode being passed over
(older than what the channel already had, or beyond the catch-up cap of one poll).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from digests.decide.daily import ARCHIVE_AFTER, Arrival, next_due, wanted, window
from digests.filters import Check, Filter
from digests.models import Episode
from digests.types import FetchState, LedgerState, Subscription


class Reason(StrEnum):
    POSTED = "posted"
    UPDATED = "updated"  # posted, then edited in place because the episode changed
    CAUGHT_UP = "caught_up"  # daily mode: in the message `resume --catch-up` posted
    ON_ITS_WAY = "on_its_way"  # planned or being posted right now
    FAILED = "failed"  # Slack refused it: retried only if the episode changes
    RETRYING = "retrying"  # Slack failed for now (5xx, timeouts): the next poll tries again
    CHANNEL_PAUSED = "channel_paused"  # Slack-side: archived, removed, not found
    HELD = "held"  # arrived during a user pause
    DAILY = "daily"  # the channel's daily digest lists it (when: that digest's time)
    DAILY_ARCHIVE = "daily_archive"  # daily mode: dated too long before its day (when: day start)
    BEFORE_SUBSCRIPTION = "before_subscription"
    FILTERED = "filtered"
    PASSED_OVER = "passed_over"
    NOT_SUBSCRIBED = "not_subscribed"
    NOT_YET_POLLED = "not_yet_polled"
    FEED_FAILING = "feed_failing"
    NOT_IN_FEED = "not_in_feed"


@dataclass(frozen=True)
class Delivered:
    """What the ledger row of the channel's delivery of the episode says."""

    state: str
    ts: str | None = None
    error: str | None = None
    updated_at: datetime | None = None
    edited_at: datetime | None = None  # the digest's last edit for a changed episode


@dataclass(frozen=True)
class Why:
    reason: Reason
    check: Check | None = None  # FILTERED: the verdict and the term that decided
    # FAILED, RETRYING, FEED_FAILING, CHANNEL_PAUSED: in Slack's or the feed's words
    error: str | None = None
    when: datetime | None = None  # POSTED: last written; UPDATED: edited; HELD: pause end; …
    ts: str | None = None  # POSTED, UPDATED: the message, for its permalink
    tried: datetime | None = None  # RETRYING: when Slack last failed it (``when``: next poll)


def filter_check(episode: Episode, chosen: Filter) -> Check:
    """The subscription's filter on ``episode``, read as ``digests.decide.deliveries.matches``
    reads it."""
    extra = [f"{info.title} {info.area or ''}" for info in episode.pr_info]
    return chosen.check(episode, extra)


def _in_daily(episode: Episode, sub: Subscription, arrived: datetime, tz: tzinfo) -> bool:
    """Whether a daily digest of ``sub`` lists ``episode`` (``digests.decide.daily.wanted``)."""
    assert sub.daily_at is not None
    due = next_due(arrived, sub.daily_at, tz)
    if sub.created_at is not None and sub.created_at > due:
        return False  # subscribed after that day's digest (``bot.jobs.daily``)
    start, end = window(due.astimezone(tz).date(), sub.daily_at, tz)
    return wanted(sub, Arrival(episode, arrived), start, end)


def _daily_archive(
    episode: Episode, sub: Subscription, arrived: datetime, tz: tzinfo
) -> datetime | None:
    """The start of the day's window when the daily digest left ``episode`` out as archive
    (dated more than ``ARCHIVE_AFTER`` before it, ``digests.decide.daily.wanted``); else None."""
    assert sub.daily_at is not None
    start, _ = window(next_due(arrived, sub.daily_at, tz).astimezone(tz).date(), sub.daily_at, tz)
    return start if episode.published_at < start - ARCHIVE_AFTER else None


def _from_ledger(row: Delivered, sub: Subscription, next_poll: datetime | None) -> Why:
    if row.state == LedgerState.POSTED and row.edited_at is not None:
        return Why(Reason.UPDATED, when=row.edited_at, ts=row.ts)
    if row.state == LedgerState.POSTED:
        return Why(Reason.POSTED, when=row.updated_at, ts=row.ts)
    if row.state == LedgerState.FAILED:
        return Why(Reason.FAILED, error=row.error, when=row.updated_at)
    if row.state == LedgerState.PAUSED:
        return Why(Reason.CHANNEL_PAUSED, error=sub.paused_reason or row.error)
    if row.error:  # left pending by a failure Slack may get over: offered again by a plan
        return Why(Reason.RETRYING, error=row.error, when=next_poll, tried=row.updated_at)
    return Why(Reason.ON_ITS_WAY)


def explain(
    episode: Episode | None,
    sub: Subscription | None,
    row: Delivered | None,
    feed: FetchState,
    *,
    first_seen: datetime | None = None,
    tz: tzinfo = UTC,
    caught_up: Delivered | None = None,
    planned: bool = False,
) -> Why:
    """``caught_up``: the ledger row of the daily channel's catch-up message that lists the
    episode (it arrived in the pause that ``resume --catch-up`` ended), if there is one.
    ``planned``: a workspace's job about to plan the episode (a poll's news, no row yet)."""
    if episode is None:
        if feed.last_polled_at is None:
            return Why(Reason.NOT_YET_POLLED, when=feed.next_poll_at)
        if feed.failures:
            return Why(Reason.FEED_FAILING, error=feed.last_error, when=feed.next_poll_at)
        return Why(Reason.NOT_IN_FEED)
    if sub is None:
        return Why(Reason.NOT_SUBSCRIBED)
    if row is not None:
        return _from_ledger(row, sub, feed.next_poll_at)
    if caught_up is not None and caught_up.state == LedgerState.POSTED:
        return Why(Reason.CAUGHT_UP, when=caught_up.updated_at, ts=caught_up.ts)
    if caught_up is not None:
        return _from_ledger(caught_up, sub, feed.next_poll_at)
    if sub.holds(first_seen or episode.published_at):
        return Why(Reason.HELD, when=sub.held_until)
    # The filter first: "which term" is the more useful answer for an old episode too.
    check = filter_check(episode, sub.filter)
    if not check.matched:
        return Why(Reason.FILTERED, check=check)
    arrived = first_seen or episode.published_at
    if sub.daily_at and _in_daily(episode, sub, arrived, tz):
        return Why(Reason.DAILY, when=next_due(arrived, sub.daily_at, tz))
    created = sub.created_at
    if (
        created is not None
        and episode.published_at < created
        and (first_seen or created) <= created
    ):
        return Why(Reason.BEFORE_SUBSCRIPTION, when=created)
    if sub.daily_at and (start := _daily_archive(episode, sub, arrived, tz)) is not None:
        return Why(Reason.DAILY_ARCHIVE, when=start)
    if sub.paused:
        return Why(Reason.CHANNEL_PAUSED, error=sub.paused_reason)
    if planned:
        return Why(Reason.ON_ITS_WAY)
    return Why(Reason.PASSED_OVER)
