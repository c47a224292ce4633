"""The ledger's writer for asyncio callers: one thread, many operations per transaction.

A fan-out makes thousands of small ledger writes (claim, ``ts``, ``posted``). Each on its own
transaction would make the database the bottleneck, and each on the event loop would stall
it; here they run on one thread, and operations queued while a transaction is running all
go into the next one, so the number of commits stays near the number of round trips, not
of posts. Claims queued together are one statement (:meth:`Ledger.claim_many`): a fan-out
starts by claiming a row for every channel it holds at once. Reads and probes that need the
same thread go through :meth:`LedgerWriter.call`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

from digests.store.ledger import Claim, Ledger, LedgerRow, Transaction

T = TypeVar("T")


class LedgerWriter:
    """Group commit over one :class:`Ledger` (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._queue: list[tuple[Callable[[Transaction], Any], asyncio.Future[Any]]] = []
        self._claims: list[tuple[Claim, asyncio.Future[bool]]] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[Transaction], T]) -> T:
        """``fn`` inside a shared transaction; its result, or its own exception."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append((fn, future))
        self._start()
        result: T = await future
        return result

    async def claim(self, row: LedgerRow, owner: str, now: datetime) -> bool:
        """:meth:`Ledger.claim` in the next shared transaction, with the claims beside it."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._claims.append((Claim(row, owner, now), future))
        self._start()
        return await future

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def call(self, fn: Callable[[], T]) -> T:
        """``fn`` on the ledger's thread, outside any grouped transaction."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def close(self) -> None:
        """Wait for what is queued on the thread, then stop it."""
        self._executor.shutdown(wait=True)

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue or self._claims:
            batch, self._queue = self._queue, []
            claims, self._claims = self._claims, []
            work = [fn for fn, _ in batch]
            wanted = [claim for claim, _ in claims]
            try:
                taken, results = await loop.run_in_executor(
                    self._executor, self._apply, wanted, work
                )
            except Exception:
                # One bad operation must not sink its neighbours: run them one by one.
                for fn, future in [*batch, *((self._one_claim(c), f) for c, f in claims)]:
                    await self._alone(loop, fn, future)
                continue
            for (_, future), value in zip([*claims, *batch], [*taken, *results], strict=True):
                if not future.done():
                    future.set_result(value)

    def _one_claim(self, claim: Claim) -> Callable[[Transaction], bool]:
        return lambda conn: self.ledger.claim(conn, claim.row, claim.owner, claim.now)

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

    def _apply(
        self, claims: list[Claim], fns: list[Callable[[Transaction], Any]]
    ) -> tuple[list[bool], list[Any]]:
        def work(conn: Transaction) -> tuple[list[bool], list[Any]]:
            taken = self.ledger.claim_many(conn, claims) if claims else []
            return taken, [fn(conn) for fn in fns]

        return self.ledger.run(work)
