"""Replays run once: a Bolt middleware in front of every listener, after signature checks.

A signed request is valid for five minutes, so one captured on the way can be sent again,
and Slack itself retries an event it thinks was lost (``X-Slack-Retry-Num``). Requests
that change something — a subscription change, a button click, an event — are keyed (the
event's id; otherwise the signed timestamp and body, which a genuine second click never
repeats) and recorded in the store; a key seen before is acknowledged and dropped.
Read-only slash commands answer as often as they are asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import unicodedata
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from digests.errors import StoreError
from digests.store import Store

log = logging.getLogger(__name__)

# Slash subcommands that change state; the rest only read.
CHANGING_COMMANDS = frozenset({"subscribe", "unsubscribe", "add-show", "remove-show"})


def is_changing(word: str) -> bool:
    """Whether a slash subcommand changes state."""
    return unicodedata.normalize("NFKC", word).casefold() in CHANGING_COMMANDS


def replay_key(body: dict[str, Any], raw_body: str, timestamp: str) -> str | None:
    """The key a state-changing request is remembered by, or None when it only reads."""
    if body.get("type") == "event_callback" and body.get("event_id"):
        return f"event:{body['event_id']}"
    if "command" in body:
        words = unicodedata.normalize("NFKC", str(body.get("text") or "")).split()
        if not words or words[0].casefold() not in CHANGING_COMMANDS:
            return None
    elif body.get("type") not in ("block_actions", "view_submission", "shortcut"):
        return None
    digest = hashlib.sha256(f"{timestamp}\n{raw_body}".encode()).hexdigest()
    return f"req:{digest}"


class ReplayGuard(AsyncMiddleware):
    """The middleware for ``AsyncApp.use``: drops a state-changing request seen before.

    A class, not a function: Bolt calls a class middleware directly, where a function one
    has its signature inspected on every request.
    """

    def __init__(self, store: Store, now: Callable[[], datetime]) -> None:
        self.store = store
        self.now = now

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        timestamp = (req.headers.get("x-slack-request-timestamp") or [""])[0]
        key = replay_key(req.body, req.raw_body, timestamp)
        if key is not None:
            try:
                first = await _first(self.store, key, self.now())
            except StoreError as exc:
                # Without the store the request cannot be checked; its own handler reports
                # the outage, which beats refusing every click while the database is down.
                log.warning("replay check skipped: %s", exc.format_message())
                first = True
            if not first:
                log.info("dropped a replayed request (%s)", key[:24])
                req.context["replayed"] = True  # counted by bot.server.asgi
                return BoltResponse(status=200, body="")
        return await next()


def replay_guard(store: Store, now: Callable[[], datetime]) -> ReplayGuard:
    """The middleware for ``AsyncApp.use`` (see :class:`ReplayGuard`)."""
    return ReplayGuard(store, now)


async def _first(store: Store, key: str, now: datetime) -> bool:
    return await asyncio.to_thread(store.first_request, key, now)
