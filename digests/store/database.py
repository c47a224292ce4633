"""The database: engine, transactions, migrations, SQLite tuning, and the one error translator.

Every aggregate of the store (shows, episodes, search, subscriptions, the ledger) works on
one :class:`Database` and reaches SQL only through :meth:`Database.transaction`, so every
SQLAlchemy or driver failure leaves the package the same way: :func:`wrap_exceptions` turns
it into a one-line :class:`StoreError` (no SQL, no parameters, no password).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from digests.errors import StoreError, StoreTimeout
from digests.store.files import private_file

if TYPE_CHECKING:
    from alembic.config import Config

_T = TypeVar("_T")

# Well under SQLite's bound-parameter limit and PostgreSQL's comfortable IN-list size.
CHUNK = 500
# Arbitrary constant: serialises concurrent `migrate()` calls (web + clock starting together)
# on one schema; each schema's lock is this constant's name with the schema's (see
# _migration_key), so deployments (or tests) in other schemas of the database do not wait.
_PG_MIGRATION_LOCK = 0x64696765
_WRITE_ATTEMPTS = 3
_WAL_ATTEMPTS = 25  # about 10 s of waiting, as the busy timeout allows other statements
_PG_CONNECT_TIMEOUT = 10
_SQLITE_BUSY_MS = 10000
# Driver messages of a database that did not answer in time (psycopg, libpq, sqlite3).
_TIMEOUT_MARKS = (
    "timeout expired",
    "timed out",
    "statement timeout",
    "lock timeout",
    "database is locked",
)


def chunks(items: Sequence[_T], size: int = CHUNK) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def aware(value: datetime, name: str) -> datetime:
    if value.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware (got {value.isoformat()})")
    return value.astimezone(UTC)


def clean(text: str) -> str:
    """Feed and user text minus NUL, which PostgreSQL text refuses (and SQLite truncates at)."""
    return text.replace("\x00", "")


def clean_opt(text: str | None) -> str | None:
    return None if text is None else clean(text)


def _reason(error: BaseException) -> str:
    """The first meaningful line of a driver error, without SQLAlchemy's boilerplate."""
    cause = getattr(error, "orig", None) or error
    text = str(cause).strip()
    line = text.splitlines()[0].strip() if text else type(cause).__name__
    return line[:300]


def _timed_out(error: BaseException) -> bool:
    if isinstance(error, sa_exc.TimeoutError):  # no pooled connection came free in time
        return True
    text = str(getattr(error, "orig", None) or error).lower()
    return any(mark in text for mark in _TIMEOUT_MARKS)


@contextmanager
def wrap_exceptions(action: str, where: str = "") -> Iterator[None]:
    """The store's one error translator: any SQLAlchemy/DBAPI error → one-line StoreError.

    ``action`` says what was being done ("saving episodes"), ``where`` names the database
    (its URL without password) for failures of the connection itself. Usable as a
    decorator too (``@wrap_exceptions("…")``). A database that did not answer in time
    raises :class:`StoreTimeout` (a StoreError), so a reply can say so.
    """
    try:
        yield
    except sa_exc.DBAPIError as error:
        kind = StoreTimeout if _timed_out(error) else StoreError
        if error.connection_invalidated or isinstance(
            error, sa_exc.OperationalError | sa_exc.InterfaceError
        ):
            database = f"database {where}" if where else "database"
            raise kind(f"{database} failed while {action}: {_reason(error)}") from error
        raise kind(f"database refused {action}: {_reason(error)}") from error
    except sa_exc.SQLAlchemyError as error:
        kind = StoreTimeout if _timed_out(error) else StoreError
        raise kind(f"database error while {action}: {_reason(error)}") from error


def _alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    script_location = resources.files("digests.store").joinpath("migrations")
    config.set_main_option("script_location", str(script_location))
    return config


def _migration_key(conn: sa.Connection) -> int:
    """The advisory lock key serialising migrations of the connection's schema."""
    schema = conn.execute(sa.select(sa.func.current_schema())).scalar()
    name = f"{_PG_MIGRATION_LOCK:x}:{schema or ''}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def safe_url(engine: sa.Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


class LiveOwners:
    """Owners alive here (their :class:`OwnerLock` is open); a row they hold is never taken
    over from here. One per database object, shared by every ledger over it, since the lock
    and the ledgers that ask about it are separate objects (and threads)."""

    def __init__(self) -> None:
        self._owners: set[str] = set()
        self._lock = threading.Lock()

    def add(self, owner: str) -> None:
        with self._lock:
            self._owners.add(owner)

    def discard(self, owner: str) -> None:
        with self._lock:
            self._owners.discard(owner)

    def __contains__(self, owner: object) -> bool:
        with self._lock:
            return owner in self._owners


