"""Locks between processes: who is alive (:class:`OwnerLock`), who polls a show
(:class:`ShowLock`; :class:`ShowLocks` for a cycle's shows at once).

PostgreSQL answers both with session advisory locks named by :func:`advisory_key`, each
within the ledger's :meth:`~digests.store.ledger.Ledger.namespace` (database and schema):
advisory locks are database-wide, an owner's rows are its schema's. Two clocks on one
schema still see each other; deployments in other schemas of the database never do. (An
owner lock before this namespacing was the bare owner name: clocks of that older version
and this one do not see each other, so stop the old clock before starting the new.) On
SQLite (one machine's file) an owner is alive while its process is (owners are named
``host:pid:tag``), and a show poll never contends.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterable
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from digests.errors import StoreError
from digests.store.database import LiveOwners, safe_url, wrap_exceptions


class Ledger(Protocol):
    """What the locks need of :class:`digests.store.ledger.Ledger`: its database, and the
    namespace (database and schema) that keeps two deployments' keys apart."""

    engine: sa.Engine
    live: LiveOwners

    @property
    def is_postgres(self) -> bool: ...

    def namespace(self) -> str: ...



def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_lock`` from any string."""
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def owner_key(ledger: Ledger, owner: str) -> int:
    """The advisory lock key of ``owner`` alive on ``ledger``'s schema."""
    return advisory_key(f"owner:{ledger.namespace()}:{owner}")


def process_alive(owner: str) -> bool:
    """SQLite's answer: a file database is one machine's, and owners are ``host:pid:tag``.

    A pid reused by an unrelated process only makes us wait (alive), never double a post.
    """
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or parts[0] != socket.gethostname():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except PermissionError:  # someone else's process, but a process
        return True
    except (OSError, OverflowError):
        return False
    return True


class OwnerLock:
    """Announces an owner as alive: in this process, and to others via an advisory lock.

    The PostgreSQL lock sits on its own un-pooled connection, so it ends exactly when this
    object is closed or the process dies — a pooled connection would keep it after us.
    """

    def __init__(self, ledger: Ledger, owner: str) -> None:
        self.owner = owner
        self._engine: sa.Engine | None = None
        self._conn: sa.Connection | None = None
        self._key: int | None = None
        self._live = ledger.live
        self._live.add(owner)
        if ledger.is_postgres:
            got = False
            try:
                with wrap_exceptions("taking the owner lock", safe_url(ledger.engine)):
                    self._key = owner_key(ledger, owner)
                    self._engine = sa.create_engine(ledger.engine.url, poolclass=NullPool)
                    self._conn = self._engine.connect()
                    lock = sa.select(sa.func.pg_try_advisory_lock(self._key))
                    got = bool(self._conn.execute(lock).scalar())
                    self._conn.commit()
            except StoreError:
                self.close()
                raise
            if not got:  # never waits: an owner name is unique to one deliverer
                self.close()
                raise StoreError(f"delivery ledger: owner {owner!r} is already in use")

    def close(self) -> None:
        self._live.discard(self.owner)
        if self._conn is not None:
            try:
                # Unlock before closing: the server ends a closed session when it gets to
                # it, and until then another process would still find the owner alive.
                self._conn.execute(sa.select(sa.func.pg_advisory_unlock(self._key)))
                self._conn.commit()
            except sa.exc.SQLAlchemyError:
                pass  # the connection is gone, and the lock with it
            finally:
                self._conn.close()
                self._conn = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


class ShowLock:
    """``pg_try_advisory_lock`` per show poll, so two clocks do not fetch the same feed at once.

    Purely an economy: the claims keep deliveries once without it. On SQLite it always
    succeeds (one process).
    """

    def __init__(self, ledger: Ledger, show: str) -> None:
        self._ledger = ledger
        self._show = show
        self._key: int | None = None
        self._conn: sa.Connection | None = None

    def acquire(self) -> bool:
        if not self._ledger.is_postgres:
            return True
        if self._key is None:
            self._key = advisory_key(f"poll:{self._ledger.namespace()}:{self._show}")
        with wrap_exceptions(f"locking the poll of {self._show!r}", self._where()):
            conn = self._ledger.engine.connect()
            try:
                lock = sa.select(sa.func.pg_try_advisory_lock(self._key))
                got = bool(conn.execute(lock).scalar_one())
                conn.commit()
            except BaseException:
                conn.close()
                raise
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def release(self) -> None:
        if self._conn is not None:
            try:
                with wrap_exceptions(f"unlocking the poll of {self._show!r}", self._where()):
                    self._conn.execute(sa.select(sa.func.pg_advisory_unlock(self._key)))
                    self._conn.commit()
            finally:
                self._conn.close()
                self._conn = None

    def _where(self) -> str:
        return safe_url(self._ledger.engine)


# Take and give back many shows' poll locks in one statement each.
_TRY_LOCKS = sa.text(
    "SELECT k.key, pg_try_advisory_lock(k.key) AS got"
    " FROM unnest(CAST(:keys AS bigint[])) AS k(key)"
)
_UNLOCKS = sa.text("SELECT pg_advisory_unlock(k) FROM unnest(CAST(:keys AS bigint[])) AS k")


class ShowLocks:
    """:class:`ShowLock` for a whole cycle's shows: taken at once on one pooled connection
    (one statement), held until the cycle's polls are done, given back at once. The keys
    are ``ShowLock``'s, so a clock polling one show at a time and one polling a cycle of
    them see each other. On SQLite every show is got and nothing is held.
    """

    def __init__(self, ledger: Ledger, shows: Iterable[str]) -> None:
        self._ledger = ledger
        self._shows = tuple(dict.fromkeys(shows))
        self._held: list[int] = []
        self._conn: sa.Connection | None = None

    def acquire(self) -> frozenset[str]:
        """The shows this cycle may poll (the others: another clock is polling them)."""
        if not self._ledger.is_postgres or not self._shows:
            return frozenset(self._shows)
        space = self._ledger.namespace()
        keys = {advisory_key(f"poll:{space}:{show}"): show for show in self._shows}
        with wrap_exceptions("locking the shows' polls", safe_url(self._ledger.engine)):
            conn = self._ledger.engine.connect()
            try:
                rows = conn.execute(_TRY_LOCKS, {"keys": list(keys)}).all()
                conn.commit()
            except BaseException:
                conn.invalidate()  # a lock taken before the failure ends with the session
                conn.close()
                raise
        self._held = [int(r.key) for r in rows if r.got]
        if self._held:
            self._conn = conn
        else:
            conn.close()
        return frozenset(keys[k] for k in self._held)

    def release(self) -> None:
        """Give every lock back (again: a no-op). A connection that cannot unlock is
        dropped, not pooled: its session, and the locks with it, end with it."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with wrap_exceptions("unlocking the shows' polls", safe_url(self._ledger.engine)):
                try:
                    conn.execute(_UNLOCKS, {"keys": self._held})
                    conn.commit()
                except BaseException:
                    conn.invalidate()
                    raise
        finally:
            self._held = []
            conn.close()
