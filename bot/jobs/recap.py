"""The weekly recap, scheduled: which week a run covers, its deliveries, once, on a cron.

Building the recap (the store read, aggregation, rendering) is ``bot.jobs.recap_build``, which the
CLI and ``/episodes week`` use too; this module adds APScheduler and the deliverer.

Which week a scheduled recap covers is decided from the *scheduled* time, not from when the
job happens to run: the latest ``schedule.recap`` time at or before ``now`` (in
``timezone``), and the last complete ISO week (Monday to Sunday) before it — whatever the
weekday. So a Monday 09:00 recap covers the week that just ended, also when a clock that was
down at 09:00 catches up on Tuesday; a ``"sun 20:00"`` or ``"fri 17:00"`` one covers the
week before the one it is sent in, since that one is not over (a recap of half a week would
miss the rest, and the next recap would not cover it either).

Who gets it: the channels subscribed when it was due. A clock that comes back after the
recap time posts it to those only; a channel subscribed in between never saw that week's
digests here and gets its first recap next week.

Exactly once: each channel's recap is a ``Delivery`` of kind ``"recap"`` keyed
``"<year>-W<ww>"``, so the ledger makes restarts, retries, catch-ups and a second clock
post it at most once. The job runs once at its time, so a recap the clock posting it left
unfinished (killed mid fan-out) is the other clock's recovery sweep's
(:func:`recoverable_recaps`, ``bot.jobs.sweeper``): at least once, without waiting for a start.

Missed runs: APScheduler keeps jobs in memory, so a clock that was
down at 09:00 would never see the misfire; the job is therefore added with its
``next_run_time`` set to the latest scheduled time when that is within ``RECAP_GRACE``
(APScheduler runs it at start), else to the next one (a week-old recap is noise, and so
is APScheduler's "missed by 6 days" warning at every start).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from bot.catalog import teach_repos
from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery, DeliveryReport
from bot.jobs.recap_build import (
    build_recap,
    channel_recaps,
    read_week,
    recap_subscriptions,
    week_message,
)
from config.settings import Settings
from digests.recap import week_of
from digests.render.renderer import Renderer
from digests.store import Store
from digests.types import Ident, Subscription

__all__ = [
    "RECAP_GRACE",
    "RECAP_JOB_ID",
    "build_recap",
    "covered_week",
    "last_fire_time",
    "post_recaps",
    "recap_deliveries",
    "recap_job",
    "recap_trigger",
    "recoverable_recaps",
    "week_message",
]

log = logging.getLogger(__name__)

RECAP_JOB_ID = "weekly-recap"
# How late a missed recap may still go out: a clock down over Monday morning still posts
# when it is back that day or the next morning; later than that, it waits for next week.
RECAP_GRACE = timedelta(hours=24)


def _utcnow() -> datetime:
    return datetime.now(UTC)


# -- scheduled --------------------------------------------------------------------------------


def recap_trigger(settings: Settings) -> CronTrigger:
    schedule = settings.schedule
    return CronTrigger(
        day_of_week=schedule.recap_day,
        hour=schedule.recap_hour,
        minute=schedule.recap_minute,
        timezone=settings.tz,
    )


def last_fire_time(settings: Settings, now: datetime) -> datetime:
    """The latest scheduled recap time at or before ``now`` (aware, in ``timezone``)."""
    trigger = recap_trigger(settings)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    # Eight days back always holds one weekly fire time, DST shifts included.
    fire = trigger.get_next_fire_time(None, now - timedelta(days=8))
    last = fire
    while fire is not None and fire <= now:
        last = fire
        fire = trigger.get_next_fire_time(fire, fire + timedelta(seconds=1))
    assert last is not None and last <= now
    return last


def covered_week(settings: Settings, now: datetime) -> tuple[int, int]:
    """The ISO week a recap run at ``now`` covers: the last one complete at the scheduled
    time (see the module docstring)."""
    fired = last_fire_time(settings, now).astimezone(settings.tz)
    # The Sunday before the fire's day (a Monday's: the day before; a Sunday's: a week
    # before, since that week is not over until midnight).
    return week_of(fired.date() - timedelta(days=fired.isoweekday()), settings.tz)


def _subscribed_by(sub: Subscription, when: datetime | None) -> bool:
    created = sub.created_at
    if when is None or created is None:
        return True
    return (created if created.tzinfo else created.replace(tzinfo=UTC)) <= when


def recap_deliveries(
    settings: Settings,
    store: Store,
    renderer: Renderer,
    *,
    year: int,
    week: int,
    channels: Sequence[str] | None = None,
    subscribed_by: datetime | None = None,
    now: datetime | None = None,
) -> list[Delivery]:
    """One recap ``Delivery`` per channel with ``recap = true`` (optionally only ``channels``,
    and only the subscriptions made at or before ``subscribed_by``). A show paused in the
    channel at ``now`` (``/episodes pause``) is left out of its recap: a pause stops what is
    posted about the show there; a channel whose every show is paused gets none."""
    subs = [
        s
        for s in recap_subscriptions(store.subscriptions(include_paused=False), channels)
        if _subscribed_by(s, subscribed_by) and not (now is not None and s.held(now))
    ]
    if not subs:
        return []
    teach_repos(renderer, settings, store)
    # One query for the week; channels differ only in which of these they keep.
    filtered = any(k.strip() for s in subs for k in s.keywords)
    episodes = read_week(settings, store, year, week, transcripts=filtered)
    return [
        Delivery(
            team_id=r.team_id,
            channel_id=r.channel_id,
            kind="recap",
            key=r.key,
            message=r.post,
            thread=r.replies,
        )
        for r in channel_recaps(settings, renderer, subs, episodes, year=year, week=week)
    ]


async def post_recaps(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    now: datetime,
    *,
    week: tuple[int, int] | None = None,
    channels: Sequence[str] | None = None,
    subscribed_by: datetime | None = None,
) -> DeliveryReport:
    """Deliver the recap of the week a run at ``now`` covers (or of ``week``) to every
    channel that wants one (subscribed at or before ``subscribed_by``, when given). Safe to
    call any number of times: the ledger posts once."""
    year, number = week or covered_week(settings, now)
    items = recap_deliveries(
        settings,
        store,
        renderer,
        year=year,
        week=number,
        channels=channels,
        subscribed_by=subscribed_by,
        now=now,
    )
    report = await deliverer.deliver(items)
    log.info(
        "recap %d-W%02d: %d channels, %d posted, %d already there, %d failed",
        year,
        number,
        len(items),
        len(report.posted),
        len(report.unchanged) + len(report.recovered),
        len(report.failed),
    )
    return report


def recoverable_recaps(
    settings: Settings,
    store: Store,
    renderer: Renderer,
    now: datetime,
    idents: AbstractSet[Ident],
    *,
    grace: timedelta = RECAP_GRACE,
) -> list[Delivery]:
    """The recaps of ``idents`` (rows a dead clock left) as the job at ``now`` would make
    them: the week it covers, the channels subscribed when it was due. A row of another
    week, or one past ``grace`` (the job would not post it late either), gets none."""
    due = last_fire_time(settings, now)
    if now - due > grace:
        return []
    year, week = covered_week(settings, now)
    items = recap_deliveries(
        settings,
        store,
        renderer,
        year=year,
        week=week,
        channels=sorted({channel for _, channel, _, _ in idents}),
        subscribed_by=due,
        now=now,
    )
    return [i for i in items if i.ident in idents]


def recap_job(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    *,
    clock: Callable[[], datetime] = _utcnow,
    grace: timedelta = RECAP_GRACE,
) -> Callable[[AsyncIOScheduler], None]:
    """What ``Clock(..., extra_jobs=[...])`` calls to add the weekly recap job."""

    async def run() -> None:
        now = clock()
        # Late (a clock back after the recap time): only the channels there when it was due.
        due = last_fire_time(settings, now)
        await post_recaps(settings, store, deliverer, renderer, now, subscribed_by=due)

    def add(scheduler: AsyncIOScheduler) -> None:
        now = clock()
        trigger = recap_trigger(settings)
        due = last_fire_time(settings, now)
        if now - due > grace:
            # Long past: APScheduler would skip it too, but with a warning at every start
            # ("was missed by 6 days"). Start from the next one and say so once, quietly.
            later = trigger.get_next_fire_time(due, now)
            log.info("weekly recap due %s was missed; the next is due %s", due, later)
            due = later if later is not None else due
        scheduler.add_job(
            run,
            trigger=trigger,
            id=RECAP_JOB_ID,
            name="weekly recap",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=int(grace.total_seconds()),
            # The run this process may have missed while it was down, within the grace
            # time: APScheduler runs it now.
            next_run_time=due,
        )

    return add
