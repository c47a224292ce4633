"""The Slack Web API client: one factory, so every call honours SLACK_API_URL and retries."""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from config.settings import Settings


def make_web_client(
    settings: Settings, *, max_retries: int = 3, timeout: int = 10
) -> AsyncWebClient:
    """An AsyncWebClient pointed at ``settings.slack_api_url`` with bounded retries.

    Retries cover 429 (waiting Retry-After), 5xx and connection errors. A retried
    chat.postMessage could double-post; the delivery ledger, not this, guarantees once.
    """
    return AsyncWebClient(
        token=settings.slack_bot_token,
        base_url=settings.slack_api_url,
        timeout=timeout,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=max_retries),
            AsyncRateLimitErrorRetryHandler(max_retry_count=max_retries),
            AsyncServerErrorRetryHandler(max_retry_count=max_retries),
        ],
    )
