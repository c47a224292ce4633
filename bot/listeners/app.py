"""The Bolt app factory: settings, store and renderer in, an ``AsyncApp`` with every listener out.

Nothing here builds clients at import time; ``build_app`` is called by the CLI (``serve``,
``run``) and by tests, which pass a client pointed at the Slack fake.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack import make_web_client
from bot.delivery.slack_wait import SlackIdentity
from bot.delivery.tokens import TeamAuthorize, TeamTokens
from bot.jobs import follows
from bot.listeners import home, interactivity, unfurl
from bot.listeners.commands.base import Deps
from bot.listeners.commands.explain import permalinks
from bot.listeners.commands.slash import register_slash
from bot.listeners.commands.ttl import DEFAULT_TTL, TtlCache
from bot.listeners.oauth import build_oauth_flow, register_leaving
from bot.middleware.odd_payloads import quiet_odd_shapes
from bot.middleware.replay import replay_guard
from config.settings import Settings
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.installations import Installations

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SignedApp(AsyncApp):
    """An ``AsyncApp`` that leaves the signature to ``bot.server.asgi``, which checks it on the raw
    bytes before Bolt parses anything: the secret is kept where the server reads it (Bolt
    keeps its own copy privately), and Bolt does not check it again (Socket Mode requests
    are not signed)."""

    def __init__(self, *, signing_secret: str, **kwargs: Any) -> None:
        super().__init__(
            signing_secret=signing_secret, request_verification_enabled=False, **kwargs
        )
        self.signing_secret = signing_secret


def build_app(
    settings: Settings,
    store: Store,
    renderer: Renderer,
    *,
    client: AsyncWebClient | None = None,
    now: Callable[[], datetime] | None = None,
    reply_cache_ttl: float = DEFAULT_TTL,
    installations: Installations | None = None,
    tokens: TeamTokens | None = None,
) -> SignedApp:
    """The Slack app: `/episodes`, buttons, App Home and unfurls over one store.

    ``process_before_response=True``: Bolt's default polls for ``ack()`` every 10 ms, which
    delays every reply (slack-notes); listeners here are fast, and slow work (Web API
    calls) runs in lazy listeners after the HTTP response. ``/episodes`` answers about
    episodes are cached ``reply_cache_ttl`` seconds (0 turns that off); see commands.cache.

    In OAuth mode (``settings.oauth_mode``) the app also serves the install flow and takes
    each request's token from the team's installation (``installations``, ``tokens``: made
    from settings when not given).

    Bolt does not check signatures again: every HTTP request reaches it through
    ``bot.server.asgi.build_asgi``, which verifies the signature on the raw bytes with this
    app's secret first (and refuses everything without one); Socket Mode requests are not
    signed. One check on the raw bytes is enough; a second would only repeat it.
    """
    client = client or make_web_client(settings)
    signing_secret = settings.slack_signing_secret
    if not signing_secret:
        # An empty secret would let anyone sign requests (HMAC with an empty key); a random
        # one rejects every HTTP request instead, while Socket Mode (not signed) still works.
        log.info("no SLACK_SIGNING_SECRET: HTTP requests are refused (Socket Mode unaffected)")
        signing_secret = secrets.token_hex(32)
    deps = Deps(
        settings=settings,
        store=store,
        renderer=renderer,
        now=now or _utcnow,
        permalink=permalinks(settings),
    )
    if settings.oauth_mode:
        app = _oauth_app(settings, store, client, signing_secret, deps, installations, tokens)
    else:
        app = SignedApp(
            name="digestbot",
            process_before_response=True,
            signing_secret=signing_secret,
            client=client,
            # Bolt's own authorization calls auth.test on the first request and refuses it
            # when Slack is down; SlackIdentity answers from the token meanwhile. An
            # AsyncAuthorize instance, which Bolt takes as it is.
            authorize=SlackIdentity(client),
        )
    app.error(quiet_odd_shapes)  # an odd payload's failure: one line, not a traceback
    app.use(replay_guard(store, deps.now))
    register_slash(app, deps, TtlCache(ttl=reply_cache_ttl))
    interactivity.register(app, deps)
    home.register(app, deps)
    unfurl.register(app, deps)
    follows.register(app, deps)
    return app


def _oauth_app(
    settings: Settings,
    store: Store,
    client: AsyncWebClient,
    signing_secret: str,
    deps: Deps,
    installations: Installations | None,
    tokens: TeamTokens | None,
) -> SignedApp:
    """Many workspaces: Bolt's install flow, and every request's token from its team."""
    installations = installations or Installations(
        settings.database_url, settings.slack_client_id or "", settings.digestbot_secret_key
    )
    tokens = tokens or TeamTokens.from_settings(settings, installations)
    # Every request's client is a copy of this one, retry handlers included: the watcher
    # sees the token Slack refuses on any request's call, and that team is stopped.
    client.retry_handlers = [tokens.watcher(), *client.retry_handlers]
    app = SignedApp(
        name="digestbot",
        process_before_response=True,
        signing_secret=signing_secret,
        client=client,
        oauth_flow=build_oauth_flow(settings, installations, client, store),
        # An AsyncAuthorize instance (not a function) is what Bolt accepts beside a flow.
        authorize=TeamAuthorize(tokens),
    )
    register_leaving(app, installations, tokens, store)
    return app