_MIGRATIONS = resources.files("digests.store").joinpath("migrations")


@functools.cache
def head_revision() -> str:
    """The newest migration's revision, from the file names: the chain is linear and each
    revision is its file's four-digit number (``0014_….py`` is ``0014``; a test checks this
    agrees with Alembic's own head)."""
    numbers = [
        int(entry.name[:4])
        for entry in _MIGRATIONS.joinpath("versions").iterdir()
        if entry.name.endswith(".py") and entry.name[:4].isdigit()
    ]
    return f"{max(numbers):04d}"


def _current_revision(conn: sa.Connection) -> str | None:
    """The revision Alembic recorded in this database (None: not migrated yet)."""
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


class Database:
    """One engine over SQLite or PostgreSQL, and the transactions every aggregate uses."""

    def __init__(self, url: str, *, wait: float | None = None) -> None:
        """Create the engine (no connection yet). ``url`` is a SQLAlchemy URL.

        ``wait``: how long, in seconds, one connect, statement, lock or busy database may
        hold a caller up (a request path's store: Slack gives a reply 3 s); None keeps the
        long defaults of batch work. Migrations are exempt: they wait as long as needed.
        """
        try:
            parsed = make_url(url)
        except (sa_exc.ArgumentError, ValueError) as error:
            # Not echoed: a malformed URL may still carry a password.
            raise StoreError(
                "invalid database URL (expected e.g. sqlite:///path/to/file.db or "
                "postgresql+psycopg://user@host/db)"
            ) from error
        self.safe_url = parsed.render_as_string(hide_password=True)
        try:
            self.engine = sa.create_engine(parsed, **_engine_options(parsed, wait))
        except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ImportError) as error:
            raise StoreError(f"cannot use database {self.safe_url}: {_reason(error)}") from error
        if self.engine.dialect.name == "sqlite":
            _configure_sqlite(self.engine, _SQLITE_BUSY_MS if wait is None else int(wait * 1000))
        # Deliverers alive in this process, for every ledger over this database.
        self.live_owners = LiveOwners()
        # This thread's open ``reading`` transaction, which its reads join.
        self._reading = threading.local()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def errors(self, action: str) -> AbstractContextManager[None]:
        """:func:`wrap_exceptions` naming this database."""
        return wrap_exceptions(action, self.safe_url)

    def migrate(self) -> None:
        """Alembic ``upgrade head`` (programmatic, migrations shipped in the package).

        A database already at :func:`head_revision` is left alone without importing
        Alembic at all: it is ~11 MB of a ``serve`` process's resident memory for the rest
        of its life, and a restart almost always finds the schema current.
        The lock is taken first all the same, so a process that finds it there finds it
        complete.
        """
        with self.transaction("migrating the database", busy_ms=_SQLITE_BUSY_MS) as conn:
            if self.dialect == "postgresql":
                # A request store's short timeouts are for requests, not for the schema.
                conn.execute(sa.text("SET LOCAL statement_timeout = 0"))
                conn.execute(sa.text("SET LOCAL lock_timeout = 0"))
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_migration_key(conn))))
            if _current_revision(conn) == head_revision():
                return
            from alembic import command

            config = _alembic_config()
            # env.py migrates this very connection: no URL (nor password) goes into config.
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def ping(self) -> bool:
        """True when the database answers ``SELECT 1``."""
        try:
            with self.engine.connect() as conn:
                return conn.execute(sa.text("SELECT 1")).scalar() == 1
        except sa_exc.SQLAlchemyError:
            return False

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def transaction(
        self, action: str, write: bool = True, *, busy_ms: int | None = None
    ) -> Iterator[sa.Connection]:
        """One transaction; any database error becomes a one-line ``StoreError``.
        ``busy_ms``: this transaction's SQLite busy timeout, when not the engine's."""
        shared: sa.Connection | None = getattr(self._reading, "conn", None)
        if shared is not None and not write and busy_ms is None:
            with self.errors(action):
                yield shared
            return
        with self.errors(action), self.engine.connect() as conn:
            if write and self.dialect == "sqlite":
                # Take the write lock up front: a deferred transaction that upgrades
                # from read to write fails at once with "database is locked" instead of
                # waiting its turn behind another process.
                conn.execution_options(digestbot_sqlite_begin="IMMEDIATE")
            if busy_ms is not None and self.dialect == "sqlite":
                conn.execution_options(digestbot_sqlite_busy=busy_ms)
            with conn.begin():
                yield conn

    @contextmanager
    def reading(self, action: str) -> Iterator[None]:
        """The reads inside (in this thread) share one transaction: one snapshot, and one
        checkout where each read had its own (on PostgreSQL, each is a ping, BEGIN and
        COMMIT: three round trips). Writes inside still take their own."""
        if getattr(self._reading, "conn", None) is not None:
            yield
            return
        with self.transaction(action, write=False) as conn:
            self._reading.conn = conn
            try:
                yield
            finally:
                self._reading.conn = None

    def write(self, action: str, work: Callable[[sa.Connection], _T]) -> _T:
        """``work`` in a write transaction, run again if a concurrent writer won a race.

        Two pollers that both find a guid missing both insert it; the loser's unique
        violation means "someone else stored it", so a fresh attempt sees the row instead.
        """
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with self.transaction(action) as conn:
                    return work(conn)
            except StoreError as error:
                conflict = isinstance(error.__cause__, sa_exc.IntegrityError)
                if not conflict or attempt == _WRITE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")


