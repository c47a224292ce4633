"""The Slack Web API client: one factory, so every call honours SLACK_API_URL and retries."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.interval_calculator import RetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack_wait import REQUEST_WAIT, CappedRateLimitRetryHandler
from config.settings import Settings

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncAck


class Backoff(RetryIntervalCalculator):
    """slack_sdk's exponential backoff and jitter with its first wait a setting: ``first``
    × 2^attempt plus up to 2 × ``first`` at random (at 0.5 exactly slack_sdk's default,
    whose jitter is a fixed 0–1 s and so cannot be made shorter by its factor alone)."""

    def __init__(self, first: float) -> None:
        self.first = first

    def calculate_sleep_duration(self, current_attempt: int) -> float:
        return self.first * 2**current_attempt + random.random() * 2 * self.first


def make_web_client(
    settings: Settings,
    *,
    max_retries: int = 3,
    timeout: int = 10,
    max_wait: float = REQUEST_WAIT,
) -> AsyncWebClient:
    """An AsyncWebClient pointed at ``settings.slack_api_url`` with bounded retries.

    Retries cover 429 (waiting Retry-After when it is at most ``max_wait`` seconds: this
    client serves requests and one-shot commands, which fail fast instead), 5xx and
    connection errors (backing off from ``settings.slack_retry_seconds``). A retried
    chat.postMessage could double-post; the delivery ledger, not this, guarantees once.
    """
    backoff = Backoff(settings.slack_retry_seconds)
    return AsyncWebClient(
        token=settings.slack_bot_token,
        base_url=settings.slack_api_url,
        timeout=timeout,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(
                max_retry_count=max_retries, interval_calculator=backoff
            ),
            CappedRateLimitRetryHandler(max_retry_count=max_retries, max_wait=max_wait),
            AsyncServerErrorRetryHandler(max_retry_count=max_retries, interval_calculator=backoff),
        ],
    )


async def ack_at_once(ack: AsyncAck) -> None:
    """The ack of a listener whose work runs lazily: an empty 200 before anything else, so
    a slow Slack or store never makes the click or event time out."""
    await ack()
