"""Documents an episode links, fetched once and stored: transcripts and chapters. Read a
show's by guid key, save what a fetch got (upsert)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from digests.store import Store
from digests.store.episodes import read_chapters, read_pr_times, write_chapters, write_pr_times
from digests.store.schema import episode_chapters, episode_transcripts
from digests.types import StoredChapters, StoredTranscript

# Well under SQLite's bound-parameter limit (9 columns a row on save).
_CHUNK = 500
R = TypeVar("R")


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


class _FetchedOnce(Generic[R]):
    """Rows of one such table in ``store``'s database, keyed by show and guid key;
    failures leave as the store's ``StoreError``."""

    _table: sa.Table
    _what: str

    def __init__(self, store: Store) -> None:
        self._db = store._db  # the store package's one Database (transactions, errors)

    def _record(self, row: sa.Row[Any]) -> R:
        raise NotImplementedError

    def _values(self, record: R) -> dict[str, Any]:
        raise NotImplementedError

    def get(self, show: str, keys: Iterable[str]) -> dict[str, R]:
        wanted = list(dict.fromkeys(keys))
        found: dict[str, R] = {}
        if not wanted:
            return found
        t = self._table
        with self._db.transaction(f"reading {self._what} of {show!r}", write=False) as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                rows = conn.execute(sa.select(t).where(t.c.show == show, t.c.guid_key.in_(chunk)))
                for row in rows:
                    found[row.guid_key] = self._record(row)
        return found

    def save(self, records: Sequence[R]) -> None:
        """Insert or replace; the last copy of a key wins."""
        rows = list({(v["show"], v["guid_key"]): v for v in map(self._values, records)}.values())
        if not rows:
            return
        dialect = pg_dialect if self._db.dialect == "postgresql" else sqlite_dialect
        updated = [c.name for c in self._table.columns if c.name not in ("show", "guid_key")]
        with self._db.transaction(f"saving {len(rows)} {self._what}") as conn:
            for start in range(0, len(rows), _CHUNK):
                stmt = dialect.insert(self._table)
                stmt = stmt.on_conflict_do_update(
                    index_elements=["show", "guid_key"],
                    set_={name: stmt.excluded[name] for name in updated},
                )
                conn.execute(stmt, rows[start : start + _CHUNK])


class TranscriptStore(_FetchedOnce[StoredTranscript]):
    """Transcripts fetched from ``<podcast:transcript>`` links."""

    _table = episode_transcripts
    _what = "transcripts"

    def _record(self, row: sa.Row[Any]) -> StoredTranscript:
        return _record(row)

    def _values(self, record: StoredTranscript) -> dict[str, Any]:
        return _values(record)


class ChapterStore(_FetchedOnce[StoredChapters]):
    """Chapters documents fetched from ``<podcast:chapters>`` links."""

    _table = episode_chapters
    _what = "chapters"

    def _record(self, row: sa.Row[Any]) -> StoredChapters:
        return StoredChapters(
            show=row.show,
            guid_key=row.guid_key,
            url=row.url,
            status="ok" if row.status == "ok" else "failed",
            fetched_at=row.fetched_at,
            chapters=read_chapters(row.chapters),
            error=row.error,
            attempts=int(row.attempts),
        )

    def _values(self, record: StoredChapters) -> dict[str, Any]:
        return {
            "show": record.show,
            "guid_key": record.guid_key,
            "url": record.url,
            "status": record.status,
            "chapters": write_chapters(record.chapters),
            "error": record.error,
            "attempts": record.attempts,
            "fetched_at": record.fetched_at,
        }
