"""The clock: APScheduler jobs that poll each show and deliver what is due.

One job per show (id ``poll:<show>``), on an interval of ``poll_minutes`` with jitter,
``coalesce`` and ``max_instances=1``; after every run the job's next run is moved to the
show's stored ``next_poll_at`` — the backoff of a failing feed, or the feed's own
``Retry-After``/``Cache-Control`` — plus jitter. The stored time also decides the first run
after a restart, so restarting a clock never hammers a feed that asked for quiet.

A ``sweep`` job (every ``SWEEP_SECONDS``, and at start-up) delivers what a dead clock or a
crashed run left unfinished (:class:`bot.poll.Sweeper`): with two clocks, the one that did
not poll a show is the one that finishes its fan-out when the other dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from weakref import WeakKeyDictionary

import httpx
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.delivery import Deliverer
from bot.outbox import Outbox
from bot.poll import RunReport, Sweeper, poll_limit, run_once
from config.settings import Settings, ShowConfig
from digests.render import Renderer
from digests.store import Store

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
ExtraJob = Callable[[AsyncIOScheduler], None]

SWEEP_JOB = "sweep"
# How often a clock looks for deliveries a dead clock (or crashed run) left unfinished: the
# bound on how long a channel waits when the clock that was fanning out dies.
SWEEP_SECONDS = 30.0

_deliverers: WeakKeyDictionary[AsyncIOScheduler, Deliverer] = WeakKeyDictionary()
_running: WeakKeyDictionary[AsyncIOScheduler, set[asyncio.Task[object]]] = WeakKeyDictionary()


def _utcnow() -> datetime:
    return datetime.now(UTC)


def job_id(show: str) -> str:
    return f"poll:{show}"


def deliverer_of(scheduler: AsyncIOScheduler) -> Deliverer:
    """The deliverer the poll jobs of ``scheduler`` share (for jobs added by hooks)."""
    return _deliverers[scheduler]


def first_run(store: Store, show: str, now: datetime) -> datetime:
    """Now, unless the show's stored next poll (backoff, Retry-After) is later."""
    due = store.fetch_state(show).next_poll_at
    return max(now, due) if due is not None else now


def build_scheduler(
    settings: Settings,
    store: Store,
    outbox: Outbox,
    http_client: httpx.AsyncClient,
    *,
    now: Clock | datetime | None = None,
    extra_jobs: Iterable[ExtraJob] = (),
    deliverer: Deliverer | None = None,
    renderer: Renderer | None = None,
    on_report: Callable[[RunReport], None] | None = None,
    sweep_seconds: float | None = SWEEP_SECONDS,
) -> AsyncIOScheduler:
    """An ``AsyncIOScheduler`` (not started) with a poll job per configured show.

    Plus the recovery sweep (id ``sweep``, every ``sweep_seconds``, first at start-up;
    None leaves it out): the poll jobs re-offer only their own show's unfinished rows and
    only every ``poll_minutes``, so when another clock dies mid fan-out it is the sweep
    that finishes its channels.

    ``now`` is a clock (or a fixed time, for tests that only inspect the jobs).
    """
    clock: Clock
    if now is None:
        clock = _utcnow
    elif isinstance(now, datetime):
        fixed = now
        clock = lambda: fixed  # noqa: E731
    else:
        clock = now
    deliverer = deliverer or Deliverer(store, outbox)
    renderer = renderer or Renderer(settings.templates_dir, tz=settings.tz)
    schedule = settings.schedule
    scheduler = AsyncIOScheduler(timezone=UTC)
    _deliverers[scheduler] = deliverer
    running: set[asyncio.Task[object]] = set()
    _running[scheduler] = running
    # Jobs that fire together (every show at start-up) share one bound on shows in flight.
    gate = poll_limit(deliverer.ledger)

    def make_job(show: ShowConfig) -> Callable[[], object]:
        async def poll() -> None:
            task = asyncio.current_task()
            if task is not None:
                running.add(task)
                task.add_done_callback(running.discard)
            started = clock()
            try:
                report = await run_once(
                    settings,
                    store,
                    outbox,
                    http_client,
                    started,
                    deliverer=deliverer,
                    renderer=renderer,
                    shows=[show],
                    poll_gate=gate,
                )
            except Exception:  # a job must never die: log it, try again next interval
                log.exception("poll of %s failed", show.name)
                return
            if on_report is not None:
                on_report(report)
            _after(scheduler, store, show, report, clock, schedule.jitter_seconds)

        return poll

    for show in settings.shows:
        scheduler.add_job(
            make_job(show),
            trigger=IntervalTrigger(
                minutes=schedule.poll_minutes, jitter=schedule.jitter_seconds or None
            ),
            id=job_id(show.name),
            name=f"poll {show.name}",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=schedule.poll_minutes * 60,
            next_run_time=first_run(store, show.name, clock()),
        )
    if sweep_seconds is not None:
        sweeper = Sweeper(settings, store, deliverer, renderer)

        async def sweep() -> None:
            task = asyncio.current_task()
            if task is not None:
                running.add(task)
                task.add_done_callback(running.discard)
            try:
                await sweeper.sweep()
            except Exception:  # like a poll: log it, look again next time
                log.exception("recovery sweep failed")

        scheduler.add_job(
            sweep,
            trigger=IntervalTrigger(seconds=sweep_seconds),
            id=SWEEP_JOB,
            name="recover orphaned deliveries",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, int(sweep_seconds)),
            next_run_time=clock(),
        )
    for add in extra_jobs:
        add(scheduler)
    return scheduler


