"""An outbox that wraps any outbox with Slack's manners: retries, backoff, pacing, a bound.

- 429 waits its ``Retry-After`` (up to ``max_wait``; a longer one fails fast, and the
  channel takes no call until it has passed), 5xx and timeouts back off exponentially,
  each call at most ``max_attempts`` times;
- a post that timed out may have landed: before posting again it looks for the post (by
  the key in its metadata) and returns the ``ts`` found instead of posting twice;
- ``not_in_channel`` on a post joins the channel once (public channels) and goes on;
- about one call per second per channel (``interval``), at most ``team_rate`` calls a
  second to one workspace (the team of the channel's sequence, ``CURRENT_TEAM``; 0: no
  bound), and at most ``concurrency`` calls in flight over every channel; a channel
  waiting out its pace or a ``Retry-After`` holds no slot.

Every caller of one :class:`PacedOutbox` shares its pace and bound; :meth:`metered` gives
a view that also counts calls and retries into a :class:`Meter` (one per report).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from bot.delivery.outbox import HISTORY_MARGIN, Message, Outbox, PostFailure, key_and_part
from bot.delivery.tokens import CURRENT_TEAM

T = TypeVar("T")

TRANSIENT = frozenset({"ratelimited", "server", "timeout"})


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Meter:
    """Slack calls made and retried, for one report."""

    calls: int = 0
    retries: int = 0
    waited: float = 0.0  # seconds slept because Slack said Retry-After


@dataclass(frozen=True)
class Policy:
    interval: float = 1.0  # seconds between calls to one channel
    concurrency: int = 20
    max_attempts: int = 5
    backoff: float = 0.5  # first backoff; doubles per attempt
    max_wait: float = 120.0  # the longest single wait; a longer Retry-After fails fast
    team_rate: float = 0.0  # calls a second to one workspace (0: unbounded)

    def wait(self, exc: PostFailure, attempt: int) -> float:
        if exc.category == "ratelimited" and exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), self.max_wait)
        return min(self.backoff * 2 ** (attempt - 1), self.max_wait)

    def too_long(self, exc: PostFailure) -> bool:
        return exc.retry_after is not None and exc.retry_after > self.max_wait


@dataclass
class _Lanes:
    """What every view of one paced outbox shares: each channel's next slot, the bound."""

    next_slot: dict[str, float] = field(default_factory=dict)
    team_slot: dict[str, float] = field(default_factory=dict)  # each team's next free call
    sem: asyncio.Semaphore | None = None
    sem_loop: asyncio.AbstractEventLoop | None = None

    def semaphore(self, bound: int) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self.sem is None or self.sem_loop is not loop:
            self.sem, self.sem_loop = asyncio.Semaphore(bound), loop
        return self.sem


