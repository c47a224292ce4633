"""`/episodes`: text → command → reply. ``answer`` is the whole path minus Slack itself."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from bot.listeners.commands import control, episodes, explain, follows, model, subscriptions, week
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.parse import parse_command, unparse
from bot.listeners.commands.replies import (
    answer_token,
    error_reply,
    help_reply,
    is_empty,
    share_gone,
    with_share,
)
from digests.errors import StoreError
from digests.render.limits import Message

log = logging.getLogger(__name__)

__all__ = ["Answer", "answer", "run_command"]


@dataclass(frozen=True)
class Answer:
    message: Message
    command: model.Command | None = None  # None when the text did not parse
    # Canonical text to re-run for "Share in channel"; None when the reply is not shareable
    # (help, changes, errors, a refused share, and replies that found nothing).
    share: str | None = None
    # For everyone in the channel, after a subscription change the reply confirms.
    announce: Message | None = None

    @cached_property
    def ephemeral_body(self) -> str:
        """The reply as the HTTP body of ``ack(response_type="ephemeral", text=...,
        blocks=...)``: the same keys in the same order, as Bolt's ack encodes them (a test
        compares the two). Encoded once per answer: a cached answer is sent many times, and
        encoding it was the largest part of answering from the cache."""
        body: dict[str, Any] = {"text": self.message["text"], "response_type": "ephemeral"}
        if self.message["blocks"]:
            body["blocks"] = list(self.message["blocks"])
        return json.dumps(body)


# Each command's handler: (command, deps, invocation) → the reply.
_HANDLERS: dict[type, Callable[[Any, Deps, Invocation], Message]] = {
    model.Recent: episodes.recent,
    model.Latest: episodes.latest,
    model.NearbyDate: episodes.nearby,
    model.NearbyTitle: episodes.nearby,
    model.NearbyPr: episodes.nearby,
    model.NearbyUrl: episodes.nearby,
    model.Pr: episodes.pr,
    model.Search: episodes.search,
    model.Week: week.week,
    model.Subscribe: subscriptions.subscribe,
    model.Unsubscribe: subscriptions.unsubscribe,
    model.ListSubscriptions: subscriptions.list_subscriptions,
    model.Status: subscriptions.status,
    model.Help: lambda command, deps, invocation: help_reply(command.unknown),
    model.Preview: control.preview,
    model.Pause: control.pause,
    model.Explain: explain.why,
    model.Resume: control.resume,
    model.StartFollow: follows.follow,
    model.StopFollow: follows.unfollow,
    model.ListFollows: follows.following,
}


def run_command(command: model.Command, deps: Deps, invocation: Invocation) -> Message:
    """Dispatch one parsed command to its handler."""
    handler = _HANDLERS.get(type(command))
    if handler is None:
        raise AssertionError(f"unhandled command {command!r}")
    return handler(command, deps, invocation)


def _change(
    command: model.Command, deps: Deps, invocation: Invocation
) -> tuple[Message, Message | None] | None:
    """A channel change's reply and what the channel is told; None for other commands."""
    match command:
        case model.Subscribe():
            reply, news = subscriptions.subscribe_with_announcement(command, deps, invocation)
            return control.with_preview_hint(reply, command), news
        case model.Unsubscribe():
            return subscriptions.unsubscribe_with_announcement(command, deps, invocation)
        case model.Pause():
            return control.pause_with_announcement(command, deps, invocation)
        case model.Resume():
            return control.resume_with_announcement(command, deps, invocation)
    return None


def answer(text: str, deps: Deps, invocation: Invocation, *, for_share: bool = False) -> Answer:
    """The reply to ``/episodes <text>``: bad arguments become a usage reply, not an error.

    ``for_share``: the text comes back from a "Share in channel" button; only read-only
    commands may run again that way, and the copy carries no share button of its own.
    """
    deps.refresh_shows()  # shows added from Slack (in another process, too)
    try:
        command = parse_command(
            text, deps.shows, today=deps.today(), daily_at=deps.settings.daily_at
        )
    except model.CommandError as exc:
        return Answer(error_reply(exc))
    shareable = isinstance(command, model.SHAREABLE)
    if for_share and not shareable:
        return Answer(share_gone(), command)
    if isinstance(command, model.Week):
        # Pin the week now, so a reply shared next Monday still shows the week it showed.
        command = week.resolve_week(command, deps, invocation)
    try:
        changed = _change(command, deps, invocation)
        if changed is not None:  # never shared; announced when it changed something
            return Answer(changed[0], command, announce=changed[1])
        reply = run_command(command, deps, invocation)
    except model.CommandError as exc:  # an argument only the data shows is bad (`follow 5012`)
        return Answer(error_reply(exc), command)
    if not shareable or is_empty(reply):
        return Answer(reply, command)
    share = unparse(command)
    if for_share:
        return Answer(reply, command, share)
    # Pinned: the button shares this very answer, clicked on whichever web process (the
    # command runs again only once the store has forgotten it).
    token = answer_token(reply)
    deps.answers.put(token, reply)
    try:
        deps.store.keep_answer(token, dict(reply), deps.now())
    except StoreError as exc:  # the answer still counts; a share would run the command again
        log.warning("could not keep a shared answer: %s", exc)
    return Answer(with_share(reply, share, token), command, share)
