"""The clock: APScheduler jobs that poll each show and deliver what is due.

One job per show (id ``poll:<show>``), on an interval of ``poll_minutes`` with jitter,
``coalesce`` and ``max_instances=1``; after every run the job's next run is moved to the
show's stored ``next_poll_at`` — the backoff of a failing feed, or the feed's own
``Retry-After``/``Cache-Control`` — plus jitter. The stored time also decides the first run
after a restart, so restarting a clock never hammers a feed that asked for quiet; a job
that fires before it fetches nothing and moves to it (``run_once(only_due=True)``).

The clock is one process: ``digestbot run`` (and ``clock``) on SQLite. On PostgreSQL the
schedule is the job queue's, shared by any number of workers (:mod:`bot.jobs.tasks`).

A ``sweep`` job (every ``SWEEP_SECONDS``, and at start-up) delivers what a crashed run left
unfinished (:class:`bot.jobs.sweeper.Sweeper`) — the weekly recap's and the daily digests'
too.
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
from typing import TYPE_CHECKING

import httpx
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot import logs
from bot.catalog import AddedShow, added_shows
from bot.delivery.deliverer import Deliverer
from bot.delivery.outbox import Outbox, classify
from bot.delivery.paced import TRANSIENT
from bot.jobs.cycle import RunReport
from bot.jobs.daily import daily_job
from bot.jobs.enrichment import GitHubSession
from bot.jobs.ingest import parse_limit
from bot.jobs.pipeline import poll_limit, run_once
from bot.jobs.recap import recap_job
from bot.jobs.sweeper import Sweeper
from bot.runtime import (
    make_outbox,
    open_store,
    resolve_team_id,
    sync_config_channels_once,
    tokens_at_rest,
)
from config.settings import Settings, ShowConfig
from digests.errors import SlackError, StoreError
from digests.render.renderer import Renderer
from digests.sources.fetch import make_http_client
from digests.store import Store

if TYPE_CHECKING:
    from bot.process import ProcessOps

log = logging.getLogger(__name__)

Now = Callable[[], datetime]
ExtraJob = Callable[[AsyncIOScheduler], None]

SWEEP_JOB = "sweep"
# How often a clock looks for deliveries a dead clock (or crashed run) left unfinished: the
# bound on how long a channel waits when the clock that was fanning out dies.
SWEEP_SECONDS = 30.0


def _utcnow() -> datetime:
    return datetime.now(UTC)


def job_id(show: str) -> str:
    return f"poll:{show}"


def first_run(store: Store, show: str, now: datetime) -> datetime:
    """Now, unless the show's stored next poll (backoff, Retry-After) is later."""
    due = store.fetch_state(show).next_poll_at
    return max(now, due) if due is not None else now


def _as_now(now: Now | datetime | None) -> Now:
    if now is None:
        return _utcnow
    if isinstance(now, datetime):
        fixed = now
        return lambda: fixed
    return now


