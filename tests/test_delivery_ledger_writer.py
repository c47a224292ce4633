"""digests.store.ledger_writer: ledger operations grouped into shared transactions."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

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


async def test_claims_queued_together_are_one_statement_and_only_one_wins_a_row(
    store: Store,
) -> None:
    """A fan-out claims a row per channel at once: one statement for all of them, each row
    taken only as it was read (compare and set), and of two claims of one row the first."""
    ledger = Ledger.for_store(store)
    rows = [NewRow("T1", f"C{n}", "episode", "PyTorch:g1", "h") for n in range(40)]
    ledger.run(lambda conn: ledger.ensure(conn, rows, NOW))
    read = sorted(ledger.all_rows(), key=lambda r: r.channel_id)
    stale = read[0]
    ledger.run(lambda conn: ledger.claim(conn, stale, "someone-else", NOW))  # since we read it
    statements: list[str] = []
    sa.event.listen(ledger.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    writer = LedgerWriter(ledger)
    try:
        won = await asyncio.gather(
            *(writer.claim(row, "me", NOW) for row in read),
            writer.claim(read[1], "me-again", NOW),  # a second claim of a row in the batch
        )
    finally:
        writer.close()
    assert won == [False, *[True] * (len(read) - 1), False]
    owners = {r.channel_id: r.owner for r in ledger.all_rows()}
    assert owners[stale.channel_id] == "someone-else"
    assert all(owners[r.channel_id] == "me" for r in read[1:])
    assert {r.state for r in ledger.all_rows()} == {"posting"}
    assert {r.attempts for r in ledger.all_rows()} == {1}
    updates = [s for s in statements if s.lstrip().upper().startswith("UPDATE")]
    if ledger.is_postgres:  # SQLite (one process, no round trips) claims one by one
        assert len(updates) <= 2, updates  # the first claim may go out alone
