"""The deliverer: every item of a batch through the exactly-once protocol, channel by channel.

Channels run in parallel, each as its own sequence, over a :class:`PacedOutbox` (retries,
about one post per second per channel, a bound on calls in flight). For each item the
ledger row is made if new, :func:`digests.decide.deliveries.ledger_step` says what its row calls
for,
and :class:`ExactlyOnce` does it. A failure of the channel (archived, deleted) pauses it
(:class:`Pauser`); one of the token stops the workspace; either way the rest of that
channel's sequence is held. ``pending`` rows carry the deliverer that planned them, so rows
whose owner died are orphans a later sweep takes on (:meth:`Deliverer.orphans`); a worker's
jobs deliver as owners of their own (:meth:`Deliverer.acting_as`).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot import logs
from bot.delivery.items import Delivery, DeliveryReport
from bot.delivery.outbox import Outbox, PostFailure
from bot.delivery.paced import Meter, PacedOutbox, Policy
from bot.delivery.pausing import Pauser
from bot.delivery.protocol import Done, ExactlyOnce, Outcome
from bot.delivery.tokens import CURRENT_TEAM, NOT_INSTALLED
from digests.decide.deliveries import ledger_step
from digests.errors import StoreError
from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow, NewRow, Transaction
from digests.store.ledger_writer import LedgerWriter
from digests.types import Ident, LedgerEntry, LedgerState, RowStep

if TYPE_CHECKING:
    from bot.ops.metrics import Metrics
    from config.settings import Settings

log = logging.getLogger(__name__)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Deliverer:
    """Delivers :class:`Delivery` items exactly once; see the module docstring."""

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        *,
        per_channel_interval: float = 1.0,
        concurrency: int = 20,
        owner: str | None = None,
        clock: Callable[[], datetime] = _utcnow,
        max_attempts: int = 5,
        backoff: float = 0.5,
        max_wait: float = 120.0,
        metrics: Metrics | None = None,
        team_rate: float = 0.0,
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.metrics = metrics
        if metrics is not None:
            from bot.delivery.metered import MeteredOutbox

            outbox = MeteredOutbox(outbox, metrics)
        self.ledger = Ledger.for_store(store)
        self.owner = owner or default_owner()
        self.clock = clock
        self.max_attempts = max(1, max_attempts)
        policy = Policy(
            interval=per_channel_interval,
            concurrency=max(1, concurrency),
            max_attempts=self.max_attempts,
            backoff=backoff,
            max_wait=max_wait,
            team_rate=team_rate,
        )
        self.paced_outbox = PacedOutbox(outbox, policy, clock=clock)
        # Workspaces whose token Slack refused: nothing more goes there from this deliverer.
        self.stopped_teams: dict[str, str] = {}
        self._db = LedgerWriter(self.ledger)
        self._protocol = ExactlyOnce(self._db, self.owner, clock)
        self._pauser = Pauser(store, self._db, self.deliver, clock)
        self._announced = False
        # Items some task of this deliverer is on right now: our own ``posting`` row is
        # stale only when it is not among them.
        self._active: set[Ident] = set()
        # Deliveries held back since the database stopped answering (None: it answers).
        self._outage_held: int | None = None

    @classmethod
    def of(
        cls, settings: Settings, store: Store, outbox: Outbox, metrics: Metrics | None = None
    ) -> Deliverer:
        """The deliverer the bot's processes use: Slack's pace, retry wait, calls in flight
        (``DELIVERY_CONCURRENCY``) and posts per second to a workspace from settings."""
        return cls(
            store,
            outbox,
            per_channel_interval=settings.slack_post_interval,
            backoff=settings.slack_retry_seconds,
            metrics=metrics,
            concurrency=settings.delivery_concurrency,
            team_rate=settings.team_posts_per_second,
        )

    def acting_as(self, owner: str) -> Deliverer:
        """This deliverer (its pace, bound, writer and stopped teams) delivering as
        ``owner``: a worker's job (``job:<id>``), whose rows its retry finds as its own."""
        view = copy.copy(self)
        view.owner = owner
        view._protocol = ExactlyOnce(self._db, owner, self.clock)
        view._announced = True  # a job's liveness is the queue's, not this process's
        return view

    # -- lifecycle ------------------------------------------------------------------------
    async def _ensure_owner(self) -> None:
        # Alive to this process's ledgers from the first delivery on (``Ledger.alive``).
        if not self._announced:
            self.ledger.live.add(self.owner)
            self._announced = True

    def close(self) -> None:
        """Give up the owner identity (rows still ``posting`` become recoverable by others)."""
        self.ledger.live.discard(self.owner)
        self._announced = False
        self._db.close()

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    async def orphans(self) -> list[LedgerRow]:
        """Unfinished rows no live deliverer is on (see :meth:`Ledger.orphans`)."""
        await self._ensure_owner()
        return await self._db.call(
            lambda: self.ledger.orphans(self.owner, lambda ident: ident in self._active)
        )

    # -- delivering -----------------------------------------------------------------------
    async def deliver(self, items: Sequence[Delivery]) -> DeliveryReport:
        report = DeliveryReport()
        unique: dict[Ident, Delivery] = {}
        for item in items:
            unique[item.ident] = item  # the latest rendering of an item wins
        if not unique:
            return report
        await self._ensure_owner()
        started = time.perf_counter()
        now = self.clock()
        new_rows = [
            NewRow(d.team_id, d.channel_id, d.kind, d.key, d.content_hash, d.metadata.get("show"))
            for d in unique.values()
        ]
        idents = list(unique)

        def prepare(conn: Transaction) -> dict[Ident, LedgerRow]:
            # The write first: on SQLite a transaction that read first cannot wait for the
            # write lock (it fails at once as "database is locked").
            self.ledger.ensure(conn, new_rows, now, self.owner)
            return self.ledger.rows(conn, idents)

        rows = await self._db.run(prepare)
        channels: dict[tuple[str, str], list[Delivery]] = {}
        for item in unique.values():
            channels.setdefault((item.team_id, item.channel_id), []).append(item)
        meter = Meter()
        # One pace and one bound for every deliver() running at once (poll + recap + DMs).
        outbox = self.paced_outbox.metered(meter)
        await asyncio.gather(
            *(self._channel(outbox, seq, rows, report) for seq in channels.values())
        )
        report.calls += meter.calls
        report.retries += meter.retries
        report.stopped_teams.update(self.stopped_teams)
        if self.metrics is not None:
            self.metrics.delivered(report, time.perf_counter() - started)
            self.metrics.retry_after_waited.inc(meter.waited)
        self._note_outage(report)
        return report

    def _note_outage(self, report: DeliveryReport) -> None:
        """One line when the database fails under a fan-out (however many channels it
        holds back, and however many fan-outs it fails), one when it answers again."""
        if report.outage:
            first = report.failed.get(report.outage[0], "")
            if self._outage_held is None:
                self._outage_held = 0
                log.error(
                    "the database failed mid-delivery (%s): %d deliveries held back for the "
                    "next poll or sweep", first, len(report.outage),
                )  # fmt: skip
            self._outage_held += len(report.outage)
        elif self._outage_held is not None:
            log.info(
                "the database answers again; %d deliveries were held back meanwhile",
                self._outage_held,
            )
            self._outage_held = None

    async def _channel(
        self,
        outbox: Outbox,
        sequence: list[Delivery],
        rows: Mapping[Ident, LedgerRow],
        report: DeliveryReport,
    ) -> None:
        # Every call of this channel's task goes out with its team's token (OAuth mode).
        CURRENT_TEAM.set(sequence[0].team_id)
        logs.enter(team=sequence[0].team_id, channel=sequence[0].channel_id)
        for index, item in enumerate(sequence):
            if item.team_id in self.stopped_teams or item.team_id in report.stopped_teams:
                report.held += [d.ident for d in sequence[index:]]
                return
            row = rows.get(item.ident)
            if row is None:  # pragma: no cover - ensure() just inserted it
                report.failed[item.ident] = "ledger row missing"
                continue
            if item.ident in self._active:  # another deliver() of ours is on it right now
                report.busy.append(item.ident)
                continue
            self._active.add(item.ident)
            try:
                done = await self._one(outbox, item, row)
                if done.halt is not None:
                    await self._halt(item, done.halt, report)
            except StoreError as exc:  # logged once per outage (_note_outage)
                done = Done(Outcome.FAILED, str(exc), deferred=True)
                report.outage.append(item.ident)
            finally:
                self._active.discard(item.ident)
            _record(report, item.ident, done)
            if done.halt is not None:
                report.held += [d.ident for d in sequence[index + 1 :]]
                return

    async def _one(self, outbox: Outbox, item: Delivery, row: LedgerRow) -> Done:
        """What the row calls for (the decider's rule), done by the protocol."""
        live = False
        if row.state == LedgerState.POSTING and row.owner != self.owner:
            live = await self._db.call(lambda: self.ledger.owner_alive(row.owner))
        step = ledger_step(
            LedgerEntry(row.state, row.content_hash or ""),
            item.content_hash,
            has_ts=row.ts is not None,
            held_by_live_owner=live,
        )
        if step is RowStep.NOTHING:
            return Done(Outcome.UNCHANGED)
        if step is RowStep.REFUSED:
            # Slack refused exactly this message before; offering it again would loop.
            return Done(Outcome.FAILED, row.error or "failed before")
        if step is RowStep.BUSY:
            return Done(Outcome.BUSY)
        if step is RowStep.EDIT:
            assert row.ts is not None
            return await self._protocol.edit(outbox, item, row, row.ts)
        return await self._protocol.post(outbox, item, row, stale=step is RowStep.RECOVER)

    async def _halt(self, item: Delivery, exc: PostFailure, report: DeliveryReport) -> None:
        """A channel or workspace error: stop the workspace, or pause the channel."""
        if exc.category == "auth":
            # A team with no installation (its subscriptions paused) may install again, and
            # with a token per team (OAuth mode) a refused one may be replaced: the team is
            # held for this batch, and the next asks its outbox afresh (which refuses from
            # memory while the token is the same) instead of holding it until a restart.
            per_team = getattr(self.outbox, "tokens_per_team", False)
            if exc.error != NOT_INSTALLED and not per_team:
                self.stopped_teams.setdefault(item.team_id, exc.error)
            report.stopped_teams.setdefault(item.team_id, exc.error)
            log.error("Slack refused the token for team %s (%s): stopping", item.team_id, exc.error)
            return
        report.paused[(item.team_id, item.channel_id)] = exc.error
        await self._pauser.pause(item.team_id, item.channel_id, exc.error)


def _record(report: DeliveryReport, ident: Ident, done: Done) -> None:
    lists = {
        Outcome.POSTED: report.posted,
        Outcome.UPDATED: report.updated,
        Outcome.RECOVERED: report.recovered,
        Outcome.UNCHANGED: report.unchanged,
        Outcome.BUSY: report.busy,
    }
    if done.outcome in lists:
        lists[done.outcome].append(ident)
        return
    report.failed[ident] = done.error or "failed"
    if done.deferred:
        report.deferred.append(ident)
