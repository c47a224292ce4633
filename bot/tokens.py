"""A token for every act in OAuth mode: each team's bot token, looked up when it is used.

Requests from Slack get theirs through :class:`TeamAuthorize` (Bolt's ``authorize``);
scheduled work (poll deliveries, recaps, notices, pause DMs, the sweeper) goes through
:class:`TeamOutbox`, which posts with the token of the team the deliverer is working for
(:data:`CURRENT_TEAM`, set per channel sequence by the deliverer).

:class:`TeamTokens` keeps every team's bot in memory, reloaded in one query at most every
``max_age`` seconds (an install, an uninstall or a rotation by another process shows up
then), so a fan-out does not cost a query per post. A rotating token due for refresh is
refreshed under the database lock of :meth:`Installations.refresh`, which re-reads the
token first: of two clocks, the second finds it already refreshed and spends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import aiohttp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError, SlackTokenRotationError
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient

from bot.outbox import Message, PostFailure, SlackOutbox
from config.settings import Settings
from digests.store import Store
from digests.store.installations import Installations

log = logging.getLogger(__name__)

# The team whose channel the current delivery task touches. A context variable, not shared
# state: each of the deliverer's channel tasks has its own copy.
CURRENT_TEAM: ContextVar[str | None] = ContextVar("digestbot_current_team", default=None)

NOT_INSTALLED = "not_installed"
UNINSTALLED = "app_uninstalled"


def pause_team(store: Store, team_id: str, reason: str, now: datetime) -> int:
    """Pause every active subscription of a team (it has no installation any more)."""
    paused = 0
    channels = {sub.channel_id for sub in store.subscriptions(team_id=team_id)}
    for channel in sorted(channels):
        paused += len(store.pause_subscriptions(team_id, channel, reason, now))
    return paused


class TeamTokens:
    """Every team's bot, cached; see the module docstring."""

    def __init__(
        self,
        installations: Installations,
        client: AsyncWebClient,
        *,
        client_id: str,
        client_secret: str,
        refresh_minutes: int = 120,
        max_age: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.installations = installations
        self.refresh_minutes = refresh_minutes
        self.max_age = max_age
        self.clock = clock
        self._rotator = AsyncTokenRotator(
            client_id=client_id, client_secret=client_secret, client=client
        )
        self._bots: dict[str, Bot] = {}
        self._loaded_at: float | None = None
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def from_settings(cls, settings: Settings, installations: Installations) -> TeamTokens:
        from bot.slack import make_web_client

        return cls(
            installations,
            make_web_client(settings.model_copy(update={"slack_bot_token": None})),
            client_id=settings.slack_client_id or "",
            client_secret=settings.slack_client_secret or "",
            refresh_minutes=settings.slack_token_refresh_minutes,
        )

    def _due(self, bot: Bot) -> bool:
        expires = bot.bot_token_expires_at
        return expires is not None and expires <= self.clock() + self.refresh_minutes * 60

    async def bot(self, team_id: str) -> Bot | None:
        """The team's bot with a token good for a while, or None when it is not installed."""
        now = self.clock()
        if self._loaded_at is None or now - self._loaded_at > self.max_age:
            self._bots = await self.installations.all_bots()
            self._loaded_at = now
        bot = self._bots.get(team_id)
        if bot is None:
            # Installed since the last load (the install page runs in this process too).
            bot = await self.installations.bot(team_id)
            if bot is None:
                return None
            self._bots[team_id] = bot
        if self._due(bot):
            return await self._rotate(team_id)
        return bot

    async def _rotate(self, team_id: str) -> Bot | None:
        lock = self._locks.setdefault(team_id, asyncio.Lock())
        async with lock:
            current = self._bots.get(team_id)
            if current is not None and not self._due(current):
                return current  # another task of ours just refreshed it
            bot = await self.installations.refresh(team_id, self._refresh)
            if bot is None:
                self._bots.pop(team_id, None)
            else:
                self._bots[team_id] = bot
            return bot

    async def _refresh(self, bot: Bot) -> Bot | None:
        if not self._due(bot):
            return None  # another process refreshed it while we waited for the lock
        rotated = await self._rotator.perform_bot_token_rotation(
            bot=bot, minutes_before_expiration=self.refresh_minutes
        )
        log.info("refreshed the bot token of team %s", bot.team_id)
        return rotated

    def forget(self, team_id: str) -> None:
        self._bots.pop(team_id, None)


class TeamAuthorize(AsyncAuthorize):
    """Bolt's authorize for requests: the bot of the team the request comes from."""

    def __init__(self, tokens: TeamTokens) -> None:
        self.tokens = tokens

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult | None:
        if not team_id:
            return None
        bot = await self.tokens.bot(team_id)
        if bot is None:
            return None
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            user_id=user_id,
            bot_id=bot.bot_id,
            bot_user_id=bot.bot_user_id,
            bot_token=bot.bot_token,
        )


