"""Seen requests: a replayed or retried Slack request that changes something runs once; and
small facts a process keeps between starts (``bot_state``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa

from digests.store.database import Database, aware
from digests.store.schema import bot_state, seen_requests

# Slack refuses a signature older than five minutes and retries an event for about an hour.
KEEP_SEEN = timedelta(hours=1)


class RequestsMixin:
    _db: Database

    def first_request(self, key: str, now: datetime) -> bool:
        """Record ``key`` (an event id, a request fingerprint); False when it was seen already.

        Keys older than ``KEEP_SEEN`` are forgotten in the same transaction, so the table
        holds an hour of state-changing requests at most.
        """
        now = aware(now, "now")

        def write(conn: sa.Connection) -> bool:
            conn.execute(sa.delete(seen_requests).where(seen_requests.c.seen_at < now - KEEP_SEEN))
            seen = conn.execute(
                sa.select(seen_requests.c.key).where(seen_requests.c.key == key[:100])
            ).first()
            if seen is not None:
                return False
            conn.execute(sa.insert(seen_requests).values(key=key[:100], seen_at=now))
            return True

        # Two processes that see the same replay race on the primary key: the loser's retry
        # finds the row and answers False.
        return self._db.write("recording a request", write)

    def state_value(self, name: str) -> str | None:
        """A fact kept between starts (``set_state_value``), None when never set."""
        query = sa.select(bot_state.c.value).where(bot_state.c.name == name)
        with self._db.transaction("reading kept state", write=False) as conn:
            return conn.execute(query).scalar_one_or_none()

    def set_state_value(self, name: str, value: str) -> None:
        def write(conn: sa.Connection) -> None:
            conn.execute(sa.delete(bot_state).where(bot_state.c.name == name))
            conn.execute(sa.insert(bot_state).values(name=name, value=value))

        self._db.write("keeping state", write)
