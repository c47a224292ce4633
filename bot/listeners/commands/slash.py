"""The `/episodes` listener: parse, answer from the store, ack with the reply (ephemeral)."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners.commands import Answer, answer
from bot.listeners.commands.add_show import run_show_command
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.cache import cache_key, channel_scoped
from bot.listeners.commands.model import CommandError, Subscribe, Unsubscribe
from bot.listeners.commands.replies import error_reply, message, section
from bot.listeners.commands.shows_parse import AddShow, ShowCommand, head_word, parse_show_command
from bot.listeners.commands.ttl import SingleFlight, TtlCache
from bot.messages.basics import COMMAND
from bot.messages.errors import (
    INTERNAL_ERROR,
    NO_CHANNEL,
    NOT_SAVED,
    REASON_STORE,
    REASON_STORE_SLOW,
    REASON_UNEXPECTED,
)
from bot.messages.shows import ADD_SHOW_READING
from bot.middleware.replay import is_changing
from config.settings import CHANNEL_ID_PATTERN
from digests.errors import StoreError, StoreTimeout
from digests.redact import redact_url
from digests.render import escape
from digests.render.limits import Message

log = logging.getLogger(__name__)


def failure_reply(exc: BaseException, *, changing: bool = False) -> Message:
    """One line for the user; the details go to the log, never to Slack. ``changing``: the
    request was to change something, and the reply says it did not."""
    reason = REASON_STORE if isinstance(exc, StoreError) else REASON_UNEXPECTED
    reason = REASON_STORE_SLOW if isinstance(exc, StoreTimeout) else reason
    text = INTERNAL_ERROR.format(reason=reason)
    text = f"{NOT_SAVED} {text}" if changing else text
    return message(text, [section(f":warning: {text}")])


async def answer_off_loop(
    text: str, deps: Deps, invocation: Invocation, *, for_share: bool = False
) -> Answer:
    """``answer`` in a worker thread: the store is synchronous SQL, and one slow query must
    not stall every other request on the event loop."""
    try:
        return await asyncio.to_thread(answer, text, deps, invocation, for_share=for_share)
    except Exception as exc:  # any failure becomes a one-line reply, never an error page
        log.exception("/episodes %r failed", text[:100])
        words = text.split()
        return Answer(failure_reply(exc, changing=bool(words) and is_changing(words[0])))


_CHANNEL_RE = re.compile(CHANNEL_ID_PATTERN)
_FLIGHT = "\x1e"  # a flight's key: the cache key and the version it is made under


def refused(invocation: Invocation) -> Message | None:
    """The one-line refusal of a command Slack sent without a usable channel: nothing is
    parsed, read or stored for it (a subscription to channel "" would never deliver)."""
    if _CHANNEL_RE.match(invocation.channel_id):
        return None
    text = NO_CHANNEL
    return message(text, [section(f":warning: {text}")])


def invocation_of(command: dict[str, Any]) -> Invocation:
    return Invocation(
        team_id=str(command.get("team_id") or ""),
        channel_id=str(command.get("channel_id") or ""),
        user_id=str(command.get("user_id") or ""),
    )


async def announce(respond: AsyncRespond, note: Message, invocation: Invocation) -> None:
    """Tell the channel about a subscription change (through the command's response_url)."""
    try:
        await respond(response_type="in_channel", text=note["text"], blocks=note["blocks"])
    except Exception as exc:  # the change is made and confirmed to the user; this is extra
        log.warning(
            "could not announce a subscription change in %s: %s", invocation.channel_id, exc
        )


async def show_command_later(
    command: ShowCommand,
    deps: Deps,
    client: AsyncWebClient,
    invocation: Invocation,
    respond: AsyncRespond,
) -> None:
    """add-show / remove-show after the ack: the answer through the command's response_url."""
    try:
        reply = await run_show_command(command, deps, client, invocation)
    except Exception as exc:  # one line for the admin; the details go to the log
        log.exception("/episodes %s failed", type(command).__name__)
        reply = failure_reply(exc, changing=not isinstance(command, AddShow))
    text, blocks = reply["text"], reply["blocks"]
    await respond(response_type="ephemeral", replace_original=False, text=text, blocks=blocks)


@dataclass(frozen=True)
class Cached:
    """A cached answer, and the subscriptions version it was made under (None: an answer
    that does not depend on them)."""

    answer: Answer
    version: int | None = None


async def subscriptions_version(deps: Deps) -> int | None:
    """The store's subscriptions version (``Store.answers_version``); None when it cannot
    be read (the answer is then made afresh and not cached)."""
    try:
        return await asyncio.to_thread(deps.store.answers_version)
    except StoreError as exc:
        log.warning("could not read the answers' version: %s", exc)
        return None


class Replies:
    """The answers cached by this process (see ``bot.listeners.commands.cache``). Used from the
    event
    loop only: no lock needed."""

    def __init__(self, deps: Deps, cache: TtlCache[Cached]) -> None:
        self.deps = deps
        self.cache = cache
        self.flights: SingleFlight[Answer] = SingleFlight()

    async def _made(
        self, key: str, text: str, invocation: Invocation, scoped: bool, version: int | None
    ) -> Answer:
        """A new answer, cached. ``version``: the subscriptions version read before it (a
        subscribe committed meanwhile leaves the entry older than the version, and the next
        command makes it again); None for a scoped answer: not cached."""
        result = await answer_off_loop(text, self.deps, invocation)
        if result.command is not None and (version is not None or not scoped):
            self.cache.put(key, Cached(result, version))  # failures are not remembered
        return result

    async def get(self, key: str, text: str, invocation: Invocation) -> Answer:
        """The cached answer under ``key`` while it holds, else a new one (shared by the
        requests that ask at once)."""
        hit = self.cache.get(key)
        if not channel_scoped(key):
            if hit is not None:
                return hit.answer
            return await self.flights.run(
                key, lambda: self._made(key, text, invocation, False, None)
            )
        # About the channel's shows: good while no process has changed a subscription.
        current = await subscriptions_version(self.deps)
        if hit is not None and current is not None and hit.version == current:
            return hit.answer
        return await self.flights.run(
            f"{key}{_FLIGHT}{current}", lambda: self._made(key, text, invocation, True, current)
        )


def register_slash(app: AsyncApp, deps: Deps, cache: TtlCache[Cached] | None = None) -> None:
    replies = Replies(deps, cache if cache is not None else TtlCache())
    notices: set[asyncio.Task[None]] = set()  # held until done: the loop keeps weak refs

    async def on_show_command(
        ack: AsyncAck, respond: AsyncRespond, client: AsyncWebClient, text: str, inv: Invocation
    ) -> None:
        # Reading a feed takes longer than Slack waits: ack now, answer by response_url.
        try:
            parsed = parse_show_command(text)
        except CommandError as exc:
            reply = error_reply(exc)
            await ack(response_type="ephemeral", text=reply["text"], blocks=reply["blocks"])
            return
        if isinstance(parsed, AddShow):
            # The URL as typed may carry a password (refused, but after this ack) or a token
            # in its query: it is echoed as every feed location shown to people is, redacted.
            note = ADD_SHOW_READING.format(url=escape.mrkdwn(redact_url(parsed.url)))
            await ack(response_type="ephemeral", text=note)
        else:
            await ack()
        task = asyncio.create_task(show_command_later(parsed, deps, client, inv, respond))
        notices.add(task)
        task.add_done_callback(notices.discard)

    @app.command(COMMAND)
    async def on_episodes(
        ack: AsyncAck, respond: AsyncRespond, client: AsyncWebClient, command: dict[str, Any]
    ) -> BoltResponse | None:
        text = str(command.get("text") or "")
        invocation = invocation_of(command)
        refusal = refused(invocation)
        if refusal is not None:
            await ack(response_type="ephemeral", text=refusal["text"], blocks=refusal["blocks"])
            return None
        if head_word(text) is not None:
            await on_show_command(ack, respond, client, text, invocation)
            return None
        # The cache is touched only here, on the event loop: no lock needed.
        key = cache_key(text, deps, invocation)
        if key is None:
            result = await answer_off_loop(text, deps, invocation)
            if isinstance(result.command, Subscribe | Unsubscribe):
                replies.cache.clear()  # `week` answers depend on what the channel follows
        else:
            result = await replies.get(key, text, invocation)
        if result.announce is not None:
            # Runs once this listener has returned (nothing is awaited after this): the
            # response_url call must not eat into the three seconds Slack waits for the
            # reply (listeners run before the response).
            task = asyncio.create_task(announce(respond, result.announce, invocation))
            notices.add(task)
            task.add_done_callback(notices.discard)
        # What ack(response_type="ephemeral", text=..., blocks=...) would answer, encoded
        # once per answer (Answer.ephemeral_body): Bolt answers with the response its
        # listener returns.
        return BoltResponse(status=200, body=result.ephemeral_body)
