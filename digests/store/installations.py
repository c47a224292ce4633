"""Slack installations (OAuth mode): slack_sdk's async stores over the project's database.

The tables are slack_sdk's (``oauth_tables``, created by migration 0010), read and written
by ``AsyncSQLAlchemyInstallationStore`` / ``AsyncSQLAlchemyOAuthStateStore`` on an async
engine to the same database as the store (aiosqlite for SQLite, psycopg's async mode for
PostgreSQL). What slack_sdk has no answer for is here: every team's bot in one query (the
scheduler must not ask once per post) and a refresh of a rotating token under a lock, so
two clocks never both spend the same single-use refresh token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.sqlalchemy import (
    AsyncSQLAlchemyInstallationStore,
    SQLAlchemyInstallationStore,
)
from slack_sdk.oauth.sqlalchemy_utils import normalize_datetime_for_db
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from digests.store.sealed import SealedToken, TokenCipher

INSTALLATIONS = "slack_installations"
BOTS = "slack_bots"
STATES = "slack_oauth_states"
# Seconds an "Add to Slack" link stays good (Bolt's default).
STATE_SECONDS = 600

Refresh = Callable[[Bot], Awaitable[Bot | None]]
# The columns that hold a token: sealed when DIGESTBOT_SECRET_KEY is set (digests.store.sealed),
# so TEXT (migration 0027), not slack_sdk's VARCHAR(200), which a sealed token outgrows.
TOKEN_COLUMNS = ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token")


def oauth_tables(metadata: sa.MetaData, *, as_in_0010: bool = False) -> list[sa.Table]:
    """slack_sdk's three tables in ``metadata``, token columns TEXT (``as_in_0010``: as
    slack_sdk builds them, which migration 0010 created)."""
    tables = [
        AsyncSQLAlchemyInstallationStore.build_installations_table(metadata, INSTALLATIONS),
        AsyncSQLAlchemyInstallationStore.build_bots_table(metadata, BOTS),
        AsyncSQLAlchemyOAuthStateStore.build_oauth_states_table(metadata, STATES),
    ]
    if not as_in_0010:
        _token_type(tables, sa.Text())
    return tables


def _token_type(tables: list[sa.Table], kind: sa.types.TypeEngine[Any]) -> None:
    for table in tables:
        for name in TOKEN_COLUMNS:
            if name in table.c:
                table.c[name].type = kind


def async_url(url: str) -> URL:
    """The store's URL with an async driver: aiosqlite, or psycopg (3) in its async mode."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    return parsed


def _engine(url: str) -> AsyncEngine:
    parsed = async_url(url)
    if parsed.get_backend_name() == "sqlite":
        # The store's own connections write the same file: wait for them, do not fail.
        return create_async_engine(parsed, connect_args={"timeout": 30})
    return create_async_engine(parsed, pool_pre_ping=True)


class OAuthStates(AsyncSQLAlchemyOAuthStateStore):
    """slack_sdk's state store, except that a database that cannot be read is an error to
    report (the flow's outage page), not a state "already used" (slack_sdk's answer)."""

    async def async_consume(self, state: str) -> bool:
        now = normalize_datetime_for_db(datetime.now(tz=UTC))
        c = self.oauth_states.c
        async with self.engine.begin() as conn:
            query = self.oauth_states.select().where(c.state == state, c.expire_at > now)
            row = (await conn.execute(query)).mappings().first()
            if row is None:
                return False
            await conn.execute(self.oauth_states.delete().where(c.id == row["id"]))
            return True


