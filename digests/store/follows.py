"""People's follows: add (within a per-person limit), list, remove, find by PR or words,
record the PR state last told, forget a workspace's or a person's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa

from digests.store import Store
from digests.store.database import chunks
from digests.store.schema import follows
from digests.types import Follow, FollowKind

__all__ = ["MAX_FOLLOWS", "Added", "FollowStore"]

# Per person and workspace: enough to follow a release's worth of PRs, not a firehose.
MAX_FOLLOWS = 50


class Added(StrEnum):
    ADDED = "added"
    ALREADY = "already"
    FULL = "full"


def _record(row: Any) -> Follow:
    return Follow(
        id=int(row.id),
        team_id=row.team_id,
        user_id=row.user_id,
        kind=FollowKind(row.kind),
        target=row.target,
        created_at=row.created_at,
        last_state=row.last_state,
    )


class FollowStore:
    """Follows in ``store``'s database; failures leave as the store's ``StoreError``."""

    def __init__(self, store: Store) -> None:
        self._db = store._db  # the store package's one Database (transactions, errors)

    def add(
        self,
        team_id: str,
        user_id: str,
        kind: FollowKind,
        target: str,
        now: datetime,
        *,
        last_state: str | None = None,
        limit: int = MAX_FOLLOWS,
    ) -> Added:
        mine = (follows.c.team_id == team_id) & (follows.c.user_id == user_id)
        with self._db.transaction(f"following {target!r}") as conn:
            rows = conn.execute(sa.select(follows.c.kind, follows.c.target).where(mine)).all()
            if (kind.value, target) in {(r.kind, r.target) for r in rows}:
                return Added.ALREADY
            if len(rows) >= limit:
                return Added.FULL
            conn.execute(
                sa.insert(follows).values(
                    team_id=team_id, user_id=user_id, kind=kind.value, target=target,
                    created_at=now, last_state=last_state,
                )
            )  # fmt: skip
        return Added.ADDED

    def remove(self, team_id: str, user_id: str, kind: FollowKind, target: str) -> bool:
        with self._db.transaction(f"unfollowing {target!r}") as conn:
            gone = conn.execute(
                sa.delete(follows).where(
                    follows.c.team_id == team_id,
                    follows.c.user_id == user_id,
                    follows.c.kind == kind.value,
                    follows.c.target == target,
                )
            ).rowcount
        return bool(gone)

    def of_user(self, team_id: str, user_id: str) -> list[Follow]:
        with self._db.transaction("reading follows", write=False) as conn:
            rows = conn.execute(
                sa.select(follows)
                .where(follows.c.team_id == team_id, follows.c.user_id == user_id)
                .order_by(follows.c.id)
            ).all()
        return [_record(r) for r in rows]

    def for_prs(self, urls: Iterable[str]) -> list[Follow]:
        """Every PR follow of one of ``urls``, in every workspace."""
        wanted = sorted(set(urls))
        found: list[Follow] = []
        with self._db.transaction("reading PR follows", write=False) as conn:
            for chunk in chunks(wanted):
                rows = conn.execute(
                    sa.select(follows).where(
                        follows.c.kind == FollowKind.PR.value, follows.c.target.in_(list(chunk))
                    )
                ).all()
                found += [_record(r) for r in rows]
        return sorted(found, key=lambda f: f.id)

    def of_words(self) -> list[Follow]:
        """Every words follow, in every workspace."""
        with self._db.transaction("reading word follows", write=False) as conn:
            rows = conn.execute(
                sa.select(follows)
                .where(follows.c.kind == FollowKind.WORDS.value)
                .order_by(follows.c.id)
            ).all()
        return [_record(r) for r in rows]

    def set_states(self, states: Sequence[tuple[int, str]]) -> None:
        """Record each follow's PR state as told."""
        if not states:
            return
        with self._db.transaction(f"recording {len(states)} PR states told") as conn:
            conn.execute(
                sa.update(follows)
                .where(follows.c.id == sa.bindparam("follow_id"))
                .values(last_state=sa.bindparam("state")),
                [{"follow_id": fid, "state": state} for fid, state in states],
            )

    def forget_user(self, team_id: str, user_id: str) -> int:
        with self._db.transaction(f"forgetting {user_id}'s follows") as conn:
            return int(
                conn.execute(
                    sa.delete(follows).where(
                        follows.c.team_id == team_id, follows.c.user_id == user_id
                    )
                ).rowcount
            )
