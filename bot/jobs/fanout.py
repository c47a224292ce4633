"""Fanning out: ``deliver`` jobs (:mod:`bot.jobs.tasks`) instead of delivering in place,
so that any worker delivers.

A poll that brought news (``ShowPlan.later``) leaves its plan to the jobs:
:func:`plan_per_team` defers one job per workspace following the show, which plans and
renders that workspace's digests itself and records their rows as it delivers them, so the
workspaces start as soon as the feed is stored, each planned by whichever worker takes it.
Every other plan (recovery, edits, daily digests, recaps) hands its items over with
:func:`fan_out`.

Per workspace and at most ``BATCH`` channels a job, a channel's items all in one job; every
job of one workspace shares the lock ``team:<id>``, so they run one at a time in the order
they were deferred (a channel's digests keep their order, and one worker at a time paces
the workspace). Their ledger rows are recorded ``pending`` before the jobs exist (no job
waits on their insert), then handed to their job (``job:<id>``): a plan run again defers
nothing twice, and a retried job finds its rows as its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from procrastinate import App

from bot.delivery.items import Delivery, DeliveryReport
from digests.store.ledger import LedgerRow, NewRow
from digests.store.ledger_batch import hand_over
from digests.store.owners import job_owner
from digests.types import Ident, LedgerState

if TYPE_CHECKING:
    from bot.jobs.worker import Runtime

log = logging.getLogger(__name__)

DELIVER = "deliver"
# Channels one deliver job holds at most: a retried job redoes at most this many.
BATCH = 200
UNFINISHED = (LedgerState.PENDING, LedgerState.POSTING)

Batch = tuple[str, str, str | None]  # team, kind, show


def _batches(idents: Iterable[tuple[Ident, str | None]]) -> list[tuple[Batch, list[Ident]]]:
    """Idents grouped per (team, kind, show), a channel's all in one batch, in their order;
    at most ``BATCH`` channels a batch."""
    groups: dict[Batch, dict[str, list[Ident]]] = {}
    for ident, show in idents:
        team, channel, kind, _ = ident
        groups.setdefault((team, kind, show), {}).setdefault(channel, []).append(ident)
    out: list[tuple[Batch, list[Ident]]] = []
    for batch, channels in groups.items():
        chans = list(channels.values())
        for start in range(0, len(chans), BATCH):
            out.append((batch, [i for chan in chans[start : start + BATCH] for i in chan]))
    return out


async def defer_deliveries(
    app: App,
    rt: Runtime,
    idents: Sequence[tuple[Ident, str | None]],
    new: dict[Ident, NewRow],
    holder: str | None = None,
) -> int:
    """A ``deliver`` job per batch, all deferred in one statement. The new rows are
    recorded first, ``pending`` under ``holder`` (the job fanning out), so no job waits on
    their insert; then every unfinished row is handed to its job, in one statement. Returns
    the jobs deferred."""
    batches = _batches(idents)
    if not batches:
        return 0
    ledger, now = rt.deliverer.ledger, rt.clock()
    if new:
        fresh = list(new.values())
        await asyncio.to_thread(ledger.run, lambda c: ledger.ensure(c, fresh, now, holder))
    task = app.tasks[DELIVER]
    jobs = [
        task.configure(lock=f"team:{team}").make_new_job(
            team=team, kind=kind, show=show, keys=[[channel, key] for _, channel, _, key in batch]
        )
        for (team, kind, show), batch in batches
    ]
    deferred = await app.job_manager.batch_defer_jobs_async(jobs)

    owners = [
        (ident, job_owner(job.id))
        for job, (_, batch) in zip(deferred, batches, strict=True)
        if job.id is not None
        for ident in batch
    ]
    await asyncio.to_thread(ledger.run, lambda conn: hand_over(ledger, conn, owners, now))
    return len(jobs)


async def fan_out(
    app: App, rt: Runtime, items: Sequence[Delivery], holder: str | None = None
) -> DeliveryReport:
    """``items`` as ``deliver`` jobs (see the module docstring), fanned out by the job
    ``holder``. An item whose row a live job holds already is left to it: a plan run
    again (the next poll, the daily check every minute) defers nothing twice."""
    if not items:
        return DeliveryReport()
    ledger = rt.deliverer.ledger
    unique = {i.ident: i for i in items}
    idents = list(unique)

    def read() -> tuple[dict[Ident, LedgerRow], set[str]]:
        rows = ledger.run(lambda conn: ledger.rows(conn, idents))
        owners = {r.owner for r in rows.values() if r.state in UNFINISHED}
        return rows, ledger.alive(owners)

    rows, alive = await asyncio.to_thread(read)
    wanted = [
        (ident, item.metadata.get("show"))
        for ident, item in unique.items()
        if not ((r := rows.get(ident)) and r.state in UNFINISHED and r.owner in alive)
    ]
    new = {
        ident: NewRow(*ident, unique[ident].content_hash, show)
        for ident, show in wanted
        if ident not in rows
    }
    jobs = await defer_deliveries(app, rt, wanted, new, holder)
    if jobs:
        log.info("%d deliveries in %d jobs", len(wanted), jobs)
    return DeliveryReport()


async def plan_per_team(app: App, rt: Runtime, later: Mapping[str, Sequence[str]]) -> int:
    """A ``deliver`` job per workspace following each show of ``later`` (but those Slack
    stopped here), planning that workspace's digests of the show over its newest episodes
    and ``later[show]`` (the poll's news), all deferred in one statement. Returns the jobs
    deferred."""
    if not later:
        return 0
    stopped = rt.deliverer.stopped_teams
    follows = await asyncio.to_thread(
        lambda: {show: rt.store.subscribed_teams(show) for show in later}
    )
    task = app.tasks[DELIVER]
    jobs = [
        task.configure(lock=f"team:{team}").make_new_job(
            team=team, kind="episode", show=show, guids=list(later[show])
        )
        for show, teams in follows.items()
        for team in teams
        if team not in stopped
    ]
    if jobs:
        await app.job_manager.batch_defer_jobs_async(jobs)
        log.info("%d workspaces to plan their digests, a job each", len(jobs))
    return len(jobs)
