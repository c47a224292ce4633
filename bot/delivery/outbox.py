"""Where posts go: Slack (``SlackOutbox``) or, with no token, a stream (``PrintOutbox``).

An outbox does one call per method and classifies failures; retrying, pacing and the
exactly-once bookkeeping are the deliverer's. Every post carries message metadata naming
its ledger key, which is how a restarted bot finds out whether a post it lost track of
actually landed (``find``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, TextIO

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack import make_web_client
from config.settings import Settings
from digests.errors import SlackError
from digests.render.renderer import message_to_text

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

EVENT_TYPE = "digestbot_delivery"

# How far before a claim (or a post) a message could carry a Slack timestamp: clock skew
# between us and Slack, so a ``find`` reaching back this far sees whatever we posted.
HISTORY_MARGIN = timedelta(minutes=10)

Category = Literal["ratelimited", "server", "timeout", "channel", "auth", "fatal"]

# Slack's answers that mean "this channel cannot take posts": pause, never retry.
CHANNEL_ERRORS = frozenset(
    {
        "channel_not_found",
        "is_archived",
        "not_in_channel",
        "restricted_action",
        "team_access_not_granted",
    }
)
# The installation is gone: stop everything for that workspace.
AUTH_ERRORS = frozenset(
    {
        "invalid_auth",
        "token_revoked",
        "account_inactive",
        "not_authed",
        "token_expired",
        "app_uninstalled",
    }
)
SERVER_ERRORS = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)

Message = Mapping[str, Any]


class PostFailure(SlackError):
    """A Slack call that failed, with what the failure means for a retry.

    ``ratelimited`` and ``server`` mean the message was not posted (safe to retry);
    ``timeout`` means it may have been (look before posting again); ``channel`` and
    ``auth`` are permanent for the channel or the workspace; ``fatal`` is our bug.
    """

    def __init__(
        self, method: str, error: str, category: Category, retry_after: float | None = None
    ) -> None:
        super().__init__(method, error)
        self.category: Category = category
        self.retry_after = retry_after
        # Set by whoever retried: an earlier attempt of the same post may have landed.
        self.maybe_posted = category == "timeout"


def classify(method: str, exc: BaseException) -> PostFailure:
    """Turn whatever slack_sdk or aiohttp raised into a :class:`PostFailure`."""
    if isinstance(exc, SlackApiError):
        response = exc.response
        status = int(getattr(response, "status_code", 0) or 0)
        data = getattr(response, "data", None)
        error = str(data.get("error", "")) if isinstance(data, Mapping) else ""
        error = error or f"http_{status}"
        if status == 429 or error == "ratelimited":
            headers = getattr(response, "headers", {}) or {}
            retry = headers.get("Retry-After") or headers.get("retry-after")
            try:
                wait = float(retry) if retry is not None else None
            except (TypeError, ValueError):
                wait = None
            return PostFailure(method, "ratelimited", "ratelimited", wait)
        if status >= 500 or error in SERVER_ERRORS:
            return PostFailure(method, error, "server")
        if error in CHANNEL_ERRORS:
            return PostFailure(method, error, "channel")
        if error in AUTH_ERRORS:
            return PostFailure(method, error, "auth")
        return PostFailure(method, error, "fatal")
    if isinstance(exc, aiohttp.ClientConnectorError):
        # The connection never opened, so nothing was sent.
        return PostFailure(method, f"cannot connect: {exc}", "server")
    if isinstance(exc, asyncio.TimeoutError | aiohttp.ClientError | SlackClientError | OSError):
        return PostFailure(method, f"{type(exc).__name__}: {exc}".rstrip(": "), "timeout")
    return PostFailure(method, f"{type(exc).__name__}: {exc}", "fatal")


def metadata_for(
    key: str, kind: str, part: str, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    payload: dict[str, Any] = {"key": key, "kind": kind, "part": part}
    if extra:
        payload.update({k: v for k, v in extra.items() if k not in payload})
    return {"event_type": EVENT_TYPE, "event_payload": payload}


def key_and_part(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """The ledger key and part a post's metadata names (what ``find`` looks for)."""
    payload = metadata.get("event_payload")
    if not isinstance(payload, Mapping) or not payload.get("key"):
        return None
    return str(payload["key"]), str(payload.get("part", "digest"))