class Clock:
    """The clock's moving parts in one object: the APScheduler instance (not started), the
    deliverer its jobs share, and the job runs in flight (so a stop can let them finish).

    One poll job per configured show, plus the recovery sweep (id ``sweep``, every
    ``sweep_seconds``, first at start-up; None leaves it out): the poll jobs re-offer only
    their own show's unfinished rows and only every ``poll_minutes``, so when another clock
    dies mid fan-out it is the sweep that finishes its channels. ``extra_jobs`` get the
    scheduler to add theirs (the weekly recap, the daily digests).

    ``now`` is a clock (or a fixed time, for tests that only inspect the jobs).
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        outbox: Outbox,
        http_client: httpx.AsyncClient,
        *,
        now: Now | datetime | None = None,
        extra_jobs: Iterable[ExtraJob] = (),
        deliverer: Deliverer | None = None,
        renderer: Renderer | None = None,
        on_report: Callable[[RunReport], None] | None = None,
        sweep_seconds: float | None = SWEEP_SECONDS,
    ) -> None:
        self.settings = settings
        self.store = store
        self.outbox = outbox
        self.http_client = http_client
        self.now = _as_now(now)
        self.deliverer = deliverer or Deliverer.of(settings, store, outbox)
        self.renderer = renderer or Renderer.of(settings)
        self.on_report = on_report
        self.github = GitHubSession(settings)
        self.scheduler = AsyncIOScheduler(timezone=UTC)
        self.running: set[asyncio.Task[object]] = set()
        # Jobs that fire together (every show at start-up) share one bound on shows in flight.
        self._gate = poll_limit(self.deliverer.ledger)
        self._parse_gate = parse_limit()
        # The config file's shows; those added from Slack join at each sweep (sync_shows).
        self.config_settings = settings
        self.added: dict[str, AddedShow] = {}
        self._sweeper: Sweeper | None = None
        for show in settings.shows:
            self._add_poll(show)
        if sweep_seconds is not None:
            self._add_sweep(sweep_seconds)
        for add in extra_jobs:
            add(self.scheduler)

    def start(self) -> None:
        self.scheduler.start()

    async def stop(self, grace: float = 30.0) -> None:
        """Stop firing jobs, give running ones ``grace`` seconds to finish, shut down.

        APScheduler's asyncio executor cancels running jobs on shutdown: a poll cancelled
        mid-delivery would leave its posts to recovery instead of finishing them.
        """
        self.scheduler.pause()
        busy = set(self.running)
        if busy:
            await asyncio.wait(busy, timeout=grace)
        self.scheduler.shutdown(wait=False)
        await self.github.aclose()

    # -- the jobs -------------------------------------------------------------------------
    def _track(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.running.add(task)
            task.add_done_callback(self.running.discard)

    def _add_poll(self, show: ShowConfig, first: datetime | None = None) -> None:
        schedule = self.settings.schedule

        async def poll() -> None:
            await self._poll(show)

        self.scheduler.add_job(
            poll,
            trigger=IntervalTrigger(
                minutes=schedule.poll_minutes, jitter=schedule.jitter_seconds or None
            ),
            id=job_id(show.name),
            name=f"poll {show.name}",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=schedule.poll_minutes * 60,
            next_run_time=first or first_run(self.store, show.name, self.now()),
        )

    async def _poll(self, show: ShowConfig) -> None:
        self._track()
        logs.enter(show=show.name)  # each job runs as a task of its own
        started = self.now()
        try:
            report = await run_once(
                self.settings,
                self.store,
                self.outbox,
                self.http_client,
                started,
                deliverer=self.deliverer,
                renderer=self.renderer,
                shows=[show],
                poll_gate=self._gate,
                parse_gate=self._parse_gate,
                github=self.github.client(),
                only_due=True,
            )
        except StoreError as exc:  # our database: one line, the next interval tries again
            log.error("poll of %s failed: %s", show.name, exc)
            return
        except Exception:  # a job must never die: log it, try again next interval
            log.exception("poll of %s failed", show.name)
            return
        if self.on_report is not None:
            self.on_report(report)
        try:
            self._after(show, report)
        except StoreError as exc:  # a job must never die: APScheduler would log a traceback
            log.warning("poll of %s: its next run stays as scheduled: %s", show.name, exc)

    def _after(self, show: ShowConfig, report: RunReport) -> None:
        """Move the show's next run to its stored next poll; stop if Slack refused every token."""
        stopped = self.deliverer.stopped_teams
        teams = {s.team_id for s in self.store.subscriptions(show=show.name)}
        if stopped and teams and teams <= set(stopped):
            log.error(
                "Slack refused the token of every team following %s (%s): poll job paused",
                show.name,
                ", ".join(f"{t}: {e}" for t, e in stopped.items()),
            )
            self.scheduler.pause_job(job_id(show.name))
            return
        polled = next((p for p in report.polls if p.show == show.name), None)
        due = polled.state.next_poll_at if polled is not None else None
        if due is None or polled is None or polled.status == "busy":
            return
        jitter = self.settings.schedule.jitter_seconds
        spread = timedelta(seconds=random.uniform(0, jitter)) if jitter else timedelta(0)
        when = max(due, self.now()) + spread
        job = self.scheduler.get_job(job_id(show.name))
        if job is not None:
            job.modify(next_run_time=when)

    async def sync_shows(self) -> None:
        """Poll jobs for the shows added from Slack since the last look, none any more for
        those removed: the list is read from the store, so another process's change counts."""
        added = await asyncio.to_thread(added_shows, self.config_settings, self.store)
        wanted = {show.name: show for show in added}
        if wanted == self.added:
            return
        for name in self.added.keys() - wanted.keys():
            with contextlib.suppress(JobLookupError):
                self.scheduler.remove_job(job_id(name))
        self.settings = self.config_settings.model_copy(
            update={"shows": [*self.config_settings.shows, *added]}
        )
        self.renderer = Renderer.of(self.settings)
        if self._sweeper is not None:
            self._sweeper.settings, self._sweeper.renderer = self.settings, self.renderer
        for name, show in wanted.items():
            if self.added.get(name) != show:
                first = await asyncio.to_thread(first_run, self.store, name, self.now())
                self._add_poll(show, first)
        log.info("shows added from Slack: %s", ", ".join(wanted) or "none")
        self.added = wanted

    def _add_sweep(self, seconds: float) -> None:
        sweeper = self._sweeper = Sweeper(
            self.settings, self.store, self.deliverer, self.renderer, clock=self.now
        )

        async def sweep() -> None:
            self._track()
            try:
                await self.sync_shows()
                await sweeper.sweep()
            except Exception:  # like a poll: log it, look again next time
                log.exception("recovery sweep failed")

        self.scheduler.add_job(
            sweep,
            trigger=IntervalTrigger(seconds=seconds),
            id=SWEEP_JOB,
            name="recover orphaned deliveries",
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, int(seconds)),
            next_run_time=self.now(),
        )