class PacedOutbox:
    """See the module docstring. ``inner`` is any :class:`bot.delivery.outbox.Outbox`."""

    def __init__(
        self,
        inner: Outbox,
        policy: Policy | None = None,
        *,
        clock: Callable[[], datetime] = _utcnow,
        meter: Meter | None = None,
        lanes: _Lanes | None = None,
    ) -> None:
        self.inner = inner
        policy = policy or Policy()
        if not getattr(inner, "paced", True):
            # Pacing is Slack's rule; an outbox that only prints has no rate to respect.
            policy = replace(policy, interval=0.0)
        self.policy = policy
        self.clock = clock
        self.meter = meter or Meter()
        self._lanes = lanes or _Lanes()

    def metered(self, meter: Meter) -> PacedOutbox:
        """The same outbox (same pace, same bound), counting into ``meter``."""
        return PacedOutbox(
            self.inner, self.policy, clock=self.clock, meter=meter, lanes=self._lanes
        )

    # -- the Outbox protocol ------------------------------------------------------------
    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        """One post, retried as its failures allow; after a timeout, looked for first.

        A failure raised after any attempt timed out has ``maybe_posted`` set.
        """
        attempt = 0
        joined = False
        timed_out = False
        posted_at = self.clock()
        while True:
            attempt += 1
            try:
                return await self._paced(
                    channel,
                    lambda: self.inner.post(
                        channel, message, metadata=metadata, thread_ts=thread_ts
                    ),
                )
            except PostFailure as exc:
                timed_out = timed_out or exc.category == "timeout"
                exc.maybe_posted = timed_out
                if exc.error == "not_in_channel" and not joined:
                    # A public channel the bot was never added to: join it once and go on.
                    joined = True
                    if await self.inner.join(channel):
                        continue
                await self._before_retry(channel, exc, attempt)
                if exc.category == "timeout":
                    found = await self._landed(channel, metadata, thread_ts, posted_at, exc)
                    if found is not None:
                        return found

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        await self._call(
            channel, lambda: self.inner.update(channel, ts, message, metadata=metadata)
        )

    async def delete(self, channel: str, ts: str) -> None:
        await self._call(channel, lambda: self.inner.delete(channel, ts))

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        return await self._call(
            channel, lambda: self.inner.find(channel, key, oldest=oldest, thread_ts=thread_ts)
        )

    async def join(self, channel: str) -> bool:
        return await self.inner.join(channel)

    async def close(self) -> None:
        await self.inner.close()

    # -- retrying and pacing ------------------------------------------------------------
    async def _call(self, channel: str, fn: Callable[[], Awaitable[T]]) -> T:
        """A call that is safe to repeat (update, delete, history): retried when transient."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._paced(channel, fn)
            except PostFailure as exc:
                await self._before_retry(channel, exc, attempt)

    async def _before_retry(self, channel: str, exc: PostFailure, attempt: int) -> None:
        """Wait before the next attempt, or re-raise ``exc`` when there is to be none."""
        if exc.category not in TRANSIENT:
            raise exc
        if self.policy.too_long(exc):
            # Sleeping an hour would stall the whole poll: fail now, and keep the channel
            # quiet until Slack's time is up (later attempts fail fast without a call).
            assert exc.retry_after is not None
            until = time.monotonic() + exc.retry_after
            lanes = self._lanes.next_slot
            lanes[channel] = max(lanes.get(channel, 0.0), until)
            raise exc
        if attempt >= self.policy.max_attempts:
            raise exc
        self.meter.retries += 1
        wait = self.policy.wait(exc, attempt)
        if exc.category == "ratelimited" and exc.retry_after is not None:
            self.meter.waited += wait
        await asyncio.sleep(wait)

    async def _landed(
        self,
        channel: str,
        metadata: Mapping[str, Any],
        thread_ts: str | None,
        posted_at: datetime,
        exc: PostFailure,
    ) -> str | None:
        """The ``ts`` of a post that timed out but landed; None when it did not land."""
        wanted = key_and_part(metadata)
        if wanted is None:  # nothing to look for: a blind re-post could double it
            raise exc
        key, part = wanted
        oldest = None if thread_ts else posted_at - HISTORY_MARGIN
        try:
            found = await self._paced(
                channel,
                lambda: self.inner.find(channel, key, oldest=oldest, thread_ts=thread_ts),
            )
        except PostFailure as look:
            # Cannot tell whether it landed: the caller leaves it for recovery.
            raise exc from look
        return found.get(part)

    async def _paced(self, channel: str, fn: Callable[[], Awaitable[T]]) -> T:
        wait = self._lanes.next_slot.get(channel, 0.0) - time.monotonic()
        if wait > self.policy.max_wait:
            # Still inside a Retry-After too long to wait out: fail fast, as Slack would.
            raise PostFailure("pace", "ratelimited", "ratelimited", retry_after=wait)
        if wait > 0:
            await asyncio.sleep(wait)
        await self._team_turn()
        async with self._lanes.semaphore(self.policy.concurrency):
            try:
                self.meter.calls += 1
                return await fn()
            finally:
                self._lanes.next_slot[channel] = max(
                    self._lanes.next_slot.get(channel, 0.0),
                    time.monotonic() + self.policy.interval,
                )

    async def _team_turn(self) -> None:
        """Wait for the workspace's next slot: slots are handed out ``1 / team_rate`` apart,
        each caller taking the next one, so the calls of one team never exceed the rate."""
        team = CURRENT_TEAM.get()
        if self.policy.team_rate <= 0 or team is None:
            return
        now = time.monotonic()
        slots = self._lanes.team_slot
        turn = max(now, slots.get(team, 0.0))
        slots[team] = turn + 1.0 / self.policy.team_rate
        if turn > now:
            await asyncio.sleep(turn - now)
