"""Delivering exactly once: the ledger protocol around every post.

For each delivery: a ``pending`` ledger row exists (inserted if new) → the row is claimed
(``posting``, compare-and-set, committed) → ``chat.postMessage`` with metadata naming the key
→ the ``ts`` is stored → thread replies → ``posted``. A row found in ``posting`` whose owner
is dead may or may not have reached Slack, so it is resolved by looking for its metadata in
the channel's history before anything is posted again, and its thread replies in the
thread (``conversations.replies``) before any reply is. ``pending`` rows carry the deliverer
that planned them, so rows whose owner died are orphans another deliverer's sweep takes on.

An edit (the episode's content hash changed after ``posted``) claims the row the same way,
then brings the whole delivery in line: ``chat.update`` on the digest, and under it, part by
part (``thread:N``, found by their metadata in the thread), an update, a post of a part that
is missing or a delete of one no longer wanted. Every step is safe to repeat, so a failed or
crashed edit is simply run again, and ``posted`` gets the new hash only when it is done.

Channels run in parallel, each as its own sequence (paced to about one post per second);
a semaphore bounds the Slack calls in flight, so a channel waiting out its pace or a
``Retry-After`` holds no slot. Ledger writes go through one thread and are grouped into
shared transactions, so the database keeps up with the fan-out without blocking the loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal, TypeVar

from bot import messages as msg
from bot.outbox import Outbox, PostFailure, metadata_for
from digests.errors import StoreError
from digests.render import escape
from digests.store import Store
from digests.store.ledger import Ident, Ledger, LedgerRow, NewRow, OwnerLock, Transaction
from digests.types import Subscription

log = logging.getLogger(__name__)

T = TypeVar("T")
Kind = Literal["episode", "recap", "notice"]

# How far before a claim a post could carry a Slack timestamp (clock skew between us and Slack).
HISTORY_MARGIN = timedelta(minutes=10)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def paused_notice(channel_id: str, subs: Sequence[Subscription], error: str) -> dict[str, Any]:
    """The DM telling a subscriber that their channel's digests stopped, why, and the exact
    command that brings back each subscription (its show and keywords, nothing dropped)."""
    # Here, not at the top: the bot.commands package imports this module.
    from bot.commands.parse import subscribe_text

    names = ", ".join(f"*{escape.mrkdwn(sub.show)}*" for sub in subs)
    why = msg.PAUSE_REASONS.get(error) or msg.PAUSE_REASON_OTHER.format(error=escape.mrkdwn(error))
    # Inside backticks, escaped as Slack itself sends typed text: copied and run, it parses
    # back to the same show and keywords.
    commands = msg.PAUSED_DM_AND.join(
        f"`{msg.COMMAND} subscribe {escape.mrkdwn(subscribe_text(sub.show, sub.keywords))}`"
        for sub in subs
    )
    resume = msg.PAUSED_DM_RESUME.format(commands=commands)
    text = msg.PAUSED_DM.format(shows=names, channel=channel_id, why=why, resume=resume)
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


@dataclass(frozen=True)
class Delivery:
    """One message owed to one channel, identified by (team, channel, kind, key)."""

    team_id: str
    channel_id: str
    kind: Kind
    key: str
    message: Mapping[str, Any]
    thread: tuple[Mapping[str, Any], ...] = ()
    # False: thread replies are switched off, so an edit leaves any earlier ones alone
    # (an empty ``thread`` with True means "nothing to add": earlier replies go).
    manage_thread: bool = True
    content_hash: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # An episode's date: what orders one channel's new digests across shows.
    published_at: datetime | None = None

    @property
    def ident(self) -> Ident:
        return (self.team_id, self.channel_id, self.kind, self.key)


@dataclass
class DeliveryReport:
    """What one ``deliver`` call did, item by item (idents) and channel by channel."""

    posted: list[Ident] = field(default_factory=list)
    updated: list[Ident] = field(default_factory=list)
    recovered: list[Ident] = field(default_factory=list)  # found already in Slack
    unchanged: list[Ident] = field(default_factory=list)  # already posted, nothing to do
    busy: list[Ident] = field(default_factory=list)  # another live worker holds it
    failed: dict[Ident, str] = field(default_factory=dict)
    # Of ``failed``: left for a later attempt (transient failure, or cannot tell yet whether
    # it landed), as opposed to refused for good or parked with a paused channel.
    deferred: list[Ident] = field(default_factory=list)
    held: list[Ident] = field(default_factory=list)  # not attempted: channel paused/team stopped
    paused: dict[tuple[str, str], str] = field(default_factory=dict)  # (team, channel) → why
    stopped_teams: dict[str, str] = field(default_factory=dict)  # team → why
    retries: int = 0
    calls: int = 0

    @property
    def fatal(self) -> bool:
        return bool(self.stopped_teams)

    def merge(self, other: DeliveryReport) -> None:
        self.posted += other.posted
        self.updated += other.updated
        self.recovered += other.recovered
        self.unchanged += other.unchanged
        self.busy += other.busy
        self.failed.update(other.failed)
        self.deferred += other.deferred
        self.held += other.held
        self.paused.update(other.paused)
        self.stopped_teams.update(other.stopped_teams)
        self.retries += other.retries
        self.calls += other.calls


class _GroupCommit:
    """Runs ledger operations on one thread, many per transaction.

    Operations queued while a transaction is running all go into the next one, so under
    a fan-out the number of commits stays near the number of round trips, not of posts.
    """

    def __init__(self, ledger: Ledger, executor: ThreadPoolExecutor) -> None:
        self._ledger = ledger
        self._executor = executor
        self._queue: list[tuple[Callable[[Transaction], Any], asyncio.Future[Any]]] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[Transaction], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((fn, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._flush())
        result: T = await future
        return result

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            batch, self._queue = self._queue, []
            fns = [fn for fn, _ in batch]
            try:
                results = await loop.run_in_executor(self._executor, self._apply, fns)
            except Exception:
                # One bad operation must not sink its neighbours: run them one by one.
                for fn, future in batch:
                    try:
                        value = await loop.run_in_executor(self._executor, self._ledger.run, fn)
                    except Exception as exc:
                        if not future.done():
                            future.set_exception(exc)
                    else:
                        if not future.done():
                            future.set_result(value)
                continue
            for (_, future), value in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(value)

    def _apply(self, fns: list[Callable[[Transaction], Any]]) -> list[Any]:
        return self._ledger.run(lambda conn: [fn(conn) for fn in fns])


class _Stop(Exception):
    """This channel's sequence ends here (channel paused or team stopped)."""


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
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.ledger = Ledger.for_store(store)
        # Pacing is Slack's rule; an outbox that only prints has no rate to respect.
        self.per_channel_interval = per_channel_interval if getattr(outbox, "paced", True) else 0.0
        self.concurrency = max(1, concurrency)
        self.owner = owner or default_owner()
        self.clock = clock
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.max_wait = max_wait
        # Workspaces whose token Slack refused: nothing more goes there from this deliverer.
        self.stopped_teams: dict[str, str] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._db = _GroupCommit(self.ledger, self._executor)
        self._owner_lock: OwnerLock | None = None
        self._owner_task: asyncio.Future[OwnerLock] | None = None
        self._next_slot: dict[tuple[str, str], float] = {}
        # Items some task of this deliverer is on right now: our own ``posting`` row is
        # stale only when it is not among them.
        self._active: set[Ident] = set()
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle ------------------------------------------------------------------------
    async def _thread(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _ensure_owner(self) -> None:
        # Concurrent first deliveries (every poll job at start-up) must take the owner lock
        # once: a second pg_advisory_lock on the same key would wait for ever.
        if self._owner_lock is not None:
            return
        if (
            self._owner_task is None
            or self._owner_task.get_loop() is not asyncio.get_running_loop()
        ):
            self._owner_task = asyncio.ensure_future(
                self._thread(lambda: OwnerLock(self.ledger, self.owner))
            )
        lock = await asyncio.shield(self._owner_task)
        if self._owner_lock is None:
            self._owner_lock = lock

    def close(self) -> None:
        """Give up the owner identity (rows still ``posting`` become recoverable by others)."""
        if self._owner_lock is not None:
            self._owner_lock.close()
            self._owner_lock = None
        self._owner_task = None
        self._executor.shutdown(wait=True)

    async def orphans(self) -> list[LedgerRow]:
        """Unfinished rows no live deliverer is on (see :meth:`Ledger.orphans`)."""
        await self._ensure_owner()
        return await self._thread(
            lambda: self.ledger.orphans(self.owner, lambda ident: ident in self._active)
        )

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- the protocol ---------------------------------------------------------------------
    async def deliver(self, items: Sequence[Delivery]) -> DeliveryReport:
        report = DeliveryReport()
        unique: dict[Ident, Delivery] = {}
        for item in items:
            unique[item.ident] = item  # the latest rendering of an item wins
        if not unique:
            return report
        await self._ensure_owner()
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            # One bound for every deliver() running at once on this deliverer (poll + recap).
            self._sem, self._sem_loop = asyncio.Semaphore(self.concurrency), loop
        now = self.clock()
        new_rows = [
            NewRow(d.team_id, d.channel_id, d.kind, d.key, d.content_hash) for d in unique.values()
        ]
        idents = list(unique)

        def prepare(conn: Transaction) -> dict[Ident, LedgerRow]:
            self.ledger.ensure(conn, new_rows, now, self.owner)
            return self.ledger.rows(conn, idents)

        rows = await self._db.run(prepare)
        channels: dict[tuple[str, str], list[Delivery]] = {}
        for item in unique.values():
            channels.setdefault((item.team_id, item.channel_id), []).append(item)
        await asyncio.gather(
            *(self._channel(chan, seq, rows, report) for chan, seq in channels.items())
        )
        report.stopped_teams.update(self.stopped_teams)
        return report

    async def _channel(
        self,
        chan: tuple[str, str],
        sequence: list[Delivery],
        rows: Mapping[Ident, LedgerRow],
        report: DeliveryReport,
    ) -> None:
        for index, item in enumerate(sequence):
            if item.team_id in self.stopped_teams:
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
                await self._one(item, row, report)
            except _Skip:
                continue
            except _Stop:
                report.held += [d.ident for d in sequence[index + 1 :]]
                return
            except StoreError as exc:
                log.error("ledger failure for %s: %s", item.ident, exc)
                report.failed[item.ident] = str(exc)
                report.deferred.append(item.ident)
            finally:
                self._active.discard(item.ident)

    async def _one(self, item: Delivery, row: LedgerRow, report: DeliveryReport) -> None:
        if row.state == "posted":
            if item.content_hash and row.ts and row.content_hash != item.content_hash:
                await self._edit(item, row, row.ts, report)
            else:
                report.unchanged.append(item.ident)
            return
        if row.state == "failed" and (
            not item.content_hash or row.content_hash == item.content_hash
        ):
            # Slack refused exactly this message before; offering it again would loop.
            report.failed[item.ident] = row.error or "failed before"
            return
        stale = row.state == "posting"
        if stale and row.owner != self.owner:
            alive = await self._thread(lambda: self.ledger.owner_alive(row.owner))
            if alive:
                report.busy.append(item.ident)
                return
        now = self.clock()
        claimed = await self._db.run(lambda c: self.ledger.claim(c, row, self.owner, now))
        if not claimed:
            report.busy.append(item.ident)
            return
        ts = row.ts if stale else None
        if stale and ts is None:
            found = await self._find(item, row, report)
            ts = found.get("digest")
        if ts is not None:
            await self._mark(row, ts=ts)
            recovered = True
            if item.content_hash and row.content_hash and row.content_hash != item.content_hash:
                # An edit that died midway, or an episode that changed since the lost post:
                # what is in Slack may be any mix of versions, so bring all of it in line.
                await self._resync(item, row, ts, report)
                report.recovered.append(item.ident)
                return
        else:
            ts = await self._post(item, row, report, part="digest", thread_ts=None)
            recovered = False
            if item.thread:
                # Known before any reply goes out: a crash among the replies then resumes
                # from this ts instead of searching the channel's history for it.
                await self._mark(row, ts=ts)
        # Replies can only exist already if the digest did before this attempt.
        thread_ts, note = await self._thread_replies(item, row, ts, recovered, report)
        await self._mark(
            row,
            state="posted",
            ts=ts,
            thread_ts=thread_ts,
            content_hash=item.content_hash or None,
            error=note,
        )
        (report.recovered if recovered else report.posted).append(item.ident)

    async def _thread_replies(
        self, item: Delivery, row: LedgerRow, ts: str, look: bool, report: DeliveryReport
    ) -> tuple[str | None, str | None]:
        """Post the replies not yet under ``ts``: (last reply's ts, what went wrong if any)."""
        if not item.thread:
            return None, None
        done: dict[str, str] = {}
        if look:
            done = await self._read_thread(item, row, ts, report)
        last: str | None = None
        for number, reply in enumerate(item.thread):
            part = f"thread:{number}"
            if part in done:
                last = done[part]
                continue
            try:
                last = await self._post_once(item, reply, part, ts, report)
            except PostFailure as exc:
                if exc.category in ("channel", "auth"):
                    await self._mark(row, state="posted", ts=ts, error=f"thread: {exc.error}")
                    await self._halt(item, exc, report)
                # The digest itself is in the channel: a missing reply is logged, not retried.
                log.warning("thread reply %s for %s failed: %s", number, item.ident, exc)
                return last, f"thread reply {number}: {exc.error}"
        return last, None

    async def _read_thread(
        self, item: Delivery, row: LedgerRow, ts: str, report: DeliveryReport
    ) -> dict[str, str]:
        """Our parts already under ``ts`` (part → ts); the row is given up if unreadable."""
        try:
            return await self._call(
                item,
                report,
                lambda: self.outbox.find(item.channel_id, item.key, oldest=None, thread_ts=ts),
            )
        except PostFailure as exc:
            if exc.category in ("channel", "auth"):
                await self._mark(row, state="posted", ts=ts, error=f"thread: {exc.error}")
                await self._halt(item, exc, report)
            # Posting the replies blind could double them: keep the digest's ts, give
            # the row up (still ``posting``) and let a later run read the thread.
            log.warning("cannot read thread %s in %s: %s", ts, item.channel_id, exc)
            await self._mark(row, ts=ts, owner=None, error=f"thread: {exc.error}")
            report.failed[item.ident] = f"cannot check thread: {exc.error}"
            report.deferred.append(item.ident)
            raise _Skip from exc

    async def _edit(self, item: Delivery, row: LedgerRow, ts: str, report: DeliveryReport) -> None:
        """The episode changed after its digest went out: the digest and its thread follow.

        The row is claimed like a first post, so two workers never both add a missing reply;
        one that dies midway leaves it ``posting`` with its ts and the old hash, and whoever
        recovers it runs the same edit again (every step is safe to repeat).
        """
        now = self.clock()
        claimed = await self._db.run(lambda c: self.ledger.claim(c, row, self.owner, now))
        if not claimed:
            report.busy.append(item.ident)
            return
        await self._resync(item, row, ts, report)
        report.updated.append(item.ident)

    async def _resync(
        self, item: Delivery, row: LedgerRow, ts: str, report: DeliveryReport
    ) -> None:
        """Make the claimed row's digest and thread show ``item``: update the digest, then
        each reply to match ``item.thread`` part by part (update, post or delete), then mark
        the row ``posted`` with the new hash. A failure leaves the old hash, so the next
        poll edits again, unless Slack refused this version for good."""
        channel = item.channel_id
        digest_meta = metadata_for(item.key, item.kind, "digest", item.metadata)
        try:
            await self._call(
                item,
                report,
                lambda: self.outbox.update(channel, ts, item.message, metadata=digest_meta),
            )
        except PostFailure as exc:
            await self._edit_failed(item, row, ts, exc, "update", report)
        if not item.manage_thread:
            await self._mark(
                row,
                state="posted",
                ts=ts,
                thread_ts=row.thread_ts,
                content_hash=item.content_hash or None,
                error=None,
            )
            return
        # Nothing to post and no reply on record (a failed edit records its parent's ts):
        # the thread is empty, no need to read it.
        empty = not item.thread and row.state == "posted" and row.thread_ts is None
        done = {} if empty else await self._read_thread(item, row, ts, report)
        last: str | None = None
        number = -1
        try:
            for number, reply in enumerate(item.thread):
                part = f"thread:{number}"
                if part in done:
                    meta = metadata_for(item.key, item.kind, part, item.metadata)
                    last = done[part]
                    await self._call(
                        item,
                        report,
                        partial(self.outbox.update, channel, last, reply, metadata=meta),
                    )
                else:
                    last = await self._post_once(item, reply, part, ts, report)
            for part, reply_ts in sorted(done.items()):
                index = part.removeprefix("thread:")
                if index.isdigit() and int(index) >= len(item.thread):
                    number = int(index)
                    await self._call(item, report, partial(self.outbox.delete, channel, reply_ts))
        except PostFailure as exc:
            # A reply may have landed (or still be there): make sure the next try reads.
            await self._edit_failed(
                item, row, ts, exc, f"thread reply {number}", report, thread_ts=last or ts
            )
        await self._mark(
            row,
            state="posted",
            ts=ts,
            thread_ts=last,
            content_hash=item.content_hash or None,
            error=None,
        )

    async def _edit_failed(
        self,
        item: Delivery,
        row: LedgerRow,
        ts: str,
        exc: PostFailure,
        what: str,
        report: DeliveryReport,
        **values: object,
    ) -> None:
        note = f"{what}: {exc.error}"
        if exc.category in ("channel", "auth"):
            await self._mark(row, state="posted", ts=ts, error=note, **values)
            await self._halt(item, exc, report)
        if exc.category == "fatal":
            # The message is gone (deleted) or the edit is refused: stop trying this
            # version rather than calling Slack again on every poll.
            new_hash = item.content_hash or None
            await self._mark(
                row, state="posted", ts=ts, content_hash=new_hash, error=note, **values
            )
            log.error("Slack refused the edit of %s: %s", item.ident, note)
        else:
            # Still the old hash: the next poll offers the edit again, and every step of it
            # is safe to repeat (a reply that may have landed is looked for first).
            await self._mark(row, state="posted", ts=ts, error=note, **values)
            report.deferred.append(item.ident)
        report.failed[item.ident] = note
        raise _Skip from exc

    async def _post(
        self,
        item: Delivery,
        row: LedgerRow,
        report: DeliveryReport,
        *,
        part: str,
        thread_ts: str | None,
    ) -> str:
        try:
            return await self._post_once(item, item.message, part, thread_ts, report)
        except PostFailure as exc:
            if exc.category in ("channel", "auth"):
                await self._halt(item, exc, report, row=row, uncertain=exc.maybe_posted)
            if exc.category == "fatal":
                await self._mark(
                    row, state="failed", error=exc.error, content_hash=item.content_hash
                )
                log.error("Slack refused %s: %s", item.ident, exc.error)
            elif exc.maybe_posted:
                # An attempt timed out and may have landed: leave it ``posting`` with no
                # owner, so the next run looks in the channel before posting again.
                await self._mark(row, owner=None, error=exc.error)
                report.deferred.append(item.ident)
            else:
                await self._mark(row, state="pending", error=exc.error)
                report.deferred.append(item.ident)
            report.failed[item.ident] = exc.error
            raise _Skip from exc

    async def _post_once(
        self,
        item: Delivery,
        message: Mapping[str, Any],
        part: str,
        thread_ts: str | None,
        report: DeliveryReport,
    ) -> str:
        """One post, retried as its failures allow; a timeout is checked before re-posting."""
        meta = metadata_for(item.key, item.kind, part, item.metadata)
        attempt = 0
        joined = False
        timed_out = False
        claimed_at = self.clock()
        while True:
            attempt += 1
            try:
                return await self._paced(
                    item,
                    lambda: self.outbox.post(
                        item.channel_id, message, metadata=meta, thread_ts=thread_ts
                    ),
                    report,
                )
            except PostFailure as exc:
                timed_out = timed_out or exc.category == "timeout"
                exc.maybe_posted = timed_out
                if exc.error == "not_in_channel" and not joined:
                    # A public channel the bot was never added to: join it once and go on.
                    joined = True
                    if await self.outbox.join(item.channel_id):
                        continue
                if exc.category not in ("ratelimited", "server", "timeout"):
                    raise
                if attempt >= self.max_attempts:
                    raise
                report.retries += 1
                await asyncio.sleep(self._wait(exc, attempt))
                if exc.category == "timeout":
                    try:
                        found = await self._paced(
                            item,
                            lambda: self.outbox.find(
                                item.channel_id,
                                item.key,
                                oldest=None if thread_ts else claimed_at - HISTORY_MARGIN,
                                thread_ts=thread_ts,
                            ),
                            report,
                        )
                    except PostFailure as look:
                        # Cannot tell whether it landed: the caller leaves it for recovery.
                        raise exc from look
                    if part in found:
                        return found[part]

    async def _call(
        self, item: Delivery, report: DeliveryReport, fn: Callable[[], Awaitable[T]]
    ) -> T:
        """A call that is safe to repeat (update, history): retried on any transient failure."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._paced(item, fn, report)
            except PostFailure as exc:
                if exc.category not in ("ratelimited", "server", "timeout"):
                    raise
                if attempt >= self.max_attempts:
                    raise
                report.retries += 1
                await asyncio.sleep(self._wait(exc, attempt))

    def _wait(self, exc: PostFailure, attempt: int) -> float:
        if exc.category == "ratelimited" and exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), self.max_wait)
        return min(self.backoff * 2 ** (attempt - 1), self.max_wait)

    async def _paced(
        self, item: Delivery, fn: Callable[[], Awaitable[T]], report: DeliveryReport
    ) -> T:
        chan = (item.team_id, item.channel_id)
        wait = self._next_slot.get(chan, 0.0) - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        assert self._sem is not None
        async with self._sem:
            try:
                report.calls += 1
                return await fn()
            finally:
                self._next_slot[chan] = time.monotonic() + self.per_channel_interval

    async def _find(self, item: Delivery, row: LedgerRow, report: DeliveryReport) -> dict[str, str]:
        oldest = (row.claimed_at or row.updated_at) - HISTORY_MARGIN
        try:
            return await self._call(
                item,
                report,
                lambda: self.outbox.find(item.channel_id, item.key, oldest=oldest),
            )
        except PostFailure as exc:
            if exc.category in ("channel", "auth"):
                await self._halt(item, exc, report, row=row, uncertain=True)
            # Without the history we cannot know: leave it for a later run rather than guess.
            await self._mark(row, owner=None, error=f"history: {exc.error}")
            report.failed[item.ident] = f"cannot check history: {exc.error}"
            report.deferred.append(item.ident)
            raise _Skip from exc

    async def _halt(
        self,
        item: Delivery,
        exc: PostFailure,
        report: DeliveryReport,
        *,
        row: LedgerRow | None = None,
        uncertain: bool = False,
    ) -> None:
        """A channel or workspace error: park the row and end this channel's sequence.

        ``row`` is given when the digest is certainly not in the channel (``paused`` or
        ``pending`` then), or may be (``uncertain``: left ``posting`` with no owner, so it
        is looked for before any re-post).
        """
        if row is not None and uncertain:
            await self._mark(row, owner=None, error=exc.error)
        elif row is not None:
            state = "paused" if exc.category == "channel" else "pending"
            await self._mark(row, state=state, error=exc.error)
        report.failed[item.ident] = exc.error
        if exc.category == "auth":
            self.stopped_teams.setdefault(item.team_id, exc.error)
            report.stopped_teams.setdefault(item.team_id, exc.error)
            log.error("Slack refused the token for team %s (%s): stopping", item.team_id, exc.error)
        else:
            report.paused[(item.team_id, item.channel_id)] = exc.error
            now = self.clock()
            paused = await self._thread(
                lambda: self.store.pause_subscriptions(
                    item.team_id, item.channel_id, exc.error, now
                )
            )
            log.warning("pausing channel %s: %s", item.channel_id, exc.error)
            await self._tell_owners(item.team_id, item.channel_id, exc.error, paused)
        raise _Stop

    async def _tell_owners(
        self, team_id: str, channel_id: str, error: str, paused: Sequence[Subscription]
    ) -> None:
        """DM whoever subscribed the channel by slash command that it is paused.

        ``paused`` are the subscriptions this very call paused (the store hands them to one
        caller only), and each DM goes through the ledger under a key naming the pause, so
        a user hears of one pause once. The config file's subscriptions have nobody to
        tell: the log says it.
        """
        by_user: dict[str, list[Subscription]] = {}
        for sub in paused:
            if sub.created_by:
                by_user.setdefault(sub.created_by, []).append(sub)
            else:
                log.warning(
                    "%s in %s paused (%s); set in the config file, nobody to tell",
                    sub.show,
                    channel_id,
                    error,
                )
        dms: list[Delivery] = []
        for user, subs in sorted(by_user.items()):
            when = subs[0].paused_at.isoformat() if subs[0].paused_at else ""
            message = paused_notice(channel_id, subs, error)
            dms.append(Delivery(team_id, user, "notice", f"paused:{channel_id}:{when}", message))
        if not dms:
            return
        # Posting to a user id opens the bot's DM with them.
        told = await self.deliver(dms)
        for ident, why in told.failed.items():
            log.warning("could not tell %s that %s is paused: %s", ident[1], channel_id, why)

    async def _mark(self, row: LedgerRow, *, state: str | None = None, **values: object) -> None:
        now = self.clock()
        ok = await self._db.run(
            lambda c: self.ledger.mark(c, row.id, self.owner, now, state=state, **values)
        )
        if not ok:
            log.warning("ledger row %s was taken over by another worker", row.id)


class _Skip(_Stop):
    """This item failed; the channel's sequence goes on."""