async def wait_for_slack(
    settings: Settings, stop: asyncio.Event, *, backoff: float = 1.0, cap: float = 60.0
) -> str | None:
    """The workspace's team id once Slack answers ``auth.test``; None if stopped first.

    A Slack outage at start-up is waited out, with backoff up to ``cap``: a clock that
    exited on it would need someone to start it again. A refused token is not transient:
    it is raised, and the clock exits.
    """
    delay = backoff
    while True:
        try:
            return await resolve_team_id(settings)
        except SlackError as exc:
            cause = exc.__cause__
            failure = classify("auth.test", cause) if cause is not None else None
            if failure is None or failure.category not in TRANSIENT:
                raise
            log.warning("Slack is unreachable (%s); trying again in %.0f s", failure.error, delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        if stop.is_set():
            return None
        delay = min(delay * 2, cap)


async def run_clock(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    grace: float = 30.0,
    sweep_seconds: float | None = None,
    start_backoff: float = 1.0,
    ops: ProcessOps | None = None,
) -> None:
    """The clock process: store, outbox, HTTP client, scheduler; runs until SIGTERM/SIGINT.

    ``sweep_seconds`` defaults to ``schedule.sweep_seconds`` from the settings;
    ``start_backoff`` is the first wait when Slack is unreachable at start-up; ``ops``
    is told what runs (metrics, readiness: ``bot.process``).
    """
    if sweep_seconds is None:
        sweep_seconds = settings.schedule.sweep_seconds
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    store = await asyncio.to_thread(open_store, settings)
    try:
        if ops is not None:
            ops.opened(store)
        await tokens_at_rest(settings)
        team_id = await wait_for_slack(settings, stop, backoff=start_backoff)
        if team_id is None:
            return
        if ops is not None:
            ops.slack_accepted()
        await asyncio.to_thread(sync_config_channels_once, settings, store, team_id)
    except BaseException:
        await asyncio.to_thread(store.close)
        raise
    await _run(settings, store, stop, grace, sweep_seconds, ops)


async def _run(
    settings: Settings,
    store: Store,
    stop: asyncio.Event,
    grace: float,
    sweep_seconds: float,
    ops: ProcessOps | None = None,
) -> None:
    metrics = ops.metrics if ops is not None else None
    outbox = make_outbox(settings, sys.stdout, store)
    renderer = Renderer.of(settings)
    deliverer = Deliverer.of(settings, store, outbox, metrics)
    extra: list[ExtraJob] = [
        recap_job(settings, store, deliverer, renderer),
        daily_job(settings, store, deliverer, renderer),
    ]
    observe = metrics.fetched if metrics is not None else None
    async with make_http_client(observe=observe) as http_client:
        clock = Clock(
            settings,
            store,
            outbox,
            http_client,
            extra_jobs=extra,
            deliverer=deliverer,
            renderer=renderer,
            sweep_seconds=sweep_seconds,
            on_report=metrics.polled if metrics is not None else None,
        )
        if metrics is not None:
            clock.github.observe = metrics.github_answer
        clock.start()
        if ops is not None:
            ops.clock_running(lambda: bool(clock.scheduler.running))
        log.info("clock started: %d jobs", len(clock.scheduler.get_jobs()))
        try:
            await stop.wait()
        finally:
            await clock.stop(grace)
            await deliverer.aclose()
            await outbox.close()
            await asyncio.to_thread(store.close)