def _engine_options(parsed: sa.URL, wait: float | None = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:"):
            # One shared connection, or each pooled connection would see its own empty DB.
            kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
        elif not database.startswith("file:"):
            try:
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StoreError(
                    f"cannot create the directory for {database}: {error.strerror}"
                ) from error
    elif parsed.get_backend_name() == "postgresql":
        kwargs.update(pool_pre_ping=True)
        connect_args: dict[str, Any] = {}
        if "connect_timeout" not in parsed.query:
            # libpq waits for the OS otherwise (minutes) when the host drops packets; its
            # shortest bound is 2 s.
            timeout = _PG_CONNECT_TIMEOUT if wait is None else max(2, math.ceil(wait))
            connect_args["connect_timeout"] = timeout
        if wait is not None:
            # Server-side bounds for a server that answers but is stuck (locks, load);
            # connect_args replaces the URL's own options, so they are kept in front.
            ms = int(wait * 1000)
            given = parsed.query.get("options") or ""
            given = given if isinstance(given, str) else " ".join(given)
            ours = f"-c statement_timeout={ms} -c lock_timeout={ms}"
            connect_args["options"] = f"{given} {ours}".strip()
        if wait is not None:
            kwargs.update(pool_timeout=wait)
        kwargs.update(connect_args=connect_args)
    return kwargs


def _sqlite_wal(cursor: Any) -> bool:
    """Put the database file in WAL mode (once per file: the mode persists); False for an
    in-memory database, which has no WAL.

    Switching needs the file to itself and SQLite reports "database is locked" at once,
    without the busy timeout, when another connection (a web and a clock process starting
    together) has it open: so wait and look again, for about as long as that timeout.
    """
    for attempt in range(_WAL_ATTEMPTS):
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if mode == "memory":
                return False
            if mode != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return True
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == _WAL_ATTEMPTS - 1:
                raise
            time.sleep(min(0.01 * 2**attempt, 0.5))
    raise AssertionError("unreachable")


class _FileIdentity:
    """The SQLite file a database was opened on, checked at every BEGIN and COMMIT.

    SQLite keeps writing to a file deleted (or replaced) under it, and every write then
    reports success while going nowhere the next process will read: a confirmed
    subscription is lost and the delivery ledger with it. Refusing instead makes the
    failure visible where it happens.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: tuple[int, int] | None = None

    def _now(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def remember(self) -> None:
        if self.seen is None:
            self.seen = self._now()

    def check(self) -> None:
        if self.seen is not None and self._now() != self.seen:
            raise StoreError(
                f"database file {self.path} was deleted or replaced while running; "
                "nothing more is saved until digestbot is restarted"
            )


def _sqlite_file(engine: sa.Engine) -> _FileIdentity | None:
    database = engine.url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return _FileIdentity(os.path.abspath(database))


def _configure_sqlite(engine: sa.Engine, busy_ms: int) -> None:
    """Foreign keys, WAL and a busy timeout on every connection; BEGIN issued by us."""
    identity = _sqlite_file(engine)
    if identity is not None:
        private_file(identity.path)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # pysqlite's own transaction handling defers BEGIN and ignores the mode we want.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            if _sqlite_wal(cursor):
                cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()
        if identity is not None:
            identity.remember()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        if identity is not None:
            identity.check()
        options = conn.get_execution_options()
        if busy_ms != _SQLITE_BUSY_MS:
            # A transaction may wait longer than the engine's short default (migrations);
            # set on every BEGIN so the connection goes back to the pool as it came.
            busy = int(options.get("digestbot_sqlite_busy", busy_ms))
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {busy}")
        mode = options.get("digestbot_sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}".strip())

    if identity is not None:
        # Before the COMMIT is sent: a transaction begun before the file went is refused
        # (and rolled back) rather than committed to the deleted file.
        sa.event.listen(engine, "commit", lambda _conn: identity.check())
