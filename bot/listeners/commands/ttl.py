"""Small in-process caches: least-recently-used with a TTL, and shared computations."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

V = TypeVar("V")

DEFAULT_TTL = 15.0
DEFAULT_SIZE = 512


class TtlCache(Generic[V]):
    """Least-recently-used, entries expire ``ttl`` seconds after they were stored."""

    def __init__(
        self,
        ttl: float = DEFAULT_TTL,
        size: int = DEFAULT_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.size = size
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored, value = entry
        if self._clock() - stored >= self.ttl:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: str, value: V) -> None:
        if self.ttl <= 0:
            return
        self._entries[key] = (self._clock(), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class SingleFlight(Generic[V]):
    """Concurrent requests for one key share one computation.

    Without it, an entry expiring under load sends every request in flight to the store at
    once (50 at concurrency 50), and that burst is the whole p99. Use from one event loop.
    """

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[V]] = {}

    async def run(self, key: str, compute: Callable[[], Awaitable[V]]) -> V:
        future = self._pending.get(key)
        if future is None:
            future = asyncio.ensure_future(compute())
            self._pending[key] = future
            future.add_done_callback(lambda _: self._pending.pop(key, None))
        # shield: one caller giving up must not cancel the others' answer.
        return await asyncio.shield(future)
