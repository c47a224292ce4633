"""Tokens Slack refuses on request paths, noticed where every call's answer passes.

slack_sdk shows each response to the client's retry handlers, and Bolt copies the app
client's handlers into every request's client: a :class:`RefusalWatcher` on the app's client
sees every request's calls (App Home, unfurls, buttons) and tells
:class:`bot.delivery.tokens.TeamTokens`
of a token answered with ``invalid_auth``, ``token_revoked``, ``account_inactive``…, so that
team's requests stop being authorized while it has that token.
"""

from __future__ import annotations

from typing import Any, Protocol

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bot.delivery.outbox import AUTH_ERRORS


class RefusedTokens(Protocol):
    """Where refused tokens are told (:class:`bot.delivery.tokens.TeamTokens`)."""

    def refuse_token(self, token: str, error: str) -> None: ...


def _bearer(request: HttpRequest) -> str | None:
    for name, values in request.headers.items():
        if name.lower() == "authorization" and values:
            value = str(values[0])
            return value[7:] if value.startswith("Bearer ") else None
    return None


class RefusalWatcher(AsyncRetryHandler):
    """Never retries: notes every token Slack refuses (see :meth:`TeamTokens.refuse`)."""

    def __init__(self, tokens: RefusedTokens) -> None:
        super().__init__(max_retry_count=0)
        self.tokens = tokens

    def __deepcopy__(self, memo: dict[int, Any]) -> RefusalWatcher:
        # Bolt deep-copies a request (its client included) for lazy listeners: the copy
        # must report to the same tokens.
        return self

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        body = response.body if response is not None else None
        if isinstance(body, dict) and body.get("ok") is False:
            refused = str(body.get("error") or "")
            token = _bearer(request)
            if refused in AUTH_ERRORS and token:
                self.tokens.refuse_token(token, refused)
        return False
