"""OAuth mode: the "Add to Slack" flow and leaving, on Bolt's machinery.

``GET /slack/install`` and ``GET /slack/oauth_redirect`` are Bolt's ``AsyncOAuthFlow``
(state issued into the state store and bound to a browser cookie, ``oauth.v2.access`` at
``SLACK_API_URL``, the installation saved by slack_sdk's async SQLAlchemy store); what is
ours is the pages (``oauth_page.html.j2``) and what happens when a team leaves
(``app_uninstalled``, ``tokens_revoked``): its installation is deleted, its subscriptions
paused, and nothing more is posted there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
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

from bot.tokens import UNINSTALLED, TeamTokens, pause_team
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
}


def _pages() -> Environment:
    return Environment(
        loader=PackageLoader("digests", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )


class DigestOAuthFlow(AsyncOAuthFlow):
    """Bolt's flow with digestbot's install, success and failure pages."""

    def __init__(self, *, client: AsyncWebClient, settings: AsyncOAuthSettings) -> None:
        self.pages = _pages()
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

    def _forget_state(self) -> dict[str, Any]:
        return {**HTML, "Set-Cookie": [self.settings.state_utils.build_set_cookie_for_deletion()]}

    async def _success(self, args: AsyncSuccessArgs) -> BoltResponse:
        team = args.installation.team_name or args.installation.team_id
        log.warning("installed in team %s", args.installation.team_id)
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
    settings: Settings, installations: Installations, client: AsyncWebClient
) -> DigestOAuthFlow:
    """The flow for ``settings`` (OAuth mode): ``client`` reaches ``SLACK_API_URL``."""
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
    return DigestOAuthFlow(client=client, settings=oauth_settings)


def register_leaving(
    app: AsyncApp,
    installations: Installations,
    tokens: TeamTokens,
    store: Store,
    now: Callable[[], datetime],
) -> None:
    """``app_uninstalled`` and ``tokens_revoked`` (of the bot): the team is forgotten."""

    async def leave(team_id: str, why: str) -> None:
        await installations.delete_team(team_id)
        tokens.forget(team_id)
        paused = await asyncio.to_thread(pause_team, store, team_id, why, now())
        log.warning("team %s left (%s): installation deleted, %d paused", team_id, why, paused)

    async def uninstalled(body: dict[str, Any]) -> None:
        if body.get("team_id"):
            await leave(str(body["team_id"]), UNINSTALLED)

    async def revoked(body: dict[str, Any], event: dict[str, Any]) -> None:
        bots = (event.get("tokens") or {}).get("bot") or []
        if body.get("team_id") and bots:
            await leave(str(body["team_id"]), "tokens_revoked")

    app.event("app_uninstalled")(uninstalled)
    app.event("tokens_revoked")(revoked)
