"""The ledger's writer for asyncio callers: one thread, many operations per transaction.

A fan-out makes thousands of small ledger writes (claim, ``ts``, ``posted``). Each on its own
transaction would make the database the bottleneck, and each on the event loop would stall
it; here they run on one thread, and operations queued while a transaction is running all
go into the next one, so the number of commits stays near the number of round trips, not
of posts. Reads and probes that need the same thread (the owner lock lives there) go
through :meth:`LedgerWriter.call`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from digests.store.ledger import Ledger, Transaction

T = TypeVar("T")


class LedgerWriter:
    """Group commit over one :class:`Ledger` (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._queue: list[tuple[Callable[[Transaction], Any], asyncio.Future[Any]]] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[Transaction], T]) -> T:
        """``fn`` inside a shared transaction; its result, or its own exception."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((fn, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._flush())
        result: T = await future
        return result

    async def call(self, fn: Callable[[], T]) -> T:
        """``fn`` on the ledger's thread, outside any grouped transaction."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def close(self) -> None:
        """Wait for what is queued on the thread, then stop it."""
        self._executor.shutdown(wait=True)

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
                    await self._alone(loop, fn, future)
                continue
            for (_, future), value in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(value)

    async def _alone(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[[Transaction], Any],
        future: asyncio.Future[Any],
    ) -> None:
        try:
            value = await loop.run_in_executor(self._executor, self.ledger.run, fn)
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
        else:
            if not future.done():
                future.set_result(value)

    def _apply(self, fns: list[Callable[[Transaction], Any]]) -> list[Any]:
        return self.ledger.run(lambda conn: [fn(conn) for fn in fns])
