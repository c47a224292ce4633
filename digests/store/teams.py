"""A workspace that leaves (OAuth mode: ``app_uninstalled``, ``tokens_revoked``) is forgotten.

Everything digestbot keeps about the team goes in one transaction: its subscriptions (with
the ids of the users who made them, and the tombstones of unsubscribed config-file ones)
and every delivery ledger row of the team — pending and half-done ones, so nothing more is
posted there, the posted ones (channel ids and message timestamps) and the pause DMs, whose
rows are addressed to user ids. What is left is not the team's: shows, episodes, PR details,
and ``seen_requests`` (event ids and request hashes, no team or user id, gone within an
hour, see ``requests.py``). A re-install starts from nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from digests.store.database import Database
from digests.store.schema import deliveries, follows, subscriptions
from digests.types import LedgerState


@dataclass(frozen=True)
class Forgotten:
    """What :meth:`TeamsMixin.forget_team` removed."""

    subscriptions: int
    unfinished: int  # ledger rows not yet posted (pending, posting, paused, failed)
    posted: int


class TeamsMixin:
    """Forgetting a workspace, for :class:`digests.store.Store`."""

    _db: Database

    def forget_team(self, team_id: str) -> Forgotten:
        """Delete the team's subscriptions and delivery ledger rows (see the module)."""
        mine = deliveries.c.team_id == team_id
        posted = deliveries.c.state == LedgerState.POSTED.value
        with self._db.transaction(f"forgetting team {team_id}") as conn:
            subs = conn.execute(
                sa.delete(subscriptions).where(subscriptions.c.team_id == team_id)
            ).rowcount
            done = conn.execute(sa.delete(deliveries).where(mine, posted)).rowcount
            rest = conn.execute(sa.delete(deliveries).where(mine)).rowcount
            # Follows name users: they go with the workspace too.
            conn.execute(sa.delete(follows).where(follows.c.team_id == team_id))
        return Forgotten(int(subs), int(rest), int(done))

    def resume_team(self, team_id: str, reason: str) -> int:
        """Un-pause the team's subscriptions paused for ``reason`` (it installed); the count."""
        with self._db.transaction(f"resuming team {team_id}") as conn:
            return int(
                conn.execute(
                    sa.update(subscriptions)
                    .where(
                        subscriptions.c.team_id == team_id,
                        subscriptions.c.paused_reason == reason,
                    )
                    .values(paused_reason=None, paused_at=None)
                ).rowcount
            )
