"""Stored episode transcripts: read a show's by guid key, save what a fetch got (upsert)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from digests.store import Store
from digests.store.episodes import read_pr_times, write_pr_times
from digests.store.schema import episode_transcripts
from digests.types import StoredTranscript

# Well under SQLite's bound-parameter limit (9 columns a row on save).
_CHUNK = 500
_UPDATED = ("url", "status", "text", "error", "attempts", "fetched_at", "pr_times")


def _values(t: StoredTranscript) -> dict[str, Any]:
    return {
        "show": t.show,
        "guid_key": t.guid_key,
        "url": t.url,
        "status": t.status,
        "text": t.text,
        "error": t.error,
        "attempts": t.attempts,
        "fetched_at": t.fetched_at,
        "pr_times": write_pr_times(t.pr_times),
    }


def _record(row: sa.Row[Any]) -> StoredTranscript:
    return StoredTranscript(
        show=row.show,
        guid_key=row.guid_key,
        url=row.url,
        status="ok" if row.status == "ok" else "failed",
        fetched_at=row.fetched_at,
        text=row.text or "",
        error=row.error,
        attempts=int(row.attempts),
        pr_times=read_pr_times(row.pr_times),
    )


class TranscriptStore:
    """Transcripts in ``store``'s database; failures leave as the store's ``StoreError``."""

    def __init__(self, store: Store) -> None:
        self._db = store._db  # the store package's one Database (transactions, errors)

    def get(self, show: str, keys: Iterable[str]) -> dict[str, StoredTranscript]:
        wanted = list(dict.fromkeys(keys))
        found: dict[str, StoredTranscript] = {}
        if not wanted:
            return found
        t = episode_transcripts
        with self._db.transaction(f"reading transcripts of {show!r}", write=False) as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                rows = conn.execute(sa.select(t).where(t.c.show == show, t.c.guid_key.in_(chunk)))
                for row in rows:
                    found[row.guid_key] = _record(row)
        return found

    def save(self, transcripts: Sequence[StoredTranscript]) -> None:
        """Insert or replace; the last copy of a key wins."""
        rows = list({(t.show, t.guid_key): _values(t) for t in transcripts}.values())
        if not rows:
            return
        dialect = pg_dialect if self._db.dialect == "postgresql" else sqlite_dialect
        with self._db.transaction(f"saving {len(rows)} transcripts") as conn:
            for start in range(0, len(rows), _CHUNK):
                stmt = dialect.insert(episode_transcripts)
                stmt = stmt.on_conflict_do_update(
                    index_elements=["show", "guid_key"],
                    set_={name: stmt.excluded[name] for name in _UPDATED},
                )
                conn.execute(stmt, rows[start : start + _CHUNK])