def _after(
    scheduler: AsyncIOScheduler,
    store: Store,
    show: ShowConfig,
    report: RunReport,
    clock: Clock,
    jitter: int,
) -> None:
    """Move the show's next run to its stored next poll; stop if Slack refused every token."""
    deliverer = deliverer_of(scheduler)
    teams = {s.team_id for s in store.subscriptions(show=show.name)}
    if deliverer.stopped_teams and teams and teams <= set(deliverer.stopped_teams):
        log.error(
            "Slack refused the token of every team following %s (%s): poll job paused",
            show.name,
            ", ".join(f"{t}: {e}" for t, e in deliverer.stopped_teams.items()),
        )
        scheduler.pause_job(job_id(show.name))
        return
    polled = next((p for p in report.polls if p.show == show.name), None)
    due = polled.state.next_poll_at if polled is not None else None
    if due is None or polled is None or polled.status == "busy":
        return
    spread = timedelta(seconds=random.uniform(0, jitter)) if jitter else timedelta(0)
    when = max(due, clock()) + spread
    job = scheduler.get_job(job_id(show.name))
    if job is not None:
        job.modify(next_run_time=when)


async def run_clock(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    grace: float = 30.0,
    sweep_seconds: float | None = None,
) -> None:
    """The clock process: store, outbox, HTTP client, scheduler; runs until SIGTERM/SIGINT.

    ``sweep_seconds`` defaults to ``schedule.sweep_seconds`` from the settings.
    """
    if sweep_seconds is None:
        sweep_seconds = settings.schedule.sweep_seconds
    from bot.outbox import make_outbox
    from bot.runtime import open_store, resolve_team_id, sync_config_channels
    from digests.fetch import make_http_client

    store = await asyncio.to_thread(open_store, settings)
    team_id = await resolve_team_id(settings)
    await asyncio.to_thread(sync_config_channels, settings, store, team_id)
    outbox = make_outbox(settings, sys.stdout)
    renderer = Renderer(settings.templates_dir, tz=settings.tz)
    deliverer = Deliverer(store, outbox)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    extra: list[ExtraJob] = []
    try:
        from bot.recap import recap_job

        extra.append(recap_job(settings, store, deliverer, renderer))
    except ImportError:  # pragma: no cover - the recap part is optional
        log.warning("weekly recap not available")
    async with make_http_client() as http_client:
        scheduler = build_scheduler(
            settings,
            store,
            outbox,
            http_client,
            extra_jobs=extra,
            deliverer=deliverer,
            renderer=renderer,
            sweep_seconds=sweep_seconds,
        )
        scheduler.start()
        log.info("clock started: %d jobs", len(scheduler.get_jobs()))
        try:
            await stop.wait()
        finally:
            # Let a poll that is mid-delivery finish its posts (and their ledger rows) before
            # shutting down: APScheduler's asyncio executor cancels running jobs on shutdown.
            scheduler.pause()
            busy = set(_running.get(scheduler, ()))
            if busy:
                await asyncio.wait(busy, timeout=grace)
            scheduler.shutdown(wait=False)
            await deliverer.aclose()
            await outbox.close()
            await asyncio.to_thread(store.close)
