"""The ledger's writer for asyncio callers: one thread, many operations per transaction.

A fan-out makes thousands of small ledger writes (claim, ``ts``, ``posted``). Each on its own
transaction would make the database the bottleneck, and each on the event loop would stall
it; here they run on one thread, and operations queued while a transaction is running all
go into the next one, so the number of commits stays near the number of round trips, not
of posts. Claims queued together are one statement, and so are finished posts
(:mod:`digests.store.ledger_batch`). Reads and probes that need the
same thread go through :meth:`LedgerWriter.call`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

from digests.store.ledger import Ledger, LedgerRow, Transaction
from digests.store.ledger_batch import Claim, Finish, claim_many, finish_many

T = TypeVar("T")
# What can be queued: a claim, a finished post (each group of them one statement), or any
# operation on the transaction.
Op = Claim | Finish | Callable[[Transaction], Any]


class LedgerWriter:
    """Group commit over one :class:`Ledger` (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._queue: list[tuple[Op, asyncio.Future[Any]]] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[Transaction], T]) -> T:
        """``fn`` inside a shared transaction; its result, or its own exception."""
        result: T = await self._queued(fn)
        return result

    async def claim(self, row: LedgerRow, owner: str, now: datetime) -> bool:
        """:meth:`Ledger.claim` in the next shared transaction, with the claims beside it."""
        taken: bool = await self._queued(Claim(row, owner, now))
        return taken

    async def finish(self, finish: Finish) -> bool:
        """A posted row recorded in the next shared transaction (False: taken over)."""
        done: bool = await self._queued(finish)
        return done

    async def call(self, fn: Callable[[], T]) -> T:
        """``fn`` on the ledger's thread, outside any grouped transaction."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def close(self) -> None:
        """Wait for what is queued on the thread, then stop it."""
        self._executor.shutdown(wait=True)

    async def _queued(self, op: Op) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.append((op, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            batch, self._queue = self._queue, []
            ops = [op for op, _ in batch]
            try:
                results = await loop.run_in_executor(self._executor, self._apply, ops)
            except Exception:
                # One bad operation must not sink its neighbours: run them one by one.
                for op, future in batch:
                    await self._alone(loop, op, future)
                continue
            for (_, future), value in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(value)

    async def _alone(
        self, loop: asyncio.AbstractEventLoop, op: Op, future: asyncio.Future[Any]
    ) -> None:
        try:
            value = await loop.run_in_executor(self._executor, self._apply, [op])
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
        else:
            if not future.done():
                future.set_result(value[0])

    def _apply(self, ops: list[Op]) -> list[Any]:
        return self.ledger.run(lambda conn: apply(self.ledger, conn, ops))


def apply(ledger: Ledger, conn: Transaction, ops: Sequence[Op]) -> list[Any]:
    """Each op's result, in order: the claims, then the finished posts, each group in one
    statement; then the other operations one after the other."""
    claims = [op for op in ops if isinstance(op, Claim)]
    finishes = [op for op in ops if isinstance(op, Finish)]
    taken = iter(claim_many(ledger, conn, claims) if claims else [])
    done = iter(finish_many(ledger, conn, finishes) if finishes else [])
    out: list[Any] = []
    for op in ops:
        if isinstance(op, Claim):
            out.append(next(taken))
        elif isinstance(op, Finish):
            out.append(next(done))
        else:
            out.append(op(conn))
    return out
