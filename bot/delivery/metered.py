"""An outbox that counts each Slack call it passes on (by method and Slack's error) into
:class:`bot.ops.metrics.Metrics`. The deliverer puts it under its pacing, so every attempt,
retries included, is one call counted."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from bot.delivery.outbox import Message, Outbox, PostFailure

if TYPE_CHECKING:
    from bot.ops.metrics import Metrics

T = TypeVar("T")


class MeteredOutbox:
    """``inner`` with every call counted; anything else (``paced``, ``tokens_per_team``)
    is the inner outbox's."""

    def __init__(self, inner: Outbox, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _count(self, method: str, call: Awaitable[T]) -> T:
        try:
            result = await call
        except PostFailure as exc:
            self.metrics.slack_call(method, exc.error)
            raise
        self.metrics.slack_call(method)
        return result

    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        call = self.inner.post(channel, message, metadata=metadata, thread_ts=thread_ts)
        return await self._count("chat.postMessage", call)

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        await self._count("chat.update", self.inner.update(channel, ts, message, metadata=metadata))

    async def delete(self, channel: str, ts: str) -> None:
        await self._count("chat.delete", self.inner.delete(channel, ts))

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        method = "conversations.replies" if thread_ts else "conversations.history"
        call = self.inner.find(channel, key, oldest=oldest, thread_ts=thread_ts)
        return await self._count(method, call)

    async def join(self, channel: str) -> bool:
        joined = await self.inner.join(channel)
        self.metrics.slack_call("conversations.join", "" if joined else "not_joined")
        return joined

    async def close(self) -> None:
        await self.inner.close()
