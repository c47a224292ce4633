"""Stored PR details (table pr_details), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from digests.errors import StoreError
from digests.store import Store
from digests.store.pr_details import PrDetailsStore
from digests.types import PrDetails

NOW = datetime(2026, 10, 6, 12, 0, tzinfo=UTC)


def test_round_trip_and_upsert(store: Store) -> None:
    prs = PrDetailsStore(store)
    first = PrDetails(
        "pytorch/pytorch",
        199720,
        title="Stack-aware merges",
        state="closed",
        merged_at=NOW - timedelta(days=1),
        author="dev",
        labels=("Merged", "release notes: distributed"),
        fetched_at=NOW,
        etag='W/"abc"',
    )
    gone = PrDetails("pytorch/vision", 7, fetched_at=NOW, missing=True)
    prs.save([first, gone])
    assert prs.get([first.key, gone.key, ("pytorch/pytorch", 1)]) == {
        first.key: first,
        gone.key: gone,
    }
    later = PrDetails(
        "pytorch/pytorch",
        199720,
        title="Renamed",
        state="open",
        draft=True,
        fetched_at=NOW + timedelta(hours=1),
    )
    prs.save([later])
    assert prs.get([first.key]) == {first.key: later}
    assert prs.get([]) == {}


def test_many_keys_across_repositories(store: Store) -> None:
    prs = PrDetailsStore(store)
    details = [
        PrDetails(repo, n, title=f"#{n}", fetched_at=NOW)
        for repo in ("a/x", "b/y")
        for n in range(1, 701)
    ]
    prs.save(details)
    got = prs.get(d.key for d in details)
    assert len(got) == 1400 and got[("b/y", 700)].title == "#700"


def test_database_failure_is_one_store_error(store: Store) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE pr_details"))
    prs = PrDetailsStore(store)
    with pytest.raises(StoreError) as caught:
        prs.get([("a/b", 1)])
    assert "\n" not in str(caught.value)
    with pytest.raises(StoreError):
        prs.save([PrDetails("a/b", 1)])
