"""Pauses people ask for (``/episodes pause``), apart from the Slack-side ``paused_reason``.

A hold is a window [held_at, held_until) on the subscription; what reaches the show inside
it is not posted there (``digests.decide.deliveries.held_back``). Ending a pause closes the window
at
that moment instead of forgetting it, so what arrived meanwhile stays unposted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from digests.models import Episode
from digests.store.database import Database, aware, clean
from digests.store.episodes import hydrate, select_episodes
from digests.store.schema import episodes, shows, subscriptions
from digests.store.subscriptions import Shows, _subscription, of_shows
from digests.types import Subscription


def _mine(team_id: str, channel_id: str, show: Shows) -> list[Any]:
    where = [
        subscriptions.c.team_id == team_id,
        subscriptions.c.channel_id == channel_id,
        subscriptions.c.unsubscribed_at.is_(None),
    ]
    if show is not None:
        where.append(of_shows(show))
    return where


class HoldsMixin:
    """User pauses of subscriptions, for :class:`digests.store.Store`."""

    _db: Database

    def hold(
        self,
        team_id: str,
        channel_id: str,
        show: Shows,
        now: datetime,
        until: datetime | None = None,
    ) -> list[Subscription]:
        """Pause the channel's subscriptions to ``show`` (a name, a tuple of them, or every
        one when None) from ``now``
        until ``until`` (None: until resumed), and return them. A pause already on keeps its
        start and takes the new end."""
        now = aware(now, "now")
        end = aware(until, "until") if until is not None else None
        with self._db.transaction(f"pausing {channel_id} on request") as conn:
            rows = conn.execute(
                sa.select(subscriptions).where(*_mine(team_id, channel_id, show))
            ).all()
            for row in rows:
                start = row.held_at if _subscription(row).held(now) else now
                conn.execute(
                    sa.update(subscriptions)
                    .where(subscriptions.c.id == row.id)
                    .values(held_at=start, held_until=end)
                )
            ids = [row.id for row in rows]
            held = conn.execute(
                sa.select(subscriptions)
                .where(subscriptions.c.id.in_(ids))
                .order_by(subscriptions.c.show)
            ).all()
        return [_subscription(row) for row in held]

    def release(
        self, team_id: str, channel_id: str, show: Shows, now: datetime
    ) -> list[Subscription]:
        """End the user pause of the channel's subscriptions to ``show`` (a name, a tuple of
        them, or every one when None) at ``now``; the subscriptions whose pause this ended,
        as they were."""
        now = aware(now, "now")
        with self._db.transaction(f"resuming {channel_id}") as conn:
            rows = conn.execute(
                sa.select(subscriptions)
                .where(*_mine(team_id, channel_id, show))
                .order_by(subscriptions.c.show)
            ).all()
            ended = [_subscription(row) for row in rows if _subscription(row).held(now)]
            for sub in ended:
                conn.execute(
                    sa.update(subscriptions)
                    .where(*_mine(team_id, channel_id, sub.show))
                    .values(held_until=now)
                )
        return ended

    def arrived_between(
        self, show: str, start: datetime, end: datetime, limit: int
    ) -> list[Episode]:
        """The show's episodes first seen in [start, end), newest arrival first."""
        stmt = (
            select_episodes()
            .where(
                shows.c.name == clean(show),
                episodes.c.first_seen_at >= aware(start, "start"),
                episodes.c.first_seen_at < aware(end, "end"),
            )
            .order_by(episodes.c.first_seen_at.desc(), episodes.c.published_at.desc())
            .limit(max(0, limit))
        )
        with self._db.transaction(f"reading what {show!r} got meanwhile", write=False) as conn:
            return hydrate(conn, conn.execute(stmt).all())
