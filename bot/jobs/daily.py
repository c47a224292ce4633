"""Daily digest mode, scheduled: each daily channel's message at its time, exactly once.

What a day's digest holds is ``digests.decide.daily`` (pure); this module reads the store, renders
and hands the messages to the deliverer, like the weekly recap (``bot.jobs.recap``).

Exactly once: a channel's digest of a local day is a ``Delivery`` of kind ``"daily"`` keyed
by the day (``2026-10-25``), so the ledger makes restarts, retries, catch-ups and a second
clock post it at most once; one a dead clock left unfinished is the other clock's recovery
sweep's (:func:`recoverable_dailies`, ``bot.jobs.sweeper``) as well as this job's next look.
One job (``DAILY_JOB_ID``) looks every ``CHECK_SECONDS`` for channels whose time has come:
the latest digest time at or before now, when that is within ``DAILY_GRACE`` (a clock down
at 17:00 posts when it is back that evening; one back the next morning waits for that
day's). Who gets it: the subscriptions made by then. A day without matching episodes posts
nothing and leaves no row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from bot.catalog import teach_repos
from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery, DeliveryReport
from bot.jobs.enrichment import attach_details
from config.settings import Settings
from digests.decide.daily import (
    CATCH_UP_PREFIX,
    Arrival,
    channel_episodes,
    day_key,
    last_due,
    read_catch_up_key,
    window,
)
from digests.decide.deliveries import CATCH_UP, MISSED_SCAN, matches
from digests.render.daily import catch_up_title, render_daily
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from digests.types import Ident, LedgerState, Subscription

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = logging.getLogger(__name__)

DAILY_JOB_ID = "daily-digests"
DAILY_GRACE = timedelta(hours=6)
CHECK_SECONDS = 60
# Episodes read per show and window at most (a day's digest lists 15 and counts the rest).
MAX_ARRIVALS = 500
_FINISHED = {LedgerState.POSTED, LedgerState.FAILED}


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class _Due:
    """One channel's digest that is due: its day, its window, its subscriptions."""

    def __init__(self, subs: list[Subscription], day: date, start: datetime, end: datetime):
        self.subs, self.day, self.start, self.end = subs, day, start, end
        self.team_id, self.channel_id = subs[0].team_id, subs[0].channel_id

    @property
    def key(self) -> str:
        return day_key(self.day)


def due_channels(
    settings: Settings, subscriptions: Iterable[Subscription], now: datetime, grace: timedelta
) -> list[_Due]:
    """The daily channels whose digest time has come within ``grace`` before ``now``."""
    by_channel: dict[tuple[str, str], list[Subscription]] = {}
    for sub in subscriptions:
        if sub.daily and not sub.paused:
            by_channel.setdefault((sub.team_id, sub.channel_id), []).append(sub)
    out: list[_Due] = []
    for subs in by_channel.values():
        at = min(s.daily_at for s in subs if s.daily_at)
        day, due = last_due(now, at, settings.tz)
        if now - due > grace:
            continue
        # A subscription made after the time gets its first digest the next day.
        mine = [s for s in subs if s.created_at is None or _aware(s.created_at) <= due]
        if mine:
            out.append(_Due(mine, day, *window(day, at, settings.tz)))
    return out


def _arrivals(settings: Settings, store: Store, due: Sequence[_Due]) -> list[Arrival]:
    """Every episode of the due channels' shows first seen in their windows."""
    spans: dict[str, tuple[datetime, datetime]] = {}
    for d in due:
        for sub in d.subs:
            start, end = spans.get(sub.show, (d.start, d.end))
            spans[sub.show] = (min(start, d.start), max(end, d.end))
    out: list[Arrival] = []
    for show, (start, end) in sorted(spans.items()):
        episodes = store.arrived_between(show, start, end, MAX_ARRIVALS)
        seen = store.first_seen(show, [e.guid for e in episodes])
        detailed = attach_details(settings, store, episodes)
        out += [Arrival(e, seen[e.guid]) for e in detailed if e.guid in seen]
    return out


