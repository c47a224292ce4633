"""Shows and their fetch state (conditional-GET validators, failures, the next poll)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from digests.store.database import Database
from digests.store.schema import shows
from digests.types import FetchState

_FETCH_COLUMNS = (
    shows.c.etag,
    shows.c.last_modified,
    shows.c.last_polled_at,
    shows.c.last_success_at,
    shows.c.last_error,
    shows.c.failures,
    shows.c.next_poll_at,
    shows.c.failing_notified,
)


def insert_show(conn: sa.Connection, name: str, **values: Any) -> int:
    values.setdefault("feed", "")
    values.setdefault("repo", "")
    result = conn.execute(sa.insert(shows).values(name=name, **values))
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def show_ids(conn: sa.Connection, names: Iterable[str]) -> dict[str, int]:
    """Ids of ``names``, creating rows for shows not seen before."""
    wanted = sorted(set(names))
    ids = {
        row.name: row.id
        for row in conn.execute(sa.select(shows.c.id, shows.c.name).where(shows.c.name.in_(wanted)))
    }
    for name in wanted:
        if name not in ids:
            ids[name] = insert_show(conn, name)
    return ids


class ShowsMixin:
    """The ``shows`` aggregate of :class:`digests.store.Store`."""

    _db: Database

    def ensure_show(self, name: str, feed: str, repo: str) -> None:
        """Create the show if missing; the configuration wins for its feed and repo."""

        def write(conn: sa.Connection) -> None:
            row = conn.execute(
                sa.select(shows.c.id, shows.c.feed, shows.c.repo).where(shows.c.name == name)
            ).first()
            if row is None:
                insert_show(conn, name, feed=feed, repo=repo)
            elif (row.feed, row.repo) != (feed, repo):
                conn.execute(
                    sa.update(shows).where(shows.c.id == row.id).values(feed=feed, repo=repo)
                )

        self._db.write(f"saving show {name!r}", write)

    def fetch_state(self, show: str) -> FetchState:
        """The show's polling state; a show never polled (or unknown) has the defaults."""
        with self._db.transaction(f"reading fetch state of {show!r}", write=False) as conn:
            row = conn.execute(sa.select(*_FETCH_COLUMNS).where(shows.c.name == show)).first()
        if row is None:
            return FetchState()
        return FetchState(
            etag=row.etag,
            last_modified=row.last_modified,
            last_polled_at=row.last_polled_at,
            last_success_at=row.last_success_at,
            last_error=row.last_error,
            failures=row.failures,
            next_poll_at=row.next_poll_at,
            failing_notified=bool(row.failing_notified),
        )

    def save_fetch_state(self, show: str, state: FetchState) -> None:
        values = {
            "etag": state.etag,
            "last_modified": state.last_modified,
            "last_polled_at": state.last_polled_at,
            "last_success_at": state.last_success_at,
            "last_error": state.last_error,
            "failures": state.failures,
            "next_poll_at": state.next_poll_at,
            "failing_notified": state.failing_notified,
        }

        def write(conn: sa.Connection) -> None:
            updated = conn.execute(sa.update(shows).where(shows.c.name == show).values(values))
            if updated.rowcount == 0:
                insert_show(conn, show, **values)

        self._db.write(f"saving fetch state of {show!r}", write)
