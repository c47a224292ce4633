"""Subscriptions, their pauses, and the tombstones of unsubscribed config-file ones."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from digests.filters import Filter
from digests.store.database import Database, aware, clean
from digests.store.schema import subscriptions
from digests.types import Subscription

_SOURCES = ("config", "slash")


@functools.cache
def _teams_following() -> sa.Select[Any]:
    c = subscriptions.c
    return (
        sa.select(c.team_id)
        .where(
            c.show == sa.bindparam("show", type_=c.show.type),
            c.paused_reason.is_(None),
            c.unsubscribed_at.is_(None),
        )
        .group_by(c.team_id)
        .order_by(c.team_id)
    )


def _subscription(row: sa.Row[Any]) -> Subscription:
    return Subscription(
        team_id=row.team_id,
        channel_id=row.channel_id,
        show=row.show,
        keywords=filter_from_json(row.filter).terms(),
        recap=bool(row.recap),
        pr_updates=bool(row.pr_updates),
        paused_reason=row.paused_reason,
        paused_at=row.paused_at,
        source=cast(Literal["config", "slash"], row.source),
        created_at=row.created_at,
        created_by=row.created_by,
        unsubscribed_at=row.unsubscribed_at,
        held_at=row.held_at,
        held_until=row.held_until,
        daily_at=row.daily_at,
        mode_changed_at=row.mode_changed_at,
    )


@functools.cache
def _listing(
    equal: tuple[str, ...], include_paused: bool, include_unsubscribed: bool
) -> sa.Select[Any]:
    """``subscriptions``' statement for its shape (``equal``: the columns it is given a
    value of, bound at execution), built once: every command reads the channel's."""
    stmt = sa.select(subscriptions).order_by(
        subscriptions.c.team_id, subscriptions.c.channel_id, subscriptions.c.show
    )
    for name in equal:
        column = subscriptions.c[name]
        stmt = stmt.where(column == sa.bindparam(name, type_=column.type))
    if not include_paused:
        stmt = stmt.where(subscriptions.c.paused_reason.is_(None))
    if not include_unsubscribed:
        stmt = stmt.where(subscriptions.c.unsubscribed_at.is_(None))
    return stmt


# The ``filter`` column: each kind of term under its key, in the order given.
_KINDS = (("any", "any_of"), ("all", "all_of"), ("none", "none_of"))


def filter_to_json(chosen: Filter) -> dict[str, list[str]]:
    return {key: list(getattr(chosen, attr)) for key, attr in _KINDS}


def filter_from_json(value: Any) -> Filter:
    """The stored filter; a missing kind (``{}``: the column's default) has no terms."""
    stored = value if isinstance(value, dict) else {}
    return Filter(**{attr: tuple(stored.get(key) or ()) for key, attr in _KINDS})


def _filter(keywords: Sequence[str], chosen: Filter | None) -> Filter:
    """The filter to store: ``chosen``, or ``keywords`` read as terms (the config file's
    as typed there); NULs and runs of whitespace go, repeats in any case go."""
    terms = chosen.terms() if chosen is not None else keywords
    return Filter.from_terms((clean(t) for t in terms), strict=False)


# Which shows a call is about: one name, several (a tuple), or None for all of them.
Shows = str | tuple[str, ...] | None


def of_shows(show: str | tuple[str, ...]) -> sa.ColumnElement[bool]:
    """The ``subscriptions.show`` condition for one show's name or a tuple of them."""
    if isinstance(show, tuple):
        return subscriptions.c.show.in_(show)
    return subscriptions.c.show == show


class _Keep:
    """``subscribe(daily_at=KEEP)``: the mode the subscription had (per episode if new)."""


KEEP = _Keep()


