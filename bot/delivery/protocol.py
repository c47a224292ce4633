"""Exactly once: the ledger protocol around every post, step by step, each step an outcome.

A first post: the row is claimed (``posting``, compare-and-set, committed) →
``chat.postMessage`` with metadata naming the key → the ``ts`` is stored → thread replies →
``posted``. A row found in ``posting`` whose owner is dead may or may not have reached Slack,
so it is resolved by looking for its metadata in the channel's history before anything is
posted again, and its thread replies in the thread before any reply is.

An edit (the content hash changed after ``posted``) claims the row the same way, then
brings the whole delivery in line: ``chat.update`` on the digest, and under it, part by
part (``thread:N``, found by their metadata in the thread), an update, a post of a part that
is missing or a delete of one no longer wanted. Every step is safe to repeat, so a failed or
crashed edit is simply run again, and ``posted`` gets the new hash only when it is done.

Every step hands back a :class:`Done` (or the value the next step needs); a Slack failure
becomes the row's next state and an outcome, never an exception that unwinds the caller.
What to do with a row *before* these steps is not decided here: see
:func:`digests.decide.deliveries.ledger_step`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bot.delivery.items import Delivery
from bot.delivery.outbox import HISTORY_MARGIN, Outbox, PostFailure, metadata_for
from digests.store.ledger import Ledger, LedgerRow
from digests.store.ledger_batch import Finish
from digests.store.ledger_writer import LedgerWriter
from digests.types import LedgerState

log = logging.getLogger(__name__)

# Failures about the channel or the workspace, not the message: the channel's sequence ends.
HALTING = frozenset({"channel", "auth"})


class Outcome(StrEnum):
    POSTED = "posted"
    UPDATED = "updated"
    RECOVERED = "recovered"  # found already in Slack
    UNCHANGED = "unchanged"
    BUSY = "busy"
    FAILED = "failed"


@dataclass(frozen=True)
class Done:
    """How one delivery ended.

    ``deferred`` (of failures): left for a later attempt. ``halt``: the failure was the
    channel's or the workspace's (paused, or token refused), and the rest of the channel's
    sequence is not attempted.
    """

    outcome: Outcome
    error: str | None = None
    deferred: bool = False
    halt: PostFailure | None = None


def _halted(exc: PostFailure) -> Done:
    return Done(Outcome.FAILED, exc.error, halt=exc)


def _failed(error: str, *, deferred: bool) -> Done:
    return Done(Outcome.FAILED, error, deferred=deferred)


class ExactlyOnce:
    """The protocol for one deliverer (``owner``), its ledger writes grouped by ``writer``."""

    def __init__(self, writer: LedgerWriter, owner: str, clock: Callable[[], datetime]) -> None:
        self.writer = writer
        self.ledger: Ledger = writer.ledger
        self.owner = owner
        self.clock = clock

    # -- first posts and recovery -------------------------------------------------------
    async def post(self, outbox: Outbox, item: Delivery, row: LedgerRow, *, stale: bool) -> Done:
        """Claim the row and post ``item``; ``stale``: a claim before ours never finished,
        so whatever it may have posted is looked for first."""
        if not await self._claim(row):
            return Done(Outcome.BUSY)
        ts = row.ts if stale else None
        if stale and ts is None:
            found = await self._find(outbox, item, row)
            if isinstance(found, Done):
                return found
            ts = found.get("digest")
        if ts is not None:
            await self._mark(row, ts=ts)
            recovered = True
            if item.content_hash and row.content_hash and row.content_hash != item.content_hash:
                # An edit that died midway, or an episode that changed since the lost post:
                # what is in Slack may be any mix of versions, so bring all of it in line.
                done = await self._resync(outbox, item, row, ts)
                return Done(Outcome.RECOVERED) if done.outcome is Outcome.UPDATED else done
        else:
            posted = await self._post_digest(outbox, item, row)
            if isinstance(posted, Done):
                return posted
            ts, recovered = posted, False
            if item.thread:
                # Known before any reply goes out: a crash among the replies then resumes
                # from this ts instead of searching the channel's history for it.
                await self._mark(row, ts=ts)
        # Replies can only exist already if the digest did before this attempt.
        replies = await self._thread_replies(outbox, item, row, ts, look=recovered)
        if isinstance(replies, Done):
            return replies
        thread_ts, note = replies
        finished = Finish(
            row.id, self.owner, self.clock(), ts, thread_ts, item.content_hash or None, note
        )
        if not await self.writer.finish(finished):
            log.warning("ledger row %s was taken over by another worker", row.id)
        return Done(Outcome.RECOVERED if recovered else Outcome.POSTED)

    async def _post_digest(self, outbox: Outbox, item: Delivery, row: LedgerRow) -> str | Done:
        meta = metadata_for(item.key, item.kind, "digest", item.metadata)
        try:
            return await outbox.post(item.channel_id, item.message, metadata=meta)
        except PostFailure as exc:
            if exc.category in HALTING:
                if exc.maybe_posted:
                    # It may be in the channel: looked for before any re-post.
                    await self._mark(row, owner=None, error=exc.error)
                else:
                    state = LedgerState.PAUSED if exc.category == "channel" else LedgerState.PENDING
                    await self._mark(row, state=state, error=exc.error)
                return _halted(exc)
            if exc.category == "fatal":
                await self._mark(
                    row, state=LedgerState.FAILED, error=exc.error, content_hash=item.content_hash
                )
                log.error("Slack refused %s: %s", item.ident, exc.error)
                return _failed(exc.error, deferred=False)
            if exc.maybe_posted:
                # An attempt timed out and may have landed: leave it ``posting`` with no
                # owner, so the next run looks in the channel before posting again.
                await self._mark(row, owner=None, error=exc.error)
            else:
                await self._mark(row, state=LedgerState.PENDING, error=exc.error)
            return _failed(exc.error, deferred=True)

    async def _find(self, outbox: Outbox, item: Delivery, row: LedgerRow) -> dict[str, str] | Done:
        oldest = (row.claimed_at or row.updated_at) - HISTORY_MARGIN
        try:
            return await outbox.find(item.channel_id, item.key, oldest=oldest)
        except PostFailure as exc:
            if exc.category in HALTING:
                await self._mark(row, owner=None, error=exc.error)
                return _halted(exc)
            # Without the history we cannot know: leave it for a later run rather than guess.
            await self._mark(row, owner=None, error=f"history: {exc.error}")
            return _failed(f"cannot check history: {exc.error}", deferred=True)

    async def _thread_replies(
        self, outbox: Outbox, item: Delivery, row: LedgerRow, ts: str, *, look: bool
    ) -> tuple[str | None, str | None] | Done:
        """Post the replies not yet under ``ts``: (last reply's ts, what went wrong if any)."""
        if not item.thread:
            return None, None
        done: dict[str, str] = {}
        if look:
            read = await self._read_thread(outbox, item, row, ts)
            if isinstance(read, Done):
                return read
            done = read
        last: str | None = None
        for number, reply in enumerate(item.thread):
            part = f"thread:{number}"
            if part in done:
                last = done[part]
                continue
            meta = metadata_for(item.key, item.kind, part, item.metadata)
            try:
                last = await outbox.post(item.channel_id, reply, metadata=meta, thread_ts=ts)
            except PostFailure as exc:
                if exc.category in HALTING:
                    await self._mark(
                        row, state=LedgerState.POSTED, ts=ts, error=f"thread: {exc.error}"
                    )
                    return _halted(exc)
                # The digest itself is in the channel: a missing reply is logged, not retried.
                log.warning("thread reply %s for %s failed: %s", number, item.ident, exc)
                return last, f"thread reply {number}: {exc.error}"
        return last, None

    async def _read_thread(
        self, outbox: Outbox, item: Delivery, row: LedgerRow, ts: str
    ) -> dict[str, str] | Done:
        """Our parts already under ``ts`` (part → ts); the row is given up if unreadable."""
        try:
            return await outbox.find(item.channel_id, item.key, oldest=None, thread_ts=ts)
        except PostFailure as exc:
            if exc.category in HALTING:
                await self._mark(row, state=LedgerState.POSTED, ts=ts, error=f"thread: {exc.error}")
                return _halted(exc)
            # Posting the replies blind could double them: keep the digest's ts, give
            # the row up (still ``posting``) and let a later run read the thread.
            log.warning("cannot read thread %s in %s: %s", ts, item.channel_id, exc)
            await self._mark(row, ts=ts, owner=None, error=f"thread: {exc.error}")
            return _failed(f"cannot check thread: {exc.error}", deferred=True)

    # -- edits --------------------------------------------------------------------------
    async def edit(self, outbox: Outbox, item: Delivery, row: LedgerRow, ts: str) -> Done:
        """The content changed after the digest went out: the digest and its thread follow.

        The row is claimed like a first post, so two workers never both add a missing reply;
        one that dies midway leaves it ``posting`` with its ts and the old hash, and whoever
        recovers it runs the same edit again (every step is safe to repeat).
        """
        if not await self._claim(row):
            return Done(Outcome.BUSY)
        return await self._resync(outbox, item, row, ts)

    async def _resync(self, outbox: Outbox, item: Delivery, row: LedgerRow, ts: str) -> Done:
        """Make the claimed row's digest and thread show ``item``: update the digest, then
        each reply to match ``item.thread`` part by part (update, post or delete), then mark
        the row ``posted`` with the new hash. A failure leaves the old hash, so the next
        poll edits again, unless Slack refused this version for good."""
        digest_meta = metadata_for(item.key, item.kind, "digest", item.metadata)
        try:
            await outbox.update(item.channel_id, ts, item.message, metadata=digest_meta)
        except PostFailure as exc:
            return await self._edit_failed(item, row, ts, exc, "update")
        # The digest shows the new version from here on, whatever its thread does next:
        # `why` says it was updated, and when. Written with the row's next mark, not alone.
        edited = self.clock()
        thread_ts = row.thread_ts
        if item.manage_thread:
            # Nothing to post and no reply on record (a failed edit records its parent's
            # ts): the thread is empty, no need to read it.
            empty = not item.thread and row.state == LedgerState.POSTED and row.thread_ts is None
            done: dict[str, str] | Done = (
                {} if empty else await self._read_thread(outbox, item, row, ts)
            )
            if isinstance(done, Done):
                return done
            synced = await self._sync_thread(outbox, item, row, ts, done, edited)
            if isinstance(synced, Done):
                return synced
            thread_ts = synced
        await self._mark(
            row,
            state=LedgerState.POSTED,
            ts=ts,
            thread_ts=thread_ts,
            content_hash=item.content_hash or None,
            error=None,
            edited_at=edited,
        )
        return Done(Outcome.UPDATED)

    async def _sync_thread(
        self,
        outbox: Outbox,
        item: Delivery,
        row: LedgerRow,
        ts: str,
        done: dict[str, str],
        edited: datetime,
    ) -> str | Done | None:
        """Replies under ``ts`` made to match ``item.thread``; the last reply's ts."""
        channel = item.channel_id
        last: str | None = None
        number = -1
        try:
            for number, reply in enumerate(item.thread):
                part = f"thread:{number}"
                meta = metadata_for(item.key, item.kind, part, item.metadata)
                if part in done:
                    last = done[part]
                    await outbox.update(channel, last, reply, metadata=meta)
                else:
                    last = await outbox.post(channel, reply, metadata=meta, thread_ts=ts)
            for part, reply_ts in sorted(done.items()):
                index = part.removeprefix("thread:")
                if index.isdigit() and int(index) >= len(item.thread):
                    number = int(index)
                    await outbox.delete(channel, reply_ts)
        except PostFailure as exc:
            # A reply may have landed (or still be there): make sure the next try reads.
            return await self._edit_failed(
                item,
                row,
                ts,
                exc,
                f"thread reply {number}",
                thread_ts=last or ts,
                edited_at=edited,
            )
        return last

    async def _edit_failed(
        self,
        item: Delivery,
        row: LedgerRow,
        ts: str,
        exc: PostFailure,
        what: str,
        **values: object,
    ) -> Done:
        note = f"{what}: {exc.error}"
        posted = LedgerState.POSTED
        if exc.category in HALTING:
            await self._mark(row, state=posted, ts=ts, error=note, **values)
            return _halted(exc)
        if exc.category == "fatal":
            # The message is gone (deleted) or the edit is refused: stop trying this
            # version rather than calling Slack again on every poll.
            new_hash = item.content_hash or None
            await self._mark(row, state=posted, ts=ts, content_hash=new_hash, error=note, **values)
            log.error("Slack refused the edit of %s: %s", item.ident, note)
            return _failed(note, deferred=False)
        # Still the old hash: the next poll offers the edit again, and every step of it
        # is safe to repeat (a reply that may have landed is looked for first).
        await self._mark(row, state=posted, ts=ts, error=note, **values)
        return _failed(note, deferred=True)

    # -- the ledger ---------------------------------------------------------------------
    async def _claim(self, row: LedgerRow) -> bool:
        now = self.clock()
        return await self.writer.claim(row, self.owner, now)

    async def _mark(self, row: LedgerRow, *, state: str | None = None, **values: object) -> None:
        now = self.clock()
        ok = await self.writer.run(
            lambda c: self.ledger.mark(c, row.id, self.owner, now, state=state, **values)
        )
        if not ok:
            log.warning("ledger row %s was taken over by another worker", row.id)
