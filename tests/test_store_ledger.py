"""The delivery ledger's rows: what ``ensure`` writes and reads back."""

from __future__ import annotations

from digests.store import Store
from digests.store.ledger import Ledger, NewRow
from digests.types import LedgerState
from tests.fixtures.store import SAMPLE_NOW


def test_ensure_records_the_show_of_a_row(store: Store) -> None:
    ledger = Ledger.for_store(store)
    rows = [
        NewRow("T1", "C1", "episode", "PyTorch:g1", "h1", show="PyTorch"),
        NewRow("T1", "C1", "notice", "PyTorch:failing:1"),
    ]
    ledger.run(lambda conn: ledger.ensure(conn, rows, SAMPLE_NOW, owner="me"))
    found = {row.kind: row for row in ledger.all_rows()}
    assert found["episode"].show == "PyTorch"
    assert found["notice"].show is None
    assert found["episode"].state == LedgerState.PENDING


def test_an_owner_alive_here_is_seen_by_every_ledger_of_the_store(store: Store) -> None:
    owner = "elsewhere:1:tag"  # not this host's pid: only this process says it is alive
    Ledger.for_store(store).live.add(owner)
    try:
        assert Ledger.for_store(store).owner_alive(owner)
    finally:
        Ledger.for_store(store).live.discard(owner)
    assert not Ledger.for_store(store).owner_alive(owner)
