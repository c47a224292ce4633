"""`/episodes`: text → command → reply. ``answer`` is the whole path minus Slack itself."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

from bot.commands import control, episodes, explain, follows, subscriptions, week
from bot.commands.base import Deps, Invocation
from bot.commands.model import ListFollows, StartFollow, StopFollow
from bot.commands.parse import (
    SHAREABLE,
    Command,
    CommandError,
    Explain,
    Help,
    Latest,
    ListSubscriptions,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
    Pause,
    Pr,
    Preview,
    Recent,
    Resume,
    Search,
    Status,
    Subscribe,
    Unsubscribe,
    Week,
    parse_command,
    unparse,
)
from bot.commands.replies import (
    answer_token,
    error_reply,
    help_reply,
    is_empty,
    share_gone,
    with_share,
)
from bot.dispatch import ephemeral_body
from digests.errors import StoreError
from digests.render.limits import Message

log = logging.getLogger(__name__)

__all__ = ["Answer", "Deps", "Invocation", "answer", "run_command"]


@dataclass(frozen=True)
class Answer:
    message: Message
    command: Command | None = None  # None when the text did not parse
    # Canonical text to re-run for "Share in channel"; None when the reply is not shareable
    # (help, changes, errors, a refused share, and replies that found nothing).
    share: str | None = None
    # For everyone in the channel, after a subscription change the reply confirms.
    announce: Message | None = None

    @cached_property
    def ephemeral_body(self) -> str:
        """The reply as the slash command's HTTP answer: encoded once, however often a
        cached answer is given."""
        return ephemeral_body(self.message)


def run_command(command: Command, deps: Deps, invocation: Invocation) -> Message:
    """Dispatch one parsed command to its handler."""
    match command:
        case Recent():
            return episodes.recent(command, deps, invocation)
        case Latest():
            return episodes.latest(command, deps, invocation)
        case NearbyDate() | NearbyTitle() | NearbyPr() | NearbyUrl():
            return episodes.nearby(command, deps, invocation)
        case Pr():
            return episodes.pr(command, deps, invocation)
        case Search():
            return episodes.search(command, deps, invocation)
        case Week():
            return week.week(command, deps, invocation)
        case Subscribe():
            return subscriptions.subscribe(command, deps, invocation)
        case Unsubscribe():
            return subscriptions.unsubscribe(command, deps, invocation)
        case ListSubscriptions():
            return subscriptions.list_subscriptions(command, deps, invocation)
        case Status():
            return subscriptions.status(command, deps, invocation)
        case Help():
            return help_reply(command.unknown)
        case Preview():
            return control.preview(command, deps, invocation)
        case Pause():
            return control.pause(command, deps, invocation)
        case Explain():
            return explain.why(command, deps, invocation)
        case Resume():
            return control.resume(command, deps, invocation)
        case StartFollow():
            return follows.follow(command, deps, invocation)
        case StopFollow():
            return follows.unfollow(command, deps, invocation)
        case ListFollows():
            return follows.following(command, deps, invocation)
    raise AssertionError(f"unhandled command {command!r}")


def _change(
    command: Command, deps: Deps, invocation: Invocation
) -> tuple[Message, Message | None] | None:
    """A channel change's reply and what the channel is told; None for other commands."""
    match command:
        case Subscribe():
            reply, news = subscriptions.subscribe_told(command, deps, invocation)
            return control.with_preview_hint(reply, command), news
        case Unsubscribe():
            return subscriptions.unsubscribe_told(command, deps, invocation)
        case Pause():
            return control.pause_told(command, deps, invocation)
        case Resume():
            return control.resume_told(command, deps, invocation)
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
    except CommandError as exc:
        return Answer(error_reply(exc))
    shareable = isinstance(command, SHAREABLE)
    if for_share and not shareable:
        return Answer(share_gone(), command)
    if isinstance(command, Week):
        # Pin the week now, so a reply shared next Monday still shows the week it showed.
        command = week.resolve_week(command, deps, invocation)
    changed = _change(command, deps, invocation)
    if changed is not None:  # never shared; announced when it changed something
        return Answer(changed[0], command, announce=changed[1])
    reply = run_command(command, deps, invocation)
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