class Installations:
    """The installation and state stores for one Slack app (``client_id``); tokens sealed
    with ``secret_key`` (``DIGESTBOT_SECRET_KEY``), or plain without one."""

    def __init__(self, database_url: str, client_id: str, secret_key: str | None = None) -> None:
        self.engine = _engine(database_url)
        self.client_id = client_id
        self.store = AsyncSQLAlchemyInstallationStore(client_id, self.engine)
        self.cipher = TokenCipher(secret_key) if secret_key else None
        # slack_sdk reads and writes through these two tables: their token columns seal
        # and open on the way, whatever statement slack_sdk or this class builds.
        _token_type([self.store.installations, self.store.bots], SealedToken(self.cipher))
        self.states = OAuthStates(STATE_SECONDS, self.engine)
        self._bots = self.store.bots

    async def reseal(self) -> int:
        """Every stored token sealed with the first key (plain ones, and ones sealed with
        an older key); how many were. A row changed meanwhile (a refresh) is left as the
        refresh wrote it."""
        if self.cipher is None:
            return 0
        count = 0
        for table in (self.store.installations, self.store.bots):
            names = [n for n in TOKEN_COLUMNS if n in table.c]
            raw = sa.table(table.name, sa.column("id"), *(sa.column(n, sa.Text) for n in names))
            async with self.engine.begin() as conn:
                for row in (await conn.execute(sa.select(raw))).mappings().all():
                    count += await self._reseal_row(conn, raw, row, names)
        return count

    async def _reseal_row(
        self, conn: AsyncConnection, raw: Any, row: Any, names: list[str]
    ) -> int:
        assert self.cipher is not None
        values = {n: self.cipher.fresh(row[n]) for n in names if row[n] is not None}
        values = {n: v for n, v in values.items() if v is not None}
        if not values:
            return 0
        same = [raw.c[n] == row[n] for n in values]
        await conn.execute(sa.update(raw).where(raw.c.id == row["id"], *same).values(values))
        return len(values)

    async def bot(self, team_id: str) -> Bot | None:
        return await self.store.async_find_bot(enterprise_id=None, team_id=team_id)

    async def all_bots(self) -> dict[str, Bot]:
        """Every installed team's latest bot, in one query."""
        c = self._bots.c
        query = (
            self._bots.select()
            .where(c.client_id == self.client_id, c.bot_token.is_not(None))
            .order_by(c.installed_at, c.id)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        # Ordered oldest first: the latest installation of a team is the one left.
        return {
            str(row["team_id"]): SQLAlchemyInstallationStore.build_bot_entity(row)
            for row in rows
            if row["team_id"]
        }

    async def refresh(self, team_id: str, refresh: Refresh) -> Bot | None:
        """The team's bot after ``refresh`` ran on it with the team locked; ``refresh``
        returns the rotated bot, or None when no rotation is due.

        The lock is a write on the team's bot rows, taken first in the transaction: on
        PostgreSQL it locks those rows (a second clock waits, then reads the token the
        first one stored), on SQLite it takes the file's write lock. The rotated token is
        stored in the same transaction, before anyone uses it.
        """
        c = self._bots.c
        mine = sa.and_(c.client_id == self.client_id, c.team_id == team_id)
        async with self.engine.begin() as conn:
            await conn.execute(sa.update(self._bots).where(mine).values(bot_token=c.bot_token))
            row = (
                (
                    await conn.execute(
                        self._bots.select()
                        .where(mine, c.bot_token.is_not(None))
                        .order_by(sa.desc(c.installed_at), sa.desc(c.id))
                        .limit(1)
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            bot = SQLAlchemyInstallationStore.build_bot_entity(row)
            rotated = await refresh(bot)
            if rotated is None:
                return bot
            await self._store_rotated(conn, row["id"], bot, rotated)
            return rotated

    async def _store_rotated(
        self, conn: AsyncConnection, row_id: Any, old: Bot, new: Bot
    ) -> None:
        values = {
            "bot_token": new.bot_token,
            "bot_refresh_token": new.bot_refresh_token,
            "bot_token_expires_at": normalize_datetime_for_db(
                new.to_dict().get("bot_token_expires_at")
            ),
        }
        await conn.execute(sa.update(self._bots).where(self._bots.c.id == row_id).values(values))
        # The installations that carried the old token: compared opened (a sealed token
        # is different each time it is sealed).
        i = self.store.installations.c
        rows = await conn.execute(
            sa.select(i.id, i.bot_token).where(
                i.client_id == self.client_id, i.team_id == old.team_id
            )
        )
        ids = [r.id for r in rows if r.bot_token == old.bot_token]
        if ids:
            await conn.execute(
                sa.update(self.store.installations).where(i.id.in_(ids)).values(values)
            )

    async def delete_team(self, team_id: str) -> None:
        """Forget a team's installations and bots (it uninstalled, or revoked the token)."""
        await self.store.async_delete_bot(enterprise_id=None, team_id=team_id)
        await self.store.async_delete_installation(enterprise_id=None, team_id=team_id)

    async def close(self) -> None:
        await self.engine.dispose()
