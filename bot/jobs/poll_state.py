"""What a poll reads and writes about its show besides the feed: the fetch state after it,
and whether an unchanged feed needs planning at all.

A poll starts with one read (``Store.poll_state``: the fetch state and :class:`PlanInputs`)
and ends with one write (the fetch state); in a cycle, a :class:`PollBook` makes them one
read for every show before the polls and one write for every 304 after them. Between them,
an unchanged feed (a 304, or a 200
whose every episode stored as it was) is planned only when something a plan reads may have
moved since the last plan that found nothing due. What a plan decides over (``bot.jobs.plan``)
and what moves it:

- the show's subscriptions (new, filter replaced, paused, resumed, held, released) and its
  episodes and their first-seen dates: versions grown by triggers on every write;
- the ledger's rows: they are never deleted, so a new one moves the show's newest row
  (``ledger_head``, or ``unnamed_head`` for rows that name no show); a row pending or
  posting is offered again by every plan (``Ledger.unfinished_shows``, once per cycle);
  the other states move only with a plan that had something due, or with content that
  changed (a new episodes version) or a subscription resumed (likewise);
- the teams stopped for having no installation, and the settings the decision reads;
- stored PR details, when GitHub is on: not versioned, so with GitHub on a show is planned
  every poll, as before.

The key of those inputs is stored with the show when a plan finds nothing due; the next
poll of an unchanged feed whose inputs have the same key skips planning. Planning again
would find the same nothing: ``digests.decide.deliveries.decide`` reads no clock.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

from bot.catalog import live
from bot.delivery.items import DeliveryReport
from bot.jobs.ingest import FeedRead
from bot.jobs.plan import CANDIDATES
from config.settings import Settings, ShowConfig
from digests.decide.deliveries import CATCH_UP, next_poll_at
from digests.errors import (
    DigestError,
    FeedHTTPError,
    FeedParseError,
    FeedUnavailable,
    FetchError,
    StoreError,
)
from digests.parse.lenient import summary
from digests.store import Store
from digests.store.ledger import Ledger
from digests.types import FetchState, Notice, PlanInputs

log = logging.getLogger(__name__)

# Grows when what a plan decides over, or how, changes: a key stored by an older release
# then no longer matches, so its first poll plans every show.
RULES = 1


@dataclass
class PollBook:
    """A cycle's fetch states: read for all its shows at once (``Store.poll_states``) and,
    for the feeds that answered 304, written at once once they have (``Store.save_polled``),
    so a 304 takes no store round trip of its own. Only a 304's: losing one to a crash
    loses nothing but the poll's time (the next poll asks the same question), while a
    200's state is written after its episodes are stored, and a failure's at once."""

    # None: each show's state is read when its poll starts (a cycle sharing a gate).
    read: dict[str, tuple[FetchState, PlanInputs]] | None
    polled: list[tuple[str, FetchState, FetchState]] = field(default_factory=list)

    def state(self, show: str) -> tuple[FetchState, PlanInputs] | None:
        """A show with no row yet starts from the defaults, as ``Store.poll_state`` says."""
        if self.read is None:
            return None
        return self.read.get(show) or (FetchState(), PlanInputs())

    def defer(self, show: str, before: FetchState, after: FetchState, status: str) -> bool:
        """Keep a 304's new state for the cycle's one write (False: write it now)."""
        if status != "not_modified" or self.read is None or show not in self.read:
            return False  # a show with no row yet is inserted by save_fetch_state
        self.polled.append((show, before, after))
        return True

    def take(self) -> list[tuple[str, FetchState, FetchState]]:
        taken, self.polled = self.polled, []
        return taken


def cycle_start(
    settings: Settings,
    store: Store,
    ledger: Ledger,
    shows: Sequence[ShowConfig] | None,
    *,
    read_all: bool,
) -> tuple[Settings, Sequence[ShowConfig], frozenset[str | None], PollBook]:
    """What a cycle reads before its polls, in one thread hop: its shows (by default the
    config file's and those added from Slack), those with ledger rows owed, the book.

    ``read_all``: read every show's state now (a cycle that owns its gate); one sharing a
    gate with other cycles (the scheduler's, a show each) reads each in the gate. Two
    processes never poll one show at once: ``digestbot worker``'s poll jobs hold a lock
    per show (procrastinate's), and the clock of ``digestbot run`` is one process."""
    if shows is None:
        settings = live(settings, store)
        shows = settings.shows
    names = [s.name for s in shows]
    read = store.poll_states(names) if read_all else None
    return settings, shows, ledger.unfinished_shows(), PollBook(read)


async def finish_polls(store: Store, book: PollBook) -> None:
    """After a cycle's polls, in one thread hop: its 304s' fetch states written. States
    lost to a database error cost the next poll nothing but asking again (the validators
    were stored already)."""
    polled = book.take()
    if not polled:
        return
    try:
        await asyncio.to_thread(store.save_polled, polled)
    except StoreError as exc:
        log.warning("saving %d feeds' fetch state failed: %s", len(polled), exc)


def failure_reason(exc: DigestError) -> str:
    """One word for why a poll failed, from a fixed set (a metrics label): http_4xx,
    http_5xx, unavailable, parse, fetch (connection, size, address) or other."""
    if isinstance(exc, FeedUnavailable):
        return "unavailable"
    if isinstance(exc, FeedHTTPError):
        return "http_5xx" if exc.status >= 500 else "http_4xx"
    if isinstance(exc, FeedParseError):
        return "parse"
    return "fetch" if isinstance(exc, FetchError) else "other"


def failed_state(
    settings: Settings, before: FetchState, exc: DigestError, now: datetime
) -> FetchState:
    """The fetch state after a failed poll: counted, backed off (the feed's Retry-After too)."""
    failures = before.failures + 1
    schedule = settings.schedule
    return replace(
        before,
        last_polled_at=now,
        last_error=exc.format_message(),
        failures=failures,
        next_poll_at=next_poll_at(
            now,
            poll_minutes=schedule.poll_minutes,
            failures=failures,
            max_backoff_minutes=schedule.max_backoff_minutes,
            retry_after=getattr(exc, "retry_after", None),
        ),
    )


def polled_state(
    settings: Settings, before: FetchState, read: FeedRead, now: datetime
) -> FetchState:
    """The fetch state after a good poll: new validators, the streak over, the next poll."""
    fetched = read.fetched
    schedule = settings.schedule
    return FetchState(
        etag=fetched.etag or before.etag,
        last_modified=fetched.last_modified or before.last_modified,
        last_polled_at=now,
        last_success_at=now,
        last_error=None,
        failures=0,
        next_poll_at=next_poll_at(
            now,
            poll_minutes=schedule.poll_minutes,
            failures=0,
            max_backoff_minutes=schedule.max_backoff_minutes,
            retry_after=fetched.retry_after,
            max_age=fetched.max_age,
        ),
        # Cleared only once the recovery notice is out (see record_notices).
        failing_notified=before.failing_notified,
        # A feed not modified reads as it did.
        read_note=summary(read.lenient) if fetched.status == "ok" else before.read_note,
    )


def plan_key(settings: Settings, inputs: PlanInputs, stopped_teams: Iterable[str]) -> str:
    """The key of a show's plan inputs as far as a poll can see them without planning."""
    stopped = hashlib.sha256("\n".join(sorted(set(stopped_teams))).encode()).hexdigest()[:16]
    rules = f"{RULES}.{CANDIDATES}.{CATCH_UP}.{settings.backfill}"
    versions = f"{inputs.subscriptions}.{inputs.episodes}"
    return f"{rules}:{versions}:{inputs.ledger_head}:{inputs.unnamed_head}:{stopped}"


class Polled(Protocol):
    """What ``needs_plan`` and ``record_notices`` read of a poll
    (``bot.jobs.pipeline.PollResult``)."""

    @property
    def show(self) -> str: ...
    @property
    def unchanged(self) -> bool: ...
    @property
    def notice(self) -> Notice | None: ...
    @property
    def inputs(self) -> PlanInputs | None: ...
    @property
    def state(self) -> FetchState: ...


class Reported(Protocol):
    """What ``record_notices`` reads of a cycle's report (``bot.jobs.pipeline.RunReport``)."""

    @property
    def polls(self) -> Sequence[Polled]: ...
    @property
    def delivery(self) -> DeliveryReport: ...


def needs_plan(
    settings: Settings,
    poll: Polled,
    stopped_teams: Iterable[str],
    unfinished: frozenset[str | None],
) -> bool:
    """Whether a poll's show must go through phases 5–6 (see the module docstring)."""
    inputs = poll.inputs
    if not poll.unchanged or poll.notice is not None or inputs is None:
        return True
    if settings.github_enabled or poll.show in unfinished or None in unfinished:
        return True
    return inputs.quiet_plan != plan_key(settings, inputs, stopped_teams)


def quiet_after(
    settings: Settings, inputs: PlanInputs | None, stopped_teams: Iterable[str], due: int
) -> str | None:
    """The key to store after a plan that found ``due`` deliveries (None: plan again)."""
    if inputs is None or due or settings.github_enabled:
        return None
    return plan_key(settings, inputs, stopped_teams)


async def record_notices(store: Store, report: Reported) -> None:
    """Remember a feed's failure was announced (or its recovery) once a notice is out.

    Not while any channel's copy is still owed (a transient failure, another clock
    mid-post): the next poll then makes the same notice again, under the same key, and the
    ledger sends it only where it is missing. Channels that refused it for good (archived,
    a revoked token) do not hold the others back.
    """
    d = report.delivery
    done = {i[3] for i in [*d.posted, *d.recovered, *d.unchanged] if i[2] == "notice"}
    owed = {i[3] for i in [*d.deferred, *d.busy] if i[2] == "notice"}
    tried = {
        i[3]
        for i in [*d.posted, *d.recovered, *d.unchanged, *d.failed, *d.held, *d.busy]
        if i[2] == "notice"
    }
    for poll in report.polls:
        notice = poll.notice
        if notice is None or notice.key in owed:
            continue
        if notice.key not in done and notice.key in tried:
            continue  # refused everywhere it was tried, not merely nobody to tell
        state = replace(poll.state, failing_notified=notice.kind == "failing")
        await asyncio.to_thread(store.save_fetch_state, poll.show, state)
