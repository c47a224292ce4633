"""Stored PR details: read many by (repo, number), save what GitHub said (upsert)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from digests.store import Store
from digests.store.schema import pr_details
from digests.types import PrDetails, PrKey

# Well under SQLite's bound-parameter limit (11 columns a row on save).
_CHUNK = 500
_UPDATED = (
    "title",
    "state",
    "draft",
    "merged_at",
    "author",
    "labels",
    "fetched_at",
    "etag",
    "missing",
)


def _values(d: PrDetails) -> dict[str, Any]:
    return {
        "repo": d.repo,
        "number": d.number,
        "title": d.title,
        "state": d.state,
        "draft": d.draft,
        "merged_at": d.merged_at,
        "author": d.author,
        "labels": list(d.labels),
        "fetched_at": d.fetched_at,
        "etag": d.etag,
        "missing": d.missing,
    }


def _record(row: sa.Row[Any]) -> PrDetails:
    return PrDetails(
        repo=row.repo,
        number=row.number,
        title=row.title,
        state=row.state,
        draft=bool(row.draft),
        merged_at=row.merged_at,
        author=row.author,
        labels=tuple(row.labels or ()),
        fetched_at=row.fetched_at,
        etag=row.etag,
        missing=bool(row.missing),
    )


class PrDetailsStore:
    """PR details in ``store``'s database; failures leave as the store's ``StoreError``."""

    def __init__(self, store: Store) -> None:
        self._db = store._db  # the store package's one Database (transactions, errors)

    def get(self, keys: Iterable[PrKey]) -> dict[PrKey, PrDetails]:
        by_repo: dict[str, list[int]] = {}
        for repo, number in dict.fromkeys(keys):
            by_repo.setdefault(repo, []).append(number)
        found: dict[PrKey, PrDetails] = {}
        if not by_repo:
            return found
        with self._db.transaction("reading PR details", write=False) as conn:
            for repo, numbers in by_repo.items():
                for start in range(0, len(numbers), _CHUNK):
                    chunk = numbers[start : start + _CHUNK]
                    rows = conn.execute(
                        sa.select(pr_details).where(
                            pr_details.c.repo == repo, pr_details.c.number.in_(chunk)
                        )
                    )
                    for row in rows:
                        found[(row.repo, row.number)] = _record(row)
        return found

    def save(self, details: Sequence[PrDetails]) -> None:
        """Insert or replace; the last copy of a key wins."""
        rows = list({d.key: _values(d) for d in details}.values())
        if not rows:
            return
        dialect = pg_dialect if self._db.dialect == "postgresql" else sqlite_dialect
        with self._db.transaction(f"saving {len(rows)} PR details") as conn:
            for start in range(0, len(rows), _CHUNK):
                stmt = dialect.insert(pr_details)
                stmt = stmt.on_conflict_do_update(
                    index_elements=["repo", "number"],
                    set_={name: stmt.excluded[name] for name in _UPDATED},
                )
                conn.execute(stmt, rows[start : start + _CHUNK])
