"""How long a Slack call may wait on request paths, and the app's identity that survives an outage.

slack_sdk's ``AsyncRateLimitErrorRetryHandler`` sleeps whatever ``Retry-After`` says (an
hour, three times over) before failing; on a request path (a slash command, a click,
``run --once``) that is a hung reply. :class:`CappedRateLimitRetryHandler` retries only a
wait the caller can afford and fails at once otherwise.

Bolt's single-workspace authorization calls ``auth.test`` on the first request and answers
"your installation is no longer available" when Slack is down: :class:`SlackIdentity`
authorizes from the token instead while Slack is unreachable, asks ``auth.test`` again with
backoff, and keeps the answer once Slack gives it. Only a refused token refuses requests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

# Slack gives a request 3 s; a slash command's auth, its answer and the reply share them.
REQUEST_WAIT = 1.0
AUTH_TEST_BUDGET = 1.5
# Errors that mean the token itself is refused: waiting does not help.
REFUSED_TOKEN = frozenset(
    {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}
)


def retry_after(response: HttpResponse) -> float | None:
    """The response's ``Retry-After`` in seconds, or None when absent or unreadable."""
    for name, values in response.headers.items():
        if name.lower() == "retry-after":
            value = values[0] if isinstance(values, list) and values else values
            try:
                return float(str(value))
            except (TypeError, ValueError):
                return None
    return None


class CappedRateLimitRetryHandler(AsyncRateLimitErrorRetryHandler):
    """Retries a 429 only when Slack asks for at most ``max_wait`` seconds."""

    def __init__(self, max_retry_count: int = 1, *, max_wait: float = REQUEST_WAIT) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait = max_wait

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        wait = retry_after(response)
        return wait is not None and wait <= self.max_wait


def _refused(exc: BaseException) -> bool:
    if not isinstance(exc, SlackApiError):
        return False
    data = getattr(exc.response, "data", None)
    return isinstance(data, dict) and data.get("error") in REFUSED_TOKEN


class SlackIdentity(AsyncAuthorize):
    """Bolt's ``authorize`` for one workspace's bot token (``resolve``; see the module docstring).
    Without a token, requests are let through without one: slash commands still answer from
    the store.

    ``clock``: monotonic seconds (a test's stand-in). The first failure waits ``backoff``
    before ``auth.test`` is asked again, doubling up to ``cap``.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        backoff: float = 1.0,
        cap: float = 60.0,
        budget: float = AUTH_TEST_BUDGET,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.backoff, self.cap, self.budget, self.clock = backoff, cap, budget, clock
        self.known: dict[str, Any] | None = None
        self._delay = backoff
        self._next_try = 0.0

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
        if not self.client.token:
            return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)
        return await self.resolve(enterprise_id, team_id, user_id)

    async def resolve(
        self, enterprise_id: str | None, team_id: str | None, user_id: str | None
    ) -> AuthorizeResult | None:
        if self.known is None and self.clock() >= self._next_try:
            try:
                response = await asyncio.wait_for(self.client.auth_test(), self.budget)
                self.known = dict(response.data) if isinstance(response.data, dict) else {}
            except Exception as exc:  # slack_sdk raises several unrelated types for one failure
                if _refused(exc):
                    log.error("Slack refused the bot token (%s)", exc)
                    return None
                self._next_try = self.clock() + self._delay
                log.warning("Slack is unreachable (%s); asking again in %.0f s", exc, self._delay)
                self._delay = min(self._delay * 2, self.cap)
        known = self.known or {}
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=known.get("team_id") or team_id,
            user_id=user_id,
            bot_token=self.client.token,
            bot_id=known.get("bot_id"),
            bot_user_id=known.get("user_id"),
        )
