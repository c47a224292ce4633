"""digests.store.ledger_writer: ledger operations grouped into shared transactions."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from digests.errors import StoreError
from digests.store import Store
from digests.store.ledger import Ledger, NewRow, Transaction
from digests.store.ledger_writer import LedgerWriter

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def ensure(ledger: Ledger, key: str) -> Callable[[Transaction], str]:
    """An operation that makes the row for ``key`` and returns the key."""

    def run(conn: Transaction) -> str:
        ledger.ensure(conn, [NewRow("T1", "C1", "episode", key, "h")], NOW)
        return key

    return run


async def test_operations_queued_together_share_transactions(store: Store) -> None:
    ledger = Ledger.for_store(store)
    writer = LedgerWriter(ledger)
    commits = 0
    original = ledger.run

    def counting(fn: Callable[[Transaction], Any]) -> Any:
        nonlocal commits
        commits += 1
        return original(fn)

    ledger.run = counting  # type: ignore[method-assign]
    try:
        keys = [f"PyTorch:g{n}" for n in range(50)]

        done = await asyncio.gather(*(writer.run(ensure(ledger, k)) for k in keys))
    finally:
        writer.close()
    assert done == keys
    assert commits < len(keys)  # grouped: the first alone, the rest queued behind it
    assert sorted(r.key for r in ledger.all_rows()) == sorted(keys)


async def test_one_failing_operation_does_not_sink_its_neighbours(store: Store) -> None:
    ledger = Ledger.for_store(store)
    writer = LedgerWriter(ledger)

    def broken(conn: Transaction) -> None:
        conn.exec_driver_sql("SELECT * FROM no_such_table")

    try:
        results = await asyncio.gather(
            writer.run(ensure(ledger, "PyTorch:a")),
            writer.run(broken),
            writer.run(ensure(ledger, "PyTorch:b")),
            return_exceptions=True,
        )
        # The thread's plain calls run outside any grouped transaction.
        count = await writer.call(lambda: len(ledger.all_rows()))
    finally:
        writer.close()
    assert results[0] == "PyTorch:a" and results[2] == "PyTorch:b"
    assert isinstance(results[1], StoreError)
    assert count == 2
    with pytest.raises(RuntimeError):  # closed: no more work is taken
        await writer.call(lambda: None)
