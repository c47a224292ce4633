"""The delivery ledger: one row per (team, channel, kind, key) in the ``deliveries`` table.

States: ``pending`` (planned, certainly not posted) → ``posting`` (claimed by an owner; the
post may or may not have landed) → ``posted`` (``ts`` known) / ``failed`` (Slack refused it for
good) / ``paused`` (the channel is unreachable; offered again when it is resumed).

Claims are compare-and-set UPDATEs on (state, attempts): ``attempts`` grows with every claim,
so two processes that read the same row cannot both win it — on PostgreSQL the second
UPDATE waits on the first one's row lock and then finds the WHERE no longer true. Whether
the owner of a ``posting`` row is still alive is :mod:`digests.store.owners`'s to say: a
``digestbot worker`` job while it is to do or doing, a process of this host while it runs.

Operations take a ``Connection`` so a caller can group many of them into one transaction;
every one of them, and :meth:`Ledger.run`, reports database failures as the rest of the
store does (:func:`digests.store.database.wrap_exceptions`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from digests.errors import StoreError
from digests.store.database import LiveOwners, chunks, safe_url, wrap_exceptions
from digests.store.owners import PASSED, live_jobs, process_alive
from digests.store.schema import deliveries
from digests.types import Ident, LedgerEntry, LedgerState

T = TypeVar("T")

# An open ledger transaction, opaque to callers: they hand it back to Ledger methods and
# never query it themselves, so SQL stays inside the store package.
Transaction = sa.Connection

__all__ = ["Ident", "Ledger", "LedgerRow", "NewRow", "Transaction"]


_INDEX = ["team_id", "channel_id", "kind", "key"]
_ENSURE = {
    "postgresql": postgresql.insert(deliveries).on_conflict_do_nothing(index_elements=_INDEX),
    "sqlite": sqlite.insert(deliveries).on_conflict_do_nothing(index_elements=_INDEX),
}


@dataclass(frozen=True)
class LedgerRow:
    id: int
    team_id: str
    channel_id: str
    kind: str
    key: str
    state: str
    ts: str | None
    thread_ts: str | None
    content_hash: str | None
    attempts: int
    error: str | None
    owner: str | None
    claimed_at: datetime | None
    updated_at: datetime
    show: str | None = None  # episode rows: the show, so recovery need not parse the key
    edited_at: datetime | None = None  # the digest's last edit for a changed episode

    @property
    def ident(self) -> Ident:
        return (self.team_id, self.channel_id, self.kind, self.key)


@dataclass(frozen=True)
class NewRow:
    team_id: str
    channel_id: str
    kind: str
    key: str
    content_hash: str = ""
    show: str | None = None


def _row(r: sa.Row[object]) -> LedgerRow:
    m = r._mapping
    return LedgerRow(
        id=m["id"],
        team_id=m["team_id"],
        channel_id=m["channel_id"],
        kind=m["kind"],
        key=m["key"],
        state=m["state"],
        ts=m["ts"],
        thread_ts=m["thread_ts"],
        content_hash=m["content_hash"],
        attempts=m["attempts"],
        error=m["error"],
        owner=m["owner"],
        claimed_at=m["claimed_at"],
        updated_at=m["updated_at"],
        show=m["show"],
        edited_at=m["edited_at"],
    )


def claimed_at_of(row: LedgerRow, now: datetime) -> datetime:
    # Taking over a ``posting`` row keeps its ``claimed_at`` (see :meth:`Ledger.claim`).
    if row.state == LedgerState.POSTING and row.claimed_at is not None:
        return row.claimed_at
    return now


class Ledger:
    """Ledger operations over an engine; the store's engine in production."""

    def __init__(self, engine: sa.Engine, live: LiveOwners | None = None) -> None:
        self.engine = engine
        self._url = safe_url(engine)  # for error messages (formatting it costs per call)
        # Owners alive in this process: shared by every ledger of one store.
        self.live = LiveOwners() if live is None else live

    @classmethod
    def for_store(cls, store: object) -> Ledger:
        engine = getattr(store, "engine", None)
        if not isinstance(engine, sa.Engine):
            raise StoreError("the store has no SQL engine for the delivery ledger")
        database = getattr(store, "_db", None)  # the store package's own Database
        return cls(engine, getattr(database, "live_owners", None))

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def run(self, fn: Callable[[sa.Connection], T]) -> T:
        """``fn`` in one transaction, database errors as a one-line :class:`StoreError`."""
        with self.errors("working on the delivery ledger"), self.engine.begin() as conn:
            return fn(conn)

    def errors(self, action: str) -> AbstractContextManager[None]:
        return wrap_exceptions(action, self._url)

    # -- reading ------------------------------------------------------------------------
    def entries(
        self,
        kind: str,
        keys: Iterable[str],
        channels: Iterable[tuple[str, str]] | None = None,
    ) -> dict[tuple[str, str], dict[str, LedgerEntry]]:
        """What each channel has for ``keys``: the input :func:`digests.decide.deliveries.decide`
        wants.

        With ``channels`` (team, channel) the query walks the unique index (team, channel,
        kind, key) instead of scanning every channel's rows.
        """
        wanted = sorted(set(keys))
        out: dict[tuple[str, str], dict[str, LedgerEntry]] = {}
        if not wanted:
            return out
        columns = (
            deliveries.c.team_id,
            deliveries.c.channel_id,
            deliveries.c.key,
            deliveries.c.state,
            deliveries.c.content_hash,
        )
        queries: list[sa.Select[Any]] = []
        if channels is None:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                queries.append(
                    sa.select(*columns).where(
                        deliveries.c.kind == kind, deliveries.c.key.in_(chunk)
                    )
                )
        else:
            by_team: dict[str, set[str]] = {}
            for team, channel in channels:
                by_team.setdefault(team, set()).add(channel)
            for team, chans in sorted(by_team.items()):
                ordered = sorted(chans)
                for start in range(0, len(ordered), 500):
                    queries.append(
                        sa.select(*columns).where(
                            deliveries.c.team_id == team,
                            deliveries.c.channel_id.in_(ordered[start : start + 500]),
                            deliveries.c.kind == kind,
                            deliveries.c.key.in_(wanted),
                        )
                    )

        def read(conn: sa.Connection) -> None:
            for query in queries:
                for team, channel, key, state, content_hash in conn.execute(query):
                    out.setdefault((team, channel), {})[key] = LedgerEntry(
                        state, content_hash or ""
                    )

        self.run(read)
        return out

    def unfinished_shows(self) -> frozenset[str | None]:
        """The shows with an episode row pending or posting (None: a row naming no show),
        along the state index: each such row a plan of its show offers again."""
        query = (
            sa.select(deliveries.c.show)
            .where(deliveries.c.state.in_((LedgerState.PENDING, LedgerState.POSTING)))
            .where(deliveries.c.kind == "episode")
            .distinct()
        )
        return frozenset(self.run(lambda conn: list(conn.execute(query).scalars())))

    def unfinished(self, kind: str, prefix: str) -> list[LedgerRow]:
        """The ``kind`` rows pending or posting whose key starts with ``prefix`` (the daily
        job's catch-ups), along the state index."""
        query = sa.select(deliveries).where(
            deliveries.c.state.in_((LedgerState.PENDING, LedgerState.POSTING)),
            deliveries.c.kind == kind,
            deliveries.c.key.startswith(prefix, autoescape=True),
        )
        return self.run(lambda conn: [_row(r) for r in conn.execute(query)])

    def rows(self, conn: sa.Connection, idents: Sequence[Ident]) -> dict[Ident, LedgerRow]:
        """The rows for ``idents``, looked up along the unique index (see :meth:`entries`)."""
        with self.errors("reading delivery rows"):
            out: dict[Ident, LedgerRow] = {}
            groups: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
            for team, channel, kind, key in idents:
                chans, keys = groups.setdefault((team, kind), (set(), set()))
                chans.add(channel)
                keys.add(key)
            wanted = set(idents)
            for (team, kind), (chans, keys) in sorted(groups.items()):
                ordered_chans, ordered_keys = sorted(chans), sorted(keys)
                for c in range(0, len(ordered_chans), 400):
                    for k in range(0, len(ordered_keys), 400):
                        query = sa.select(deliveries).where(
                            deliveries.c.team_id == team,
                            deliveries.c.channel_id.in_(ordered_chans[c : c + 400]),
                            deliveries.c.kind == kind,
                            deliveries.c.key.in_(ordered_keys[k : k + 400]),
                        )
                        for r in conn.execute(query):
                            row = _row(r)
                            if row.ident in wanted:
                                out[row.ident] = row
            return out

    def all_rows(
        self, team_id: str | None = None, channel_id: str | None = None
    ) -> list[LedgerRow]:
        def read(conn: sa.Connection) -> list[LedgerRow]:
            query = sa.select(deliveries).order_by(deliveries.c.id)
            if team_id is not None:
                query = query.where(deliveries.c.team_id == team_id)
            if channel_id is not None:
                query = query.where(deliveries.c.channel_id == channel_id)
            return [_row(r) for r in conn.execute(query)]

        return self.run(read)

    # -- writing ------------------------------------------------------------------------
    def ensure(
        self,
        conn: sa.Connection,
        rows: Sequence[NewRow],
        now: datetime,
        owner: str | None = None,
    ) -> None:
        """A ``pending`` row for each that has none; existing rows are left as they are.

        ``owner`` is the deliverer about to work through them: while it lives the rows are
        its to-do list, once it is dead they are orphans (:meth:`orphans`).
        """
        if not rows:
            return
        with self.errors("planning deliveries"):
            values = [
                {
                    "team_id": r.team_id,
                    "channel_id": r.channel_id,
                    "kind": r.kind,
                    "key": r.key,
                    "show": r.show,
                    "state": LedgerState.PENDING,
                    "content_hash": r.content_hash,
                    "attempts": 0,
                    "owner": owner,
                    "created_at": now,
                    "updated_at": now,
                }
                for r in rows
            ]
            # One statement for every batch (cached once compiled); SQLAlchemy sends the
            # rows as multi-row VALUES ("insertmanyvalues").
            conn.execute(_ENSURE[conn.dialect.name], values)  # the store's two backends

    def claim(self, conn: sa.Connection, row: LedgerRow, owner: str, now: datetime) -> bool:
        """Take ``row`` as it was read; False when someone changed or claimed it since.

        Taking over a ``posting`` row keeps its ``claimed_at``: that is the earliest a lost
        post could carry, and the history search must reach back that far however many
        recoveries failed in between.
        """
        with self.errors("claiming a delivery"):
            claimed_at = claimed_at_of(row, now)
            result = conn.execute(
                sa.update(deliveries)
                .where(
                    deliveries.c.id == row.id,
                    deliveries.c.state == row.state,
                    deliveries.c.attempts == row.attempts,
                )
                .values(
                    state=LedgerState.POSTING,
                    owner=owner,
                    claimed_at=claimed_at,
                    attempts=row.attempts + 1,
                    updated_at=now,
                )
            )
            return result.rowcount == 1

    def mark(
        self,
        conn: sa.Connection,
        row_id: int,
        holder: str,
        now: datetime,
        *,
        state: str | None = None,
        **values: object,
    ) -> bool:
        """Record progress on a row ``holder`` owns (no-op if the claim was lost).

        ``values`` may set ``owner=None``: giving a row up makes it recoverable at once.
        """
        with self.errors("recording a delivery"):
            changes: dict[str, object] = {"updated_at": now, **values}
            if state is not None:
                changes["state"] = state
            result = conn.execute(
                sa.update(deliveries)
                .where(deliveries.c.id == row_id, deliveries.c.owner == holder)
                .values(**changes)
            )
            return result.rowcount == 1

    def owner_alive(self, owner: str | None) -> bool:
        """Is the owner of a row still on it? (See :mod:`digests.store.owners`.)"""
        return owner is not None and owner in self.alive([owner])

    def alive(self, owners: Iterable[str | None]) -> set[str]:
        """The live ones among ``owners``, the queue's jobs asked about in one query."""
        named = {o for o in owners if o is not None and not o.startswith(PASSED)}
        here = {o for o in named if o in self.live}
        jobs = self.run(lambda conn: live_jobs(conn, named)) if self.is_postgres else set()
        return here | jobs | {o for o in named - here - jobs if process_alive(o)}

    def adopt(
        self, conn: sa.Connection, idents: Sequence[Ident], owner: str, now: datetime
    ) -> None:
        """Unfinished rows whose owner is gone handed to ``owner`` (a job about to deliver
        them, or ``passed:…`` for rows it found no longer wanted): a ``posting`` one stays
        ``posting``, so its new owner looks in the channel before posting it again."""
        unfinished = deliveries.c.state.in_((LedgerState.PENDING, LedgerState.POSTING))
        groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for team, channel, kind, key in idents:
            groups.setdefault((team, kind), []).append((channel, key))
        pair = sa.tuple_(deliveries.c.channel_id, deliveries.c.key)
        with self.errors("handing deliveries over"):
            for (team, kind), pairs in groups.items():
                for part in chunks(pairs):
                    where = (deliveries.c.team_id == team, deliveries.c.kind == kind)
                    conn.execute(
                        sa.update(deliveries)
                        .where(*where, pair.in_(part), unfinished)
                        .values(owner=owner, updated_at=now)
                    )

    def orphans(self, me: str, active: Callable[[Ident], bool]) -> list[LedgerRow]:
        """Unfinished rows nobody is working on: the recovery's to-do list.

        ``pending`` or ``posting`` rows whose owner is dead (or was given up: no owner), and
        ``posting`` rows of ``me`` that ``active`` says no task of ours is on (an attempt that
        ended in an exception). Rows of live owners, ``me``'s pending ones included, are
        left to them: each owner's next poll offers those again; so are rows passed over
        (``passed:…``) until a plan offers them again.
        """
        unfinished = deliveries.c.state.in_((LedgerState.PENDING, LedgerState.POSTING))

        def owners(conn: sa.Connection) -> list[str | None]:
            query = sa.select(deliveries.c.owner).where(unfinished).distinct()
            return [r[0] for r in conn.execute(query)]

        found = [o for o in self.run(owners) if not (o or "").startswith(PASSED)]
        alive = self.alive(o for o in found if o != me)
        dead = [o for o in found if o is not None and o != me and o not in alive]
        mine = me in found

        def read(conn: sa.Connection) -> list[LedgerRow]:
            whose: list[sa.ColumnElement[bool]] = [deliveries.c.owner.is_(None)]
            if dead:
                whose.append(deliveries.c.owner.in_(dead))
            if mine:
                posting = deliveries.c.state == LedgerState.POSTING
                whose.append(sa.and_(deliveries.c.owner == me, posting))
            query = (
                sa.select(deliveries).where(unfinished, sa.or_(*whose)).order_by(deliveries.c.id)
            )
            return [_row(r) for r in conn.execute(query)]

        return [r for r in self.run(read) if r.owner != me or not active(r.ident)]
