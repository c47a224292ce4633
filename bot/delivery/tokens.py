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

A token Slack refuses (``invalid_auth``, ``token_revoked``, ``account_inactive``… from any
call: a scheduled post, an App Home, an unfurl) stops its team only: :meth:`TeamTokens.refuse`
remembers it, and from then on no call goes out with it — the outbox answers for Slack and
requests are not authorized — until the team's token changes (a re-install, a rotation).
Outages are waited out: the installations unreadable, the last good read is used; a due
refresh failing, the current token while it has not expired; a request whose token cannot
be looked up at all is answered without one, from the store (:class:`TeamAuthorize`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TypeVar

import aiohttp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError, SlackTokenRotationError
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.outbox import Message, PostFailure, SlackOutbox
from bot.delivery.refusals import RefusalWatcher
from config.settings import Settings
from digests.store import Store
from digests.store.installations import Installations

log = logging.getLogger(__name__)

# The team whose channel the current delivery task touches. A context variable, not shared
# state: each of the deliverer's channel tasks has its own copy.
CURRENT_TEAM: ContextVar[str | None] = ContextVar("digestbot_current_team", default=None)

NOT_INSTALLED = "not_installed"
UNINSTALLED = "app_uninstalled"

T = TypeVar("T")


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
        recheck: float = 5.0,
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
        # team → (the token Slack refused, its error); when the team was last re-read
        self._refused: dict[str, tuple[str, str]] = {}
        self._checked: dict[str, float] = {}
        self.recheck = recheck

    @classmethod
    def from_settings(cls, settings: Settings, installations: Installations) -> TeamTokens:
        from bot.delivery.slack import make_web_client

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
            try:
                self._bots = await self.installations.all_bots()
            except Exception as exc:  # the database is down or silent: keep the last read
                if self._loaded_at is None:
                    raise
                log.warning("cannot re-read the installations (%s): using the last read", exc)
            self._loaded_at = now
        bot = self._bots.get(team_id)
        if bot is not None and self._stale_refusal(team_id, bot, now):
            bot = None  # refused: has it been installed again? (one query per ``recheck``)
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
            try:
                bot = await self.installations.refresh(team_id, self._refresh)
            except Exception as exc:
                expires = current.bot_token_expires_at if current is not None else None
                if current is None or expires is None or expires <= self.clock():
                    raise
                # Slack or the database is out: the token is good until it expires.
                log.warning("cannot refresh the token of team %s (%s): using it", team_id, exc)
                return current
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

    def _stale_refusal(self, team_id: str, bot: Bot, now: float) -> bool:
        refused = self._refused.get(team_id)
        if refused is None or refused[0] != bot.bot_token:
            return False
        if now - self._checked.get(team_id, float("-inf")) < self.recheck:
            return False
        self._checked[team_id] = now
        return True

    def cached(self, team_id: str) -> Bot | None:
        """The team's bot as last read, if its token has not expired (for an outage)."""
        bot = self._bots.get(team_id)
        if bot is None or not bot.bot_token:
            return None
        expires = bot.bot_token_expires_at
        return bot if expires is None or expires > self.clock() else None

    def forget(self, team_id: str) -> None:
        self._bots.pop(team_id, None)
        self._refused.pop(team_id, None)
        self._checked.pop(team_id, None)

    def refuse(self, team_id: str, token: str, error: str) -> None:
        """Slack refused ``token`` of ``team_id``: no call goes out with it any more. The
        team is read again from the database at its next lookup (a re-install elsewhere)."""
        if self._refused.get(team_id, ("", ""))[0] != token:
            log.error("Slack refused the token of team %s (%s): stopping that team", team_id, error)
        self._refused[team_id] = (token, error)
        known = self._bots.get(team_id)
        if known is not None and known.bot_token == token:
            self._bots.pop(team_id, None)

    def refuse_token(self, token: str, error: str) -> None:
        """As :meth:`refuse`, for a token known only by its value (a request's client)."""
        team = next((t for t, b in self._bots.items() if b.bot_token == token), None)
        if team is not None:
            self.refuse(team, token, error)

    def refusal(self, team_id: str, bot: Bot) -> str | None:
        """Slack's error if ``bot``'s token is the one it refused; a new token clears it."""
        refused = self._refused.get(team_id)
        if refused is None:
            return None
        if refused[0] == bot.bot_token:
            return refused[1]
        del self._refused[team_id]
        log.warning("team %s has a new token: serving it again", team_id)
        return None

    def watcher(self) -> RefusalWatcher:
        """A retry handler for request clients that tells this of refused tokens."""
        return RefusalWatcher(self)


class TeamAuthorize(AsyncAuthorize):
    """Bolt's authorize for requests: the bot of the team the request comes from.

    None (Bolt's "installation no longer available") for a team not installed or whose
    token Slack refused. When the lookup fails or takes over ``wait`` seconds (the database
    down, Slack out during a due refresh), the token last read is used while it has not
    expired; without one the request is let through without a token: slash commands answer
    from the store (which says when the database is not answering) instead of Slack showing
    the user a failure. The lookup goes on in the background meanwhile — a refresh is never
    cut off halfway.
    """

    def __init__(self, tokens: TeamTokens, *, wait: float = 1.5) -> None:
        self.tokens = tokens
        self.wait = wait

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
        lookup = asyncio.ensure_future(self.tokens.bot(team_id))
        try:
            bot = await asyncio.wait_for(asyncio.shield(lookup), self.wait)
        except Exception as exc:  # an outage: the token we have, or none (from the store)
            lookup.add_done_callback(_quiet)
            bot = self.tokens.cached(team_id)
            if bot is None:
                log.warning("no token for team %s (%r): answering without one", team_id, exc)
                return AuthorizeResult(
                    enterprise_id=enterprise_id, team_id=team_id, user_id=user_id
                )
        if bot is None or self.tokens.refusal(team_id, bot) is not None:
            return None
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            user_id=user_id,
            bot_id=bot.bot_id,
            bot_user_id=bot.bot_user_id,
            bot_token=bot.bot_token,
        )