def daily_deliveries(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    now: datetime,
    *,
    grace: timedelta = DAILY_GRACE,
) -> list[Delivery]:
    """The daily digests due at ``now`` that the ledger does not have finished yet."""
    teach_repos(renderer, settings, store)
    catch_ups = catch_up_deliveries(settings, store, deliverer.ledger, renderer)
    due = due_channels(settings, store.subscriptions(include_paused=False), now, grace)
    if not due:
        return catch_ups
    entries = deliverer.ledger.entries(
        "daily", {d.key for d in due}, [(d.team_id, d.channel_id) for d in due]
    )
    due = [
        d
        for d in due
        if (e := entries.get((d.team_id, d.channel_id), {}).get(d.key)) is None
        or e.state not in _FINISHED
    ]
    arrivals = _arrivals(settings, store, due) if due else []
    out: list[Delivery] = []
    for d in due:
        episodes = channel_episodes(d.subs, arrivals, d.start, d.end)
        if not episodes:
            continue
        shows = sorted({s.show for s in d.subs})
        message = render_daily(episodes, renderer, shows=shows, day=d.day)
        out.append(Delivery(d.team_id, d.channel_id, "daily", d.key, message))
    return catch_ups + out


def recoverable_dailies(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    now: datetime,
    idents: AbstractSet[Ident],
) -> list[Delivery]:
    """The daily digests and catch-ups of ``idents`` (rows a dead clock left) as the job at
    ``now`` would make them; one no longer due gets none, as the job would post none."""
    items = daily_deliveries(settings, store, deliverer, renderer, now)
    return [i for i in items if i.ident in idents]


def catch_up_deliveries(
    settings: Settings, store: Store, ledger: Ledger, renderer: Renderer
) -> list[Delivery]:
    """The catch-ups ``resume --catch-up`` asked for in daily channels, not posted yet: each
    one message of the newest ``CATCH_UP`` of what its show got during the pause and the
    channel's filter wants (``bot.listeners.commands.control.missed`` counted the same for the
    reply).
    One no longer followed, or paused by Slack, waits."""
    out: list[Delivery] = []
    for row in ledger.unfinished("daily", CATCH_UP_PREFIX):
        read = read_catch_up_key(row.key)
        if read is None:
            continue
        show, start, end = read
        subs = store.subscriptions(
            team_id=row.team_id, channel_id=row.channel_id, show=show, include_paused=False
        )
        if not subs:
            continue
        arrived = store.arrived_between(show, start, end, MISSED_SCAN)
        wanted = [e for e in arrived if matches(e, subs[0].filter)][:CATCH_UP]
        if not wanted:
            continue
        episodes = sorted(attach_details(settings, store, wanted), key=lambda e: e.published_at)
        first, last = (when.astimezone(settings.tz).date() for when in (start, end))
        title = catch_up_title([show], first, last)
        message = render_daily(episodes, renderer, shows=[show], day=last, title=title)
        out.append(Delivery(row.team_id, row.channel_id, "daily", row.key, message))
    return out


async def post_daily(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    now: datetime,
    *,
    grace: timedelta = DAILY_GRACE,
) -> DeliveryReport:
    """Deliver every daily digest due at ``now``. Safe to call any number of times, from
    any number of clocks: the ledger posts each channel's day once."""
    items = daily_deliveries(settings, store, deliverer, renderer, now, grace=grace)
    if not items:
        return DeliveryReport()
    report = await deliverer.deliver(items)
    log.info(
        "daily digests: %d channels, %d posted, %d already there, %d failed",
        len(items),
        len(report.posted),
        len(report.unchanged) + len(report.recovered),
        len(report.failed),
    )
    return report


def daily_job(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    *,
    clock: Callable[[], datetime] = _utcnow,
    every: float = CHECK_SECONDS,
) -> Callable[[AsyncIOScheduler], None]:
    """What ``Clock(..., extra_jobs=[...])`` calls to add the daily digests' job."""

    async def run() -> None:
        await post_daily(settings, store, deliverer, renderer, clock())

    def add(scheduler: AsyncIOScheduler) -> None:
        # Imported here: `run --once` posts the daily digests without a scheduler.
        from apscheduler.triggers.interval import IntervalTrigger

        scheduler.add_job(
            run,
            trigger=IntervalTrigger(seconds=every, timezone=UTC),
            id=DAILY_JOB_ID,
            name="daily digests",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            next_run_time=clock(),  # at start: a digest due while this clock was down
        )

    return add
