"""The tasks ``digestbot worker`` runs (procrastinate jobs; the app: :mod:`bot.jobs.queue`).

- ``dispatch`` (periodic, every minute, one run across workers): a ``poll`` job for every
  show whose stored next poll comes within the minute, scheduled at it; at most one waits
  per show (``queueing_lock``) and one runs (``lock``): polls never pile up or overlap.
- ``poll``: one show through the pipeline's phases (``bot.jobs.pipeline.run_once``, the
  same code as ``run --once`` and the clock), its notices and follow DMs delivered here.
  News leaves the plan to a ``deliver`` job per workspace following the show
  (:func:`bot.jobs.fanout.plan_per_team`); any other plan's digests go to
  :func:`bot.jobs.fanout.fan_out`. Either way a workspace's jobs run one at a time, in
  order (``TEAM_POSTS_PER_SECOND`` paced by one worker).
- ``deliver``: a workspace's digests of a show planned here (:func:`planned`), or the items
  a plan named made again (as the recovery always has: episodes by their show's decision,
  recaps and daily digests by their jobs), delivered through the ledger's protocol. A
  retried job (its worker died) has the same id, so it finds its ``posting`` rows as its
  own and looks in the channel before posting them again.
- ``daily``, ``recap``: the daily digests and the weekly recap due now, fanned out.
- ``enrich``: GitHub's PR details for one repository (``queueing_lock`` per repository),
  and the edits they call for, fanned out.
- ``recover`` (periodic, every few seconds): jobs of a worker that stopped heart-beating
  run again (procrastinate's stalled jobs), and unfinished rows nobody owns any more (a
  clock's before the upgrade, a job that failed for good) fanned out again.
- ``cleanup`` (hourly): finished jobs older than a day deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from procrastinate import App, JobContext, RetryStrategy
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException
from procrastinate.jobs import Status

from bot import logs
from bot.catalog import added_show, live, teach_repos
from bot.delivery.items import Delivery, DeliveryReport
from bot.jobs.cycle import PollResult
from bot.jobs.daily import daily_deliveries, recoverable_dailies
from bot.jobs.enrichment import enrich_shows
from bot.jobs.fanout import DELIVER, UNFINISHED, defer_deliveries, fan_out, plan_per_team
from bot.jobs.follows import recoverable_dms
from bot.jobs.pipeline import plan_show, run_once
from bot.jobs.plan import (
    active_subscriptions,
    decide_due,
    in_date_order,
    named_episodes,
    plan_state,
    render_due,
)
from bot.jobs.recap import (
    RECAP_GRACE,
    covered_week,
    last_fire_time,
    recap_deliveries,
    recoverable_recaps,
)
from config.settings import Settings
from digests.models import Episode
from digests.store import Store
from digests.store.jobs import held_alone, refresh_statistics, waiting_jobs
from digests.store.owners import PASSED, job_owner
from digests.types import Ident

if TYPE_CHECKING:
    from bot.jobs.worker import Runtime

log = logging.getLogger(__name__)

POLL, ENRICH = "poll", "enrich"
# The kinds recovery makes again (a feed notice is made again by the show's next poll).
RECOVERED_KINDS = frozenset({"episode", "recap", "daily", "notice"})
# Finished jobs are kept this long (`digestbot jobs`, procrastinate's shell), then deleted.
KEEP_HOURS = 24
# Polls deferred in one statement; a dispatch deferring this many analyses the queue.
DEFER_BATCH = 1000
ANALYZE_AFTER = 500
LOCKED = frozenset({"dispatch", "daily", "recap"})
# recover runs alone by a lock of the database session's instead (``held_alone``): a
# procrastinate lock held by a stalled recover could only be freed by a recover.
RECOVER = "digestbot:recover"


def runtime(context: JobContext) -> Runtime:
    rt: Runtime = context.additional_context["runtime"]
    return rt


def _owner(context: JobContext) -> str:
    assert context.job.id is not None
    return job_owner(context.job.id)


# -- the tasks ------------------------------------------------------------------------------


def due_polls(
    settings: Settings, store: Store, now: datetime, ahead: timedelta
) -> list[tuple[str, datetime]]:
    """Every show (the config file's and those added from Slack) whose next poll comes
    before ``now + ahead``, with its time (None stored: now)."""
    shows = [s.name for s in live(settings, store).shows]
    return _due(store, shows, now, ahead)


def _due(
    store: Store, names: Sequence[str], now: datetime, ahead: timedelta
) -> list[tuple[str, datetime]]:
    due = store.due_polls(names, now + ahead)
    return [(name, now if when is None else max(when, now)) for name, when in due.items()]


async def dispatch(context: JobContext, timestamp: int) -> int:
    """A ``poll`` job for every show due within the minute whose poll neither waits nor
    runs, a batch of shows at a time (a worker holds one batch's jobs, however many shows
    there are); the queue's statistics refreshed after a large round (migration 0031)."""
    rt = runtime(context)
    now, engine = rt.clock(), rt.store.engine
    names = await asyncio.to_thread(lambda: [s.name for s in live(rt.settings, rt.store).shows])

    def due(part: Sequence[str]) -> list[tuple[str, datetime]]:
        busy = waiting_jobs(engine, POLL, "show", part)
        return [p for p in _due(rt.store, part, now, timedelta(minutes=1)) if p[0] not in busy]

    deferred = 0
    for start in range(0, len(names), DEFER_BATCH):
        part = names[start : start + DEFER_BATCH]
        deferred += await _defer_polls(context.app, await asyncio.to_thread(due, part))
    if deferred >= ANALYZE_AFTER:
        await asyncio.to_thread(refresh_statistics, engine)
    return deferred


async def _defer_polls(app: App, polls: Sequence[tuple[str, datetime]]) -> int:
    """The polls deferred in batches; a batch one of whose shows got a waiting poll
    meanwhile (its ``queueing_lock``) deferred one by one instead."""
    task = app.tasks[POLL]
    jobs = [
        task.configure(
            queueing_lock=f"poll:{show}", lock=f"poll:{show}", schedule_at=when
        ).make_new_job(show=show)
        for show, when in polls
    ]
    manager, deferred = app.job_manager, 0
    for start in range(0, len(jobs), DEFER_BATCH):
        chunk = jobs[start : start + DEFER_BATCH]
        try:
            await manager.batch_defer_jobs_async(chunk)
            deferred += len(chunk)
        except AlreadyEnqueued:
            for job in chunk:
                with contextlib.suppress(AlreadyEnqueued):
                    await manager.defer_job_async(job)
                    deferred += 1
    return deferred


async def poll(context: JobContext, show: str) -> str:
    logs.enter(show=show)  # each job runs as a task of its own
    rt = runtime(context)
    # The config file's show, else the one added from Slack.
    config = rt.file_shows.get(show) or await asyncio.to_thread(added_show, rt.store, show)
    if config is None:
        return "removed"
    settings = rt.settings
    if show not in rt.file_shows:  # added from Slack: among the shows, as `live` has it
        settings = settings.model_copy(update={"shows": [*settings.shows, config]})

    async def handed_on(
        items: Sequence[Delivery], later: Mapping[str, tuple[str, ...]]
    ) -> DeliveryReport:
        await plan_per_team(context.app, rt, later)
        return await fan_out(context.app, rt, items, _owner(context))

    report = await run_once(
        settings, rt.store, rt.outbox, rt.http_client, rt.clock(),
        deliverer=rt.deliverer.acting_as(_owner(context)), renderer=rt.renderer,
        shows=[config], poll_gate=rt.fetch_gate, parse_gate=rt.parse_gate, only_due=True,
        fan_out=handed_on, enrich=False,
    )  # fmt: skip
    if rt.metrics is not None:
        rt.metrics.polled(report)
    ok = any(p.ok and p.status != "not_due" for p in report.polls)
    if ok and settings.github_enabled and config.repo:
        job = context.app.tasks[ENRICH].configure(queueing_lock=f"enrich:{config.repo}")
        with contextlib.suppress(AlreadyEnqueued):
            await job.defer_async(repo=config.repo)
    return report.summary()


def rebuild(rt: Runtime, team: str, kind: str, show: str | None, wanted: set[Ident]) -> list[
    Delivery
]:
    """The items of ``wanted`` as their plan makes them now (see the module docstring)."""
    settings = live(rt.settings, rt.store)
    now, renderer, store = rt.clock(), rt.renderer, rt.store
    teach_repos(renderer, settings, store)
    items: list[Delivery] = []
    if kind == "episode" and show is not None:
        channels = {channel for _, channel, _, _ in wanted}
        # The episodes named, whatever their date (a late one is not among the newest).
        news = named_episodes(store, show, (key for *_, key in wanted))
        items = team_digests(rt, settings, team, show, channels, news)
    elif kind == "recap":
        items = recoverable_recaps(settings, store, renderer, now, wanted)
    elif kind == "daily":
        items = recoverable_dailies(settings, store, rt.deliverer, renderer, now, wanted)
    elif kind == "notice":
        items = recoverable_dms(store, wanted, now)
    return in_date_order(i for i in items if i.ident in wanted)


def team_digests(
    rt: Runtime,
    settings: Settings,
    team: str,
    show: str,
    channels: set[str] | None = None,
    news: Sequence[Episode] = (),
) -> list[Delivery]:
    """The show's digests due in the workspace (in ``channels`` only, when given), planned
    over its newest episodes and ``news`` whatever their date."""
    store = rt.store
    subs = [
        s
        for s in active_subscriptions(store, show, rt.deliverer.stopped_teams, team)
        if channels is None or s.channel_id in channels
    ]
    if not subs:
        return []
    state = plan_state(settings, store, rt.deliverer.ledger, show, subs, changed=news)
    return render_due(settings, rt.renderer, decide_due(settings, state), state.news)


def planned(rt: Runtime, team: str, show: str, guids: Sequence[str]) -> list[Delivery]:
    """A workspace's digests of ``show`` as a poll's news leaves them to plan
    (:func:`bot.jobs.fanout.plan_per_team`), in the order a channel gets them."""
    settings = live(rt.settings, rt.store)
    teach_repos(rt.renderer, settings, rt.store)
    news = [e for guid in guids if (e := rt.store.episode(show, guid)) is not None]
    return in_date_order(team_digests(rt, settings, team, show, news=news))


async def deliver(
    context: JobContext,
    team: str,
    kind: str,
    keys: list[list[str]] | None = None,
    show: str | None = None,
    guids: list[str] | None = None,
) -> str:
    """``keys``: the items a plan fanned out, made again; None: the workspace's digests of
    ``show`` planned here (a poll's news: ``guids``)."""
    logs.enter(team=team, show=show)
    rt = runtime(context)
    owner = _owner(context)
    if keys is None:
        if show is None:
            raise ValueError("a deliver job that names no items must name its show")
        items = await asyncio.to_thread(planned, rt, team, show, guids or ())
        return await _deliver(rt, owner, team, kind, items, set())
    wanted = {(team, channel, kind, key) for channel, key in keys}
    items = await asyncio.to_thread(rebuild, rt, team, kind, show, wanted)
    return await _deliver(rt, owner, team, kind, items, wanted)


async def _deliver(
    rt: Runtime, owner: str, team: str, kind: str, items: list[Delivery], wanted: set[Ident]
) -> str:
    log.info("%s delivers %d %s items to team %s", owner, len(items), kind, team)
    report = await rt.deliverer.acting_as(owner).deliver(items)
    passed = wanted - {i.ident for i in items}
    if passed:  # no longer wanted (paused, unsubscribed): left until a plan offers them
        await asyncio.to_thread(_pass_over, rt, passed, owner)
    done = f"{len(report.posted)} posted, {len(report.recovered)} recovered"
    if report.deferred:  # the database or Slack failed for now: the job is tried again
        raise RuntimeError(f"{len(report.deferred)} deliveries deferred ({done})")
    return done


def _pass_over(rt: Runtime, idents: set[Ident], owner: str) -> None:
    ledger = rt.deliverer.ledger
    now = rt.clock()

    def work(conn: Any) -> None:
        rows = ledger.rows(conn, sorted(idents))
        mine = [r.ident for r in rows.values() if r.owner == owner and r.state in UNFINISHED]
        ledger.adopt(conn, mine, PASSED + owner, now)

    ledger.run(work)


async def daily(context: JobContext, timestamp: int) -> int:
    rt = runtime(context)
    items = await asyncio.to_thread(
        daily_deliveries, rt.settings, rt.store, rt.deliverer, rt.renderer, rt.clock()
    )
    await fan_out(context.app, rt, items, _owner(context))
    return len(items)


async def recap(context: JobContext, timestamp: int) -> int:
    """The weekly recap within ``RECAP_GRACE`` of its time, once a week per worker (the
    ledger, and ``fan_out`` skipping rows a live job holds, keep it once per channel)."""
    rt = runtime(context)
    now = rt.clock()
    due = last_fire_time(rt.settings, now)
    week = covered_week(rt.settings, now)
    if now - due > RECAP_GRACE or week in rt.recapped:
        return 0
    year, number = week
    items = await asyncio.to_thread(
        lambda: recap_deliveries(
            rt.settings, rt.store, rt.renderer, year=year, week=number,
            subscribed_by=due, now=now,
        )
    )  # fmt: skip
    await fan_out(context.app, rt, items, _owner(context))
    rt.recapped.add(week)
    return len(items)


async def enrich(context: JobContext, repo: str) -> int:
    rt = runtime(context)
    client = rt.github.client()
    if client is None:
        return 0
    settings = await asyncio.to_thread(live, rt.settings, rt.store)
    shows = [s.name for s in settings.shows if s.repo == repo]
    report = await enrich_shows(settings, rt.store, client, shows, rt.clock())
    if not report.changed:
        return 0
    stopped = tuple(rt.deliverer.stopped_teams)
    ledger = rt.deliverer.ledger
    items: list[Delivery] = []
    for show in shows:  # a digest whose PRs now read differently is edited in place
        unchanged = PollResult(show, "not_modified")
        plan = await asyncio.to_thread(
            plan_show, settings, rt.store, ledger, rt.renderer, unchanged, stopped
        )
        items += plan.items
    await fan_out(context.app, rt, in_date_order(items), _owner(context))
    return len(items)


async def recover(context: JobContext, timestamp: int) -> int:
    rt = runtime(context)
    with contextlib.ExitStack() as held:
        alone = await asyncio.to_thread(held.enter_context, held_alone(rt.store.engine, RECOVER))
        if not alone:
            # Another worker's recover runs (this period's came while it was slow): two
            # would list the same stalled job, and the second retry would put it back to
            # do while the first's run of it polls (a show polled twice at once).
            return 0
        return await _recover(context, rt)


async def _recover(context: JobContext, rt: Runtime) -> int:
    manager = context.app.job_manager
    stalled = await manager.get_stalled_jobs(
        seconds_since_heartbeat=rt.settings.worker_stalled_seconds
    )
    for job in stalled:
        if job.id == context.job.id:
            continue
        log.warning("job %s (%s) stalled with its worker: running it again", job.id, job.task_name)
        try:
            await manager.retry_job(job)
        except ConnectorException:
            if job.queueing_lock is None or job.id is None:
                raise
            # A poll whose next run was queued meanwhile (one waits per show): that one
            # polls; this one ends as failed.
            await manager.finish_job_by_id_async(job.id, Status.FAILED, delete_job=False)
    ledger = rt.deliverer.ledger
    rows = await asyncio.to_thread(ledger.orphans, "", lambda ident: False)
    left = [r for r in rows if r.kind in RECOVERED_KINDS and (r.kind != "episode" or r.show)]
    if left:
        log.info("recovering %d unfinished deliveries nobody owns", len(left))
        idents = [(r.ident, r.show if r.kind == "episode" else None) for r in left]
        await defer_deliveries(context.app, rt, idents, {})
    return len(left)


async def cleanup(context: JobContext, timestamp: int) -> None:
    await context.app.job_manager.delete_old_jobs(nb_hours=KEEP_HOURS)


async def kick(app: App, now: datetime) -> None:
    """At a worker's start: the periodic checks now rather than at the next minute (polls
    due while no worker ran, a daily digest or recap due meanwhile). One of each waits at
    most, however many workers start together."""
    for name in ("dispatch", "daily", "recap"):
        job = app.tasks[name].configure(queueing_lock=f"start:{name}")
        with contextlib.suppress(AlreadyEnqueued):
            await job.defer_async(timestamp=int(now.timestamp()))


def every_seconds_cron(seconds: float) -> str:
    """A cron firing about every ``seconds`` (1 to 60: procrastinate's sixth column is the
    second; a divisor of 60 fires evenly)."""
    step = max(1, min(60, round(seconds)))
    return "* * * * *" if step >= 60 else f"* * * * * */{step}"


def register(app: App, settings: Settings) -> None:
    """Every task on ``app``, the periodic ones with their schedules."""
    retry = RetryStrategy(max_attempts=8, exponential_wait=2)

    def task(fn: Any, name: str, queue: str, **options: Any) -> Any:
        return app.task(name=name, queue=queue, pass_context=True, **options)(fn)

    task(poll, POLL, "poll")
    task(deliver, DELIVER, "deliver", retry=retry)
    task(enrich, ENRICH, "enrich")
    periodic = [
        (dispatch, "dispatch", "* * * * *"),
        (daily, "daily", "* * * * *"),
        (recap, "recap", "* * * * *"),
        (recover, "recover", every_seconds_cron(settings.worker_stalled_seconds / 4)),
        (cleanup, "cleanup", "17 * * * *"),
    ]
    for fn, name, cron in periodic:
        # One dispatch, daily or recap runs at a time (its period and a worker's start may
        # coincide); not recover, which retries a stalled job holding such a lock.
        lock = name if name in LOCKED else None
        app.periodic(cron=cron, periodic_id=name)(task(fn, name, "periodic", lock=lock))
