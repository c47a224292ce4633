"""OAuth mode: the "Add to Slack" flow and leaving, on Bolt's machinery.

``GET /slack/install`` and ``GET /slack/oauth_redirect`` are Bolt's ``AsyncOAuthFlow``
(state issued into the state store and bound to a browser cookie, ``oauth.v2.access`` at
``SLACK_API_URL``, the installation saved by slack_sdk's async SQLAlchemy store); what is
ours is the pages (``oauth_page.html.j2``), what an install sets going and what happens
when a team leaves.

Leaving (``app_uninstalled``, ``tokens_revoked`` of the bot): the installation is deleted and
the store forgets the team (``Store.forget_team``: its subscriptions with their user ids,
every ledger row, pending ones included), so nothing more is posted there and a re-install
starts clean. Installing: the config file's channels naming the team are subscribed (they
are the operator's, and come back with every install) and subscriptions paused for want of
an installation (``not_installed``) go on. An outage in the flow (the database, Slack)
gets a page that says so instead of a server error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from slack_bolt.async_app import AsyncApp
from slack_bolt.oauth.async_callback_options import (
    AsyncCallbackOptions,
    AsyncFailureArgs,
    AsyncSuccessArgs,
)
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.tokens import NOT_INSTALLED, UNINSTALLED, TeamTokens
from bot.runtime import sync_config_channels
from config.settings import Settings
from digests.store import Store
from digests.store.installations import STATE_SECONDS, Installations

log = logging.getLogger(__name__)

HTML = {"Content-Type": "text/html; charset=utf-8"}
# What each scope is for, on the install page.
SCOPE_HELP = {
    "chat:write": "post digests and recaps",
    "chat:write.public": "post to a public channel it was not invited to, once subscribed",
    "channels:join": "join a public channel that subscribed",
    "channels:history": "find its own earlier posts after a restart, so none is posted twice",
    "commands": "answer /episodes",
    "links:read": "see links to episodes",
    "links:write": "show a preview of those links",
    "users:read": "let only workspace admins and owners add shows (/episodes add-show)",
}


def _pages() -> Environment:
    return Environment(
        loader=PackageLoader("digests.render", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )


OnInstalled = Callable[[str], Awaitable[None]]


class DigestOAuthFlow(AsyncOAuthFlow):
    """Bolt's flow with digestbot's install, success and failure pages."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        settings: AsyncOAuthSettings,
        on_installed: OnInstalled | None = None,
    ) -> None:
        self.pages = _pages()
        self.on_installed = on_installed
        settings.callback_options = AsyncCallbackOptions(
            success=self._success, failure=self._failure
        )
        super().__init__(client=client, settings=settings)

    def render(self, **values: Any) -> str:
        return self.pages.get_template("oauth_page.html.j2").render(
            install_path=self.settings.install_path, **values
        )

    async def build_install_page_html(self, url: str, request: AsyncBoltRequest) -> str:
        return self.render(
            page="install", url=url, scopes=self.settings.scopes or [], scope_help=SCOPE_HELP
        )

    async def handle_installation(self, request: AsyncBoltRequest) -> BoltResponse:
        try:
            return await super().handle_installation(request)
        except Exception:  # the state store (the database) is down
            log.exception("the install page failed")
            return self._unavailable()

    async def handle_callback(self, request: AsyncBoltRequest) -> BoltResponse:
        try:
            return await super().handle_callback(request)
        except Exception:  # Slack unreachable for oauth.v2.access, the database down
            log.exception("the installation could not be completed")
            return self._unavailable()

    def _unavailable(self) -> BoltResponse:
        body = self.render(page="failed", reason="unavailable")
        return BoltResponse(status=503, body=body, headers={**HTML, "Retry-After": "60"})

    def _forget_state(self) -> dict[str, Any]:
        return {**HTML, "Set-Cookie": [self.settings.state_utils.build_set_cookie_for_deletion()]}

    async def _success(self, args: AsyncSuccessArgs) -> BoltResponse:
        team = args.installation.team_name or args.installation.team_id
        log.warning("installed in team %s", args.installation.team_id)
        if self.on_installed is not None and args.installation.team_id:
            try:
                await self.on_installed(args.installation.team_id)
            except Exception:  # the installation stands; its config channels come at start
                log.exception("setting up team %s failed", args.installation.team_id)
        return BoltResponse(
            status=200, body=self.render(page="done", team=team), headers=self._forget_state()
        )

    async def _failure(self, args: AsyncFailureArgs) -> BoltResponse:
        log.warning("installation failed: %s", args.reason)
        return BoltResponse(
            status=args.suggested_status_code,
            body=self.render(page="failed", reason=args.reason),
            headers=self._forget_state(),
        )


def build_oauth_flow(
    settings: Settings,
    installations: Installations,
    client: AsyncWebClient,
    store: Store | None = None,
) -> DigestOAuthFlow:
    """The flow for ``settings`` (OAuth mode): ``client`` reaches ``SLACK_API_URL``; with
    ``store``, an install sets the team up there (see the module docstring)."""
    oauth_settings = AsyncOAuthSettings(
        client_id=settings.slack_client_id,
        client_secret=settings.slack_client_secret,
        scopes=list(settings.slack_scopes),
        user_scopes=[],
        redirect_uri=settings.slack_redirect_uri,
        installation_store=installations.store,
        installation_store_bot_only=True,
        state_store=installations.states,
        state_expiration_seconds=STATE_SECONDS,
        token_rotation_expiration_minutes=settings.slack_token_refresh_minutes,
        authorization_url=settings.slack_authorize_url,
    )

    async def installed(team_id: str) -> None:
        if store is not None:
            await asyncio.to_thread(welcome_team, settings, store, team_id)

    return DigestOAuthFlow(client=client, settings=oauth_settings, on_installed=installed)


def welcome_team(settings: Settings, store: Store, team_id: str) -> None:
    """A team installed: its config-file channels subscribed, its not-installed pauses over."""
    added = sync_config_channels(settings, store, team_id, only_team=team_id)
    resumed = store.resume_team(team_id, NOT_INSTALLED)
    if added or resumed:
        log.warning("team %s: %d config channel subscription(s) added, %d resumed",
                    team_id, added, resumed)  # fmt: skip


def register_leaving(
    app: AsyncApp, installations: Installations, tokens: TeamTokens, store: Store
) -> None:
    """``app_uninstalled`` and ``tokens_revoked`` (of the bot): the team is forgotten."""

    async def leave(team_id: str, why: str) -> None:
        await installations.delete_team(team_id)
        tokens.forget(team_id)
        gone = await asyncio.to_thread(store.forget_team, team_id)
        log.warning("team %s left (%s): installation deleted, %d subscription(s), "
                    "%d unfinished and %d posted ledger row(s) removed", team_id, why,
                    gone.subscriptions, gone.unfinished, gone.posted)  # fmt: skip

    async def uninstalled(body: dict[str, Any]) -> None:
        if body.get("team_id"):
            await leave(str(body["team_id"]), UNINSTALLED)

    async def revoked(body: dict[str, Any], event: dict[str, Any]) -> None:
        bots = (event.get("tokens") or {}).get("bot") or []
        if body.get("team_id") and bots:
            await leave(str(body["team_id"]), "tokens_revoked")

    app.event("app_uninstalled")(uninstalled)
    app.event("tokens_revoked")(revoked)