def _quiet(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("token lookup failed: %s", task.exception())


OnMissing = Callable[[str], Awaitable[None]]


class TeamOutbox:
    """An outbox posting with each team's own token (see the module docstring).

    One aiohttp session for every team's clients: a fan-out over many teams reuses its
    connections to Slack as a single team's does. A token Slack refuses stops its team only
    (:meth:`TeamTokens.refuse`), until the team has another one, so a deliverer's stop of
    a team lasts one batch here (``tokens_per_team``) and not until a restart.
    """

    tokens_per_team = True

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

    async def _outbox(self, method: str) -> tuple[str, str, SlackOutbox]:
        """The current team, its token and the outbox posting with it."""
        team = CURRENT_TEAM.get()
        if team is None:
            raise PostFailure(method, "no team for this call", "fatal")
        try:
            bot = await self.tokens.bot(team)
        except (SlackTokenRotationError, SlackApiError) as exc:
            log.error("cannot refresh the token of team %s: %s", team, exc)
            raise PostFailure(method, "token_refresh_failed", "auth") from exc
        except Exception as exc:  # Slack out during a due refresh, the database down
            raise PostFailure(method, f"no token yet: {exc!r}"[:200], "server") from exc
        if bot is None or not bot.bot_token:
            if self.on_missing is not None and team not in self._told:
                self._told.add(team)
                await self.on_missing(team)
            raise PostFailure(method, NOT_INSTALLED, "auth")
        self._told.discard(team)
        refused = self.tokens.refusal(team, bot)
        if refused is not None:
            raise PostFailure(method, refused, "auth")  # Slack said so: not asked again
        token = bot.bot_token
        known = self._outboxes.get(team)
        if known is not None and known[0] == token:
            return team, token, known[1]
        outbox = SlackOutbox.from_settings(
            self.settings.model_copy(update={"slack_bot_token": token})
        )
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=100),
                timeout=aiohttp.ClientTimeout(total=outbox.client.timeout),
            )
        outbox.client.session = self._session
        outbox.post_client.session = self._session
        self._outboxes[team] = (token, outbox)
        return team, token, outbox

    async def _call(self, method: str, act: Callable[[SlackOutbox], Awaitable[T]]) -> T:
        """``act`` with the team's outbox. A refused token is dead: the team stops, unless
        the database already has another one (re-installed since our last read; a refused
        call posted nothing, so it is made once more with that one)."""
        for attempt in (1, 2):
            team, token, outbox = await self._outbox(method)
            try:
                return await act(outbox)
            except PostFailure as exc:
                if exc.category != "auth":
                    raise
                self.tokens.refuse(team, token, exc.error)
                self._outboxes.pop(team, None)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        return await self._call(
            "chat.postMessage",
            lambda o: o.post(channel, message, metadata=metadata, thread_ts=thread_ts),
        )

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        await self._call("chat.update", lambda o: o.update(channel, ts, message, metadata=metadata))

    async def delete(self, channel: str, ts: str) -> None:
        await self._call("chat.delete", lambda o: o.delete(channel, ts))

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        return await self._call(
            "conversations.history",
            lambda o: o.find(channel, key, oldest=oldest, thread_ts=thread_ts),
        )

    async def join(self, channel: str) -> bool:
        return await self._call("conversations.join", lambda o: o.join(channel))

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
    installations = Installations(
        settings.database_url, settings.slack_client_id or "", settings.digestbot_secret_key
    )
    tokens = TeamTokens.from_settings(settings, installations)

    async def missing(team_id: str) -> None:
        log.error("team %s has no installation: its subscriptions are paused", team_id)
        if store is not None:
            await asyncio.to_thread(pause_team, store, team_id, NOT_INSTALLED, datetime.now(UTC))

    return TeamOutbox(settings, tokens, missing, owned=installations)