def _mode_values(daily_at: str | _Keep | None, now: datetime) -> dict[str, Any]:
    """The columns a subscribe sets for its mode: ``daily_at``, and ``mode_changed_at`` (now)
    only when the mode changes between per-episode and daily."""
    if isinstance(daily_at, _Keep):
        return {}
    was_other = (
        subscriptions.c.daily_at.is_not(None)
        if daily_at is None
        else subscriptions.c.daily_at.is_(None)
    )
    return {
        "daily_at": daily_at,
        "mode_changed_at": sa.case((was_other, now), else_=subscriptions.c.mode_changed_at),
    }


class SubscriptionsMixin:
    """The ``subscriptions`` aggregate of :class:`digests.store.Store`."""

    _db: Database

    def subscribe(
        self,
        team_id: str,
        channel_id: str,
        show: str,
        keywords: Sequence[str] = (),
        recap: bool = True,
        source: str = "slash",
        created_by: str | None = None,
        filter: Filter | None = None,
        daily_at: str | _Keep | None = KEEP,
        changed_at: datetime | None = None,
        pr_updates: bool | None = None,
    ) -> Subscription:
        """Create or replace; also un-pauses, and revives one a user unsubscribed.

        The filter is ``filter``, or ``keywords`` read as its terms (``x``, ``+x``, ``-x``).

        ``daily_at`` ("HH:MM"): daily digest mode; None: a digest per episode; ``KEEP``: the
        mode it had (per episode for a new one). Changing mode stamps ``mode_changed_at``
        with ``changed_at`` (the caller's clock; default now).

        A subscription from the config file stays ``config`` when a user replaces its
        filter by slash command, so unsubscribing it still warns where it came from.
        ``created_by`` (the Slack user) replaces the earlier one when given.
        """
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {_SOURCES}, not {source!r}")
        values: dict[str, Any] = {
            "filter": filter_to_json(_filter(keywords, filter)),
            "recap": recap,
            "paused_reason": None,
            "paused_at": None,
            "unsubscribed_at": None,
            "source": source,
            "created_by": created_by or None,
        }
        if pr_updates is not None:  # None: as it was (off for a new one)
            values["pr_updates"] = pr_updates
        insert_ = (
            pg_dialect.insert(subscriptions)
            if self._db.dialect == "postgresql"
            else sqlite_dialect.insert(subscriptions)
        )
        now = datetime.now(UTC)
        stmt = insert_.values(
            team_id=team_id,
            channel_id=channel_id,
            show=show,
            created_at=now,
            daily_at=None if isinstance(daily_at, _Keep) else daily_at,
        ).values(**values)
        update = (
            values
            | _mode_values(daily_at, aware(changed_at or now, "changed_at"))
            | {
                "source": sa.case(
                    (subscriptions.c.source == "config", "config"), else_=stmt.excluded.source
                ),
                "created_by": sa.func.coalesce(
                    stmt.excluded.created_by, subscriptions.c.created_by
                ),
            }
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["team_id", "channel_id", "show"], set_=update
        )
        with self._db.transaction(f"subscribing {channel_id} to {show!r}") as conn:
            conn.execute(stmt)
            row = conn.execute(
                sa.select(subscriptions).where(
                    subscriptions.c.team_id == team_id,
                    subscriptions.c.channel_id == channel_id,
                    subscriptions.c.show == show,
                )
            ).one()
        return _subscription(row)

    def set_daily_time(self, team_id: str, channel_id: str, daily_at: str) -> int:
        """Move the channel's daily subscriptions to ``daily_at`` (a channel gets one daily
        message, at one time); how many changed."""
        with self._db.transaction(f"setting {channel_id}'s daily time") as conn:
            changed = conn.execute(
                sa.update(subscriptions)
                .where(
                    subscriptions.c.team_id == team_id,
                    subscriptions.c.channel_id == channel_id,
                    subscriptions.c.daily_at.is_not(None),
                    subscriptions.c.daily_at != daily_at,
                )
                .values(daily_at=daily_at)
            ).rowcount
        return int(changed)

    def unsubscribe(self, team_id: str, channel_id: str, show: Shows = None) -> int:
        """Drop the channel's subscription to ``show`` (a name, a tuple of them, or all of
        them when None); the count; several at once or none (one transaction).

        One from the config file is kept as a tombstone (``unsubscribed_at``) instead, so
        the config sync at the next start does not subscribe the channel again.
        """
        where = [
            subscriptions.c.team_id == team_id,
            subscriptions.c.channel_id == channel_id,
            subscriptions.c.unsubscribed_at.is_(None),
        ]
        if show is not None:
            where.append(of_shows(show))
        with self._db.transaction(f"unsubscribing {channel_id}") as conn:
            kept = conn.execute(
                sa.update(subscriptions)
                .where(*where, subscriptions.c.source == "config")
                .values(unsubscribed_at=datetime.now(UTC))
            ).rowcount
            dropped = conn.execute(
                sa.delete(subscriptions).where(*where, subscriptions.c.source != "config")
            ).rowcount
            return int(kept) + int(dropped)

    def rename_subscription(self, team_id: str, channel_id: str, old: str, new: str) -> int:
        """The channel's subscription to ``old`` (tombstone or not) made ``new``'s, as it was;
        dropped instead when the channel already has one of ``new`` (no duplicate). The
        config sync repairs rows stored under a show's name in another case with it."""
        mine = [subscriptions.c.team_id == team_id, subscriptions.c.channel_id == channel_id]
        with self._db.transaction(f"renaming {channel_id}'s {old} subscription") as conn:
            taken = conn.execute(
                sa.select(subscriptions.c.id).where(*mine, subscriptions.c.show == new)
            ).first()
            old_row = sa.and_(*mine, subscriptions.c.show == old)
            if taken is not None:
                return int(conn.execute(sa.delete(subscriptions).where(old_row)).rowcount)
            return int(
                conn.execute(sa.update(subscriptions).where(old_row).values(show=new)).rowcount
            )

    def subscriptions(
        self,
        team_id: str | None = None,
        channel_id: str | None = None,
        show: str | None = None,
        include_paused: bool = True,
        include_unsubscribed: bool = False,
    ) -> list[Subscription]:
        """The subscriptions matching the filters; tombstones only with
        ``include_unsubscribed`` (the config sync needs them, nothing else does)."""
        given = {"team_id": team_id, "channel_id": channel_id, "show": show}
        params = {k: v for k, v in given.items() if v is not None}
        stmt = _listing(tuple(params), include_paused, include_unsubscribed)
        with self._db.transaction("listing subscriptions", write=False) as conn:
            return [_subscription(row) for row in conn.execute(stmt, params)]

    def subscribed_teams(self, show: str) -> list[str]:
        """The workspaces with a channel following ``show`` and not paused, in order."""
        stmt = _teams_following()
        with self._db.transaction("listing a show's workspaces", write=False) as conn:
            return list(conn.execute(stmt, {"show": show}).scalars())

    def pause_subscriptions(
        self, team_id: str, channel_id: str, reason: str, now: datetime
    ) -> list[Subscription]:
        """Pause the channel's active subscriptions and return those this call paused.

        One statement (UPDATE … RETURNING): of two processes pausing the same channel at
        once, only one gets the rows back, so whoever set them up is told once.
        """
        now = aware(now, "now")
        with self._db.transaction(f"pausing {channel_id}") as conn:
            rows = conn.execute(
                sa.update(subscriptions)
                .where(
                    subscriptions.c.team_id == team_id,
                    subscriptions.c.channel_id == channel_id,
                    subscriptions.c.paused_reason.is_(None),
                    subscriptions.c.unsubscribed_at.is_(None),
                )
                .values(paused_reason=reason or "paused", paused_at=now)
                .returning(*subscriptions.c)
            ).all()
        return sorted((_subscription(row) for row in rows), key=lambda sub: sub.show)
