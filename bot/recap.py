"""The weekly recap, wired: read the week from the store, render it, deliver it once, on a cron.

Which week a scheduled recap covers is decided from the *scheduled* time, not from when the
job happens to run: the latest ``schedule.recap`` time at or before ``now`` (in
``timezone``), and the ISO week that contains the day before it. So a Monday 09:00 recap
covers the week that just ended — also when a clock that was down at 09:00 catches up on
Tuesday — and a ``"sun 20:00"`` or ``"fri 17:00"`` recap covers the week it is sent in.

Exactly once: each channel's recap is a ``Delivery`` of kind ``"recap"`` keyed
``"<year>-W<ww>"``, so the ledger makes restarts, retries, catch-ups and a second clock
post it at most once. Missed runs: APScheduler keeps jobs in memory, so a clock that was
down at 09:00 would never see the misfire; the job is therefore added with its
``next_run_time`` set to the latest scheduled time when that is within ``RECAP_GRACE``
(APScheduler runs it at start), else to the next one (a week-old recap is noise, and so
is APScheduler's "missed by 6 days" warning at every start).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from bot.delivery import Deliverer, Delivery, DeliveryReport
from config.settings import Settings
from digests.decide import matches
from digests.models import Episode
from digests.recap import aggregate, week_bounds, week_of
from digests.render import Renderer
from digests.render.limits import Message
from digests.render.recap import render_recap
from digests.store import Store
from digests.types import Subscription

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
    "week_message",
]

log = logging.getLogger(__name__)

RECAP_JOB_ID = "weekly-recap"
# How late a missed recap may still go out: a clock down over Monday morning still posts
# when it is back that day or the next morning; later than that, it waits for next week.
RECAP_GRACE = timedelta(hours=24)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _canonical(settings: Settings, shows: Iterable[str]) -> list[str]:
    """Show names as configured (the store matches names exactly; users type them loosely)."""
    out: list[str] = []
    for name in shows:
        show = settings.show(name)
        out.append(show.name if show is not None else name)
    return list(dict.fromkeys(out))


# -- on demand --------------------------------------------------------------------------------


def _week_episodes(
    settings: Settings, store: Store, year: int, week: int, shows: Sequence[str] | None
) -> list[Episode]:
    start, end = week_bounds(year, week, settings.tz)
    return store.between(start, end, shows=shows)


def build_recap(
    settings: Settings,
    store: Store,
    renderer: Renderer,
    *,
    year: int,
    week: int,
    shows: Sequence[str],
    keywords: Sequence[str] = (),
    thread: bool = True,
) -> tuple[Message, list[Message]] | None:
    """The recap of ``year``-W``week`` for ``shows`` (empty: every configured show), as the
    post and its thread replies; None for an empty week unless ``quiet_week`` is on."""
    names = _canonical(settings, shows) or [s.name for s in settings.shows]
    episodes = _week_episodes(settings, store, year, week, names or None)
    recap = aggregate(
        episodes, year=year, week=week, tz=settings.tz, shows=names, keywords=keywords
    )
    return render_recap(recap, renderer, quiet_week=settings.quiet_week, thread=thread)


def week_message(
    settings: Settings, store: Store, renderer: Renderer, day: date, shows: Sequence[str]
) -> Message:
    """``/episodes week [date]``: the recap of ``day``'s week as one message (no thread: what
    does not fit is counted), and a short line for a week without episodes."""
    year, week = week_of(day, settings.tz)
    names = _canonical(settings, shows) or [s.name for s in settings.shows]
    episodes = _week_episodes(settings, store, year, week, names or None)
    recap = aggregate(episodes, year=year, week=week, tz=settings.tz, shows=names)
    rendered = render_recap(recap, renderer, quiet_week=True, thread=False)
    assert rendered is not None  # quiet_week=True always renders
    return rendered[0]


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
    """The ISO week a recap run at ``now`` covers (see the module docstring)."""
    fired = last_fire_time(settings, now).astimezone(settings.tz)
    return week_of(fired.date() - timedelta(days=1), settings.tz)


def _channel_episodes(subs: Sequence[Subscription], episodes: Sequence[Episode]) -> list[Episode]:
    """The episodes this channel received: each show filtered by its own keywords."""
    keywords = {s.show.casefold(): s.keywords for s in subs}
    return [
        e
        for e in episodes
        if e.show.casefold() in keywords and matches(e, keywords[e.show.casefold()])
    ]


def recap_deliveries(
    settings: Settings,
    store: Store,
    renderer: Renderer,
    *,
    year: int,
    week: int,
    channels: Sequence[str] | None = None,
) -> list[Delivery]:
    """One recap ``Delivery`` per channel with ``recap = true`` (optionally only ``channels``)."""
    by_channel: dict[tuple[str, str], list[Subscription]] = {}
    for sub in store.subscriptions(include_paused=False):
        if sub.recap and (channels is None or sub.channel_id in channels):
            by_channel.setdefault((sub.team_id, sub.channel_id), []).append(sub)
    if not by_channel:
        return []
    start, end = week_bounds(year, week, settings.tz)
    # One query for the week; channels differ only in which of these they keep.
    week_episodes = store.between(start, end)
    rendered: dict[object, tuple[Message, list[Message]] | None] = {}
    out: list[Delivery] = []
    for (team_id, channel_id), subs in by_channel.items():
        shows = sorted({s.show for s in subs})
        kept = _channel_episodes(subs, week_episodes)
        shared = {s.keywords for s in subs}
        # The same keywords on every show can be named in the post; mixed ones cannot.
        keywords = next(iter(shared)) if len(shared) == 1 else ()
        signature = (tuple(shows), tuple((s.show, s.keywords) for s in subs))
        if signature not in rendered:
            recap = aggregate(
                kept, year=year, week=week, tz=settings.tz, shows=shows, keywords=keywords
            )
            rendered[signature] = render_recap(recap, renderer, quiet_week=settings.quiet_week)
        result = rendered[signature]
        if result is None:
            continue
        post, replies = result
        out.append(
            Delivery(
                team_id=team_id,
                channel_id=channel_id,
                kind="recap",
                key=f"{year}-W{week:02d}",
                message=post,
                thread=tuple(replies),
            )
        )
    return out


async def post_recaps(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    now: datetime,
    *,
    week: tuple[int, int] | None = None,
    channels: Sequence[str] | None = None,
) -> DeliveryReport:
    """Deliver the recap of the week a run at ``now`` covers (or of ``week``) to every
    channel that wants one. Safe to call any number of times: the ledger posts once."""
    year, number = week or covered_week(settings, now)
    items = recap_deliveries(settings, store, renderer, year=year, week=number, channels=channels)
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


def recap_job(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    renderer: Renderer,
    *,
    clock: Callable[[], datetime] = _utcnow,
    grace: timedelta = RECAP_GRACE,
) -> Callable[[AsyncIOScheduler], None]:
    """What ``build_scheduler(..., extra_jobs=[...])`` calls to add the weekly recap job."""

    async def run() -> None:
        await post_recaps(settings, store, deliverer, renderer, clock())

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