class Outbox(Protocol):
    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        """Post; returns the message ``ts``. Raises :class:`PostFailure`."""
        ...

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None: ...

    async def delete(self, channel: str, ts: str) -> None:
        """Delete one of our messages; one already gone counts as deleted."""
        ...

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        """Our messages for ``key`` in the channel (or under ``thread_ts``): part → ts."""
        ...

    async def join(self, channel: str) -> bool:
        """Join a public channel (after ``not_in_channel``); False when that is not possible."""
        ...

    async def close(self) -> None: ...


def _parts(messages: object, key: str) -> dict[str, str]:
    found: dict[str, str] = {}
    if not isinstance(messages, list):
        return found
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        meta = message.get("metadata")
        if not isinstance(meta, Mapping) or meta.get("event_type") != EVENT_TYPE:
            continue
        payload = meta.get("event_payload")
        if isinstance(payload, Mapping) and payload.get("key") == key and message.get("ts"):
            found.setdefault(str(payload.get("part", "digest")), str(message["ts"]))
    return found


class SlackOutbox:
    """Posts through the Web API. ``post_client`` makes single attempts (no retry handlers):

    a blind retry of ``chat.postMessage`` inside slack_sdk could double-post behind the
    ledger's back, so the deliverer retries itself, knowing what each failure means.

    Both clients share one aiohttp session (``share_session``, on first use inside the
    loop): without one, slack_sdk opens and closes a session — and a connection — per
    call, which halves the throughput of a fan-out.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        post_client: AsyncWebClient | None = None,
        *,
        history_pages: int = 5,
        share_session: bool = True,
        max_connections: int = 100,
    ) -> None:
        self.client = client
        self.post_client = post_client or client
        self.history_pages = history_pages
        self._share = share_session
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _ready(self) -> None:
        if not self._share or self._session is not None:
            return
        if self.client.session is not None or self.post_client.session is not None:
            self._share = False  # the caller brought its own
            return
        connector = aiohttp.TCPConnector(limit=self._max_connections)
        # slack_sdk applies its timeout only to sessions it makes itself.
        timeout = aiohttp.ClientTimeout(total=min(self.client.timeout, self.post_client.timeout))
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        self.client.session = self._session
        self.post_client.session = self._session

    @classmethod
    def from_settings(cls, settings: Settings, *, timeout: int = 10) -> SlackOutbox:
        post_client = AsyncWebClient(
            token=settings.slack_bot_token,
            base_url=settings.slack_api_url,
            timeout=timeout,
            retry_handlers=[],
        )
        client = make_web_client(settings, timeout=timeout)
        # A 429 is the deliverer's to wait out (bot.delivery.paced, which caps the wait):
        # slack_sdk's own handler would sleep whatever Retry-After says, an hour included.
        client.retry_handlers = [
            h for h in client.retry_handlers if not isinstance(h, AsyncRateLimitErrorRetryHandler)
        ]
        return cls(client, post_client)

    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        kwargs: dict[str, Any] = {
            "channel": channel,
            "text": message.get("text", ""),
            "metadata": dict(metadata),
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if message.get("blocks"):
            kwargs["blocks"] = message["blocks"]
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        self._ready()
        try:
            response = await self.post_client.chat_postMessage(**kwargs)
        except Exception as exc:
            raise classify("chat.postMessage", exc) from exc
        return str(response.get("ts") or "")

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        kwargs: dict[str, Any] = {"channel": channel, "ts": ts, "text": message.get("text", "")}
        if message.get("blocks"):
            kwargs["blocks"] = message["blocks"]
        if metadata:
            # Sent again so the edited message still names its ledger key and part.
            kwargs["metadata"] = dict(metadata)
        self._ready()
        try:
            await self.post_client.chat_update(**kwargs)
        except Exception as exc:
            raise classify("chat.update", exc) from exc

    async def delete(self, channel: str, ts: str) -> None:
        self._ready()
        try:
            await self.post_client.chat_delete(channel=channel, ts=ts)
        except Exception as exc:
            failure = classify("chat.delete", exc)
            if failure.error != "message_not_found":
                raise failure from exc

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        found: dict[str, str] = {}
        cursor: str | None = None
        method = "conversations.replies" if thread_ts else "conversations.history"
        self._ready()
        for _ in range(self.history_pages):
            kwargs: dict[str, Any] = {
                "channel": channel,
                "include_all_metadata": True,
                "limit": 200,
            }
            if oldest is not None:
                kwargs["oldest"] = f"{oldest.timestamp():.6f}"
            if cursor:
                kwargs["cursor"] = cursor
            try:
                if thread_ts:
                    response = await self.client.conversations_replies(ts=thread_ts, **kwargs)
                else:
                    response = await self.client.conversations_history(**kwargs)
            except Exception as exc:
                raise classify(method, exc) from exc
            for part, ts in _parts(response.get("messages"), key).items():
                found.setdefault(part, ts)
            meta = response.get("response_metadata") or {}
            cursor = meta.get("next_cursor") if isinstance(meta, Mapping) else None
            if not cursor or not response.get("has_more", True):
                break
        return found

    async def join(self, channel: str) -> bool:
        self._ready()
        try:
            await self.client.conversations_join(channel=channel)
        except Exception as exc:  # private channel, missing scope: the caller pauses it
            failure = classify("conversations.join", exc)
            log.warning("cannot join %s: %s", channel, failure.error)
            return False
        return True

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            self.client.session = None
            self.post_client.session = None


def readable(message: Message) -> str:
    """A message as plain lines: its blocks spelled out, else its fallback ``text``."""
    if message.get("blocks"):
        return message_to_text(
            {"text": str(message.get("text", "")), "blocks": list(message["blocks"])}
        ).rstrip()
    return str(message.get("text", "")).rstrip()


class PrintOutbox:
    """No Slack token: write what would be posted, readable, to a stream (stdout by default).

    It keeps what it "posted" in memory so ``find`` and ``update`` behave like Slack's
    within one process; across processes the ledger is what prevents repeats.
    """

    paced = False  # nothing to rate-limit: the deliverer does not space its "posts"

    def __init__(self, stream: TextIO, *, show_json: bool = False) -> None:
        self.stream = stream
        self.show_json = show_json
        self._counter = itertools.count(1)
        self._posted: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}

    async def post(
        self,
        channel: str,
        message: Message,
        *,
        metadata: Mapping[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        ts = f"{1_700_000_000 + next(self._counter)}.000100"
        where = f"#{channel}" + (f" (thread {thread_ts})" if thread_ts else "")
        self._write(f"── would post to {where}", message)
        self._posted.setdefault(channel, []).append((ts, metadata))
        return ts

    async def update(
        self, channel: str, ts: str, message: Message, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        self._write(f"── would update {ts} in #{channel}", message)

    async def delete(self, channel: str, ts: str) -> None:
        self.stream.write(f"── would delete {ts} in #{channel}\n\n")
        self.stream.flush()
        self._posted[channel] = [(t, m) for t, m in self._posted.get(channel, []) if t != ts]

    async def find(
        self, channel: str, key: str, *, oldest: datetime | None, thread_ts: str | None = None
    ) -> dict[str, str]:
        messages = [{"ts": ts, "metadata": meta} for ts, meta in self._posted.get(channel, [])]
        return _parts(messages, key)

    async def join(self, channel: str) -> bool:
        return True

    async def close(self) -> None:
        self.stream.flush()

    def _write(self, header: str, message: Message) -> None:
        body = readable(message)
        lines = [header, body]
        if self.show_json:
            lines.append(json.dumps(message.get("blocks", []), ensure_ascii=False))
        self.stream.write("\n".join(lines) + "\n\n")
        self.stream.flush()