OnMissing = Callable[[str], Awaitable[None]]


class TeamOutbox:
    """An outbox posting with each team's own token (see the module docstring).

    One aiohttp session for every team's clients: a fan-out over many teams reuses its
    connections to Slack as a single team's does.
    """

    def __init__(
        self,
        settings: Settings,
        tokens: TeamTokens,
        on_missing: OnMissing | None = None,
        *,
        owned: Installations | None = None,
    ) -> None:
        self.settings = settings
        self.tokens = tokens
        self.on_missing = on_missing
        self._owned = owned
        self._outboxes: dict[str, tuple[str, SlackOutbox]] = {}
        self._session: aiohttp.ClientSession | None = None
        self._told: set[str] = set()

    async def _outbox(self, method: str) -> SlackOutbox:
        team = CURRENT_TEAM.get()
        if team is None:
            raise PostFailure(method, "no team for this call", "fatal")
        try:
            bot = await self.tokens.bot(team)
        except (SlackTokenRotationError, SlackApiError) as exc:
            log.error("cannot refresh the token of team %s: %s", team, exc)
            raise PostFailure(method, "token_refresh_failed", "auth") from exc
        if bot is None or not bot.bot_token:
            if self.on_missing is not None and team not in self._told:
                self._told.add(team)
                await self.on_missing(team)
            raise PostFailure(method, NOT_INSTALLED, "auth")
        known = self._outboxes.get(team)
        if known is not None and known[0] == bot.bot_token:
            return known[1]
        outbox = SlackOutbox.from_settings(
            self.settings.model_copy(update={"slack_bot_token": bot.bot_token})
        )
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=100),
                timeout=aiohttp.ClientTimeout(total=outbox.client.timeout),
            )
        outbox.client.session = self._session
        outbox.post_client.session = self._session
        self._outboxes[team] = (bot.bot_token, outbox)
        return outbox

    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        outbox = await self._outbox("chat.postMessage")
        return await outbox.post(channel, message, metadata=metadata, thread_ts=thread_ts)

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        outbox = await self._outbox("chat.update")
        await outbox.update(channel, ts, message, metadata=metadata)

    async def delete(self, channel: str, ts: str) -> None:
        await (await self._outbox("chat.delete")).delete(channel, ts)

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        outbox = await self._outbox("conversations.history")
        return await outbox.find(channel, key, oldest=oldest, thread_ts=thread_ts)

    async def join(self, channel: str) -> bool:
        return await (await self._outbox("conversations.join")).join(channel)

    async def close(self) -> None:
        self._outboxes.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._owned is not None:
            await self._owned.close()


def team_outbox(settings: Settings, store: Store | None) -> TeamOutbox:
    """The OAuth mode's outbox for scheduled work; a team found without an installation
    has its subscriptions paused (``not_installed``) in ``store``."""
    installations = Installations(settings.database_url, settings.slack_client_id or "")
    tokens = TeamTokens.from_settings(settings, installations)

    async def missing(team_id: str) -> None:
        log.error("team %s has no installation: its subscriptions are paused", team_id)
        if store is not None:
            await asyncio.to_thread(pause_team, store, team_id, NOT_INSTALLED, datetime.now(UTC))

    return TeamOutbox(settings, tokens, missing, owned=installations)
