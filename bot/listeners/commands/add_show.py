"""`/episodes add-show` and `remove-show`: workspace admins add a show from its feed, after a
preview with Add / Cancel buttons, and remove the shows their workspace added.

Who may: a user listed in ``admins`` (settings), or one Slack's ``users.info`` calls an
admin or owner of the workspace the command came from. Slack waits 3 s for a slash
command's answer, and reading a feed takes longer than that, so the command is acked at
once and the preview (or the refusal) follows through its ``response_url``; the fetch runs
on the event loop like the pipeline's, the parse in a worker thread.

The feed is fetched once, under the guard for URLs people type (``digests.sources.added_feeds``:
no local, private, link-local or metadata addresses in any spelling, each redirect checked
again), with ``added_feed_max_bytes`` as its cap. Add stores it (``shows`` row,
``source='slack'``) unless the workspace has ``max_added_shows`` already or the feed is a
show already; the clock starts polling it at its next sweep.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import unicodedata
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.catalog import all_shows
from bot.jobs.ingest import extract_episodes, parse_feed
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.model import CommandError, quote_value
from bot.listeners.commands.names import QUOTES, fold, match_show
from bot.listeners.commands.replies import context, error_reply, message, section
from bot.listeners.commands.shows_parse import AddShow, RemoveShow, ShowCommand
from bot.messages.basics import plural
from bot.messages.command_text import command_arg
from bot.messages.errors import BUTTON_OUT_OF_DATE
from bot.messages.shows import (
    ADD_SHOW_ADDED,
    ADD_SHOW_BUTTON,
    ADD_SHOW_CANCELLED,
    ADD_SHOW_COUNTS,
    ADD_SHOW_DUPLICATE,
    ADD_SHOW_FETCH_FAILED,
    ADD_SHOW_LIMIT,
    ADD_SHOW_NAME_TAKEN,
    ADD_SHOW_NEWEST,
    ADD_SHOW_NO_EPISODES,
    ADD_SHOW_NOT_FEED,
    ADD_SHOW_PREVIEW,
    ADD_SHOW_REFUSED,
    CANCEL_BUTTON,
    REMOVE_SHOW_CONFIG,
    REMOVE_SHOW_DONE,
    REMOVE_SHOW_NO_CHANNELS,
    REMOVE_SHOW_OTHER_TEAM,
    REMOVE_SHOW_UNKNOWN,
    REMOVE_SHOW_UNSUBSCRIBED,
    SHOW_ADMINS_ONLY,
)
from config.settings import DEFAULT_REPO, ShowConfig
from digests.errors import FeedParseError, FetchError
from digests.models import Episode
from digests.render import blocks, escape
from digests.render.limits import Message
from digests.sources import added_feeds
from digests.sources.fetch import FetchResult, fetch, make_http_client
from digests.store.shows import feed_key

log = logging.getLogger(__name__)

ADD_ACTION = "add_show_confirm"
CANCEL_ACTION = "add_show_cancel"
MAX_NAME = 80
# The whole fetch of a preview: Slack's response_url lasts 30 minutes, a person less.
PREVIEW_TIMEOUT = 20.0
_UNWANTED = re.compile(r"[\x00-\x1f\x7f`<>*_~|" + QUOTES + "]")


def _refused(text: str, subcommand: str) -> Message:
    return error_reply(CommandError(text, subcommand))


def _admins_only() -> Message:
    return message(SHOW_ADMINS_ONLY, [section(f":no_entry: {SHOW_ADMINS_ONLY}")])


async def is_show_admin(deps: Deps, client: AsyncWebClient, invocation: Invocation) -> bool:
    """Listed in ``admins``, or an admin or owner of this workspace by ``users.info``."""
    user = invocation.user_id
    if not user:
        return False
    if user in deps.settings.admins:
        return True
    if not client.token:
        return False
    try:
        response = await client.users_info(user=user)
    except (SlackApiError, SlackClientError) as exc:
        log.warning("users.info for %s failed: %s", user, exc)
        return False
    info = response.get("user") or {}
    if not isinstance(info, dict):
        return False
    # A user of another organisation in a shared channel is not this workspace's admin.
    if info.get("team_id") not in (None, invocation.team_id):
        return False
    return any(bool(info.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner"))


# -- the preview ------------------------------------------------------------------------


def show_name(title: str | None, url: str, taken: Sequence[str]) -> str:
    """The feed's title made a show name (no quotes or markup, one line, at most 80
    characters; the host when it has none), changed until no show has it (any case)."""
    host = urlsplit(url).hostname or "feed"
    text = unicodedata.normalize("NFKC", title or "")
    base = " ".join(_UNWANTED.sub(" ", text).split())[:MAX_NAME].strip() or host
    folded = {fold(name) for name in taken}
    candidates = [base, f"{base} ({host})"[:MAX_NAME]]
    # One more number than there are names taken: one of them is free.
    candidates += [f"{base[: MAX_NAME - 6]} {n}" for n in range(2, len(taken) + 3)]
    return next(c for c in candidates if fold(c) not in folded)


def _button_value(url: str, repo: str, name: str) -> str:
    return json.dumps({"u": url, "r": repo, "n": name}, separators=(",", ":"), ensure_ascii=False)


def read_button_value(value: str) -> tuple[str, str, str] | None:
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    parts = (data.get("u"), data.get("r"), data.get("n"))
    if not all(isinstance(p, str) and p for p in parts):
        return None
    url, repo, name = (str(p) for p in parts)
    return url, repo, name


def preview_message(url: str, repo: str, name: str, episodes: Sequence[Episode]) -> Message:
    newest = max(episodes, key=lambda e: e.published_at)
    prs = {(pr.url or str(pr.number)) for e in episodes for pr in e.pull_requests}
    day = newest.published_at.date().isoformat()
    episode = f"{escape.link(newest.url, newest.headline)} ({day})"
    title = ADD_SHOW_PREVIEW.format(show=escape.mrkdwn(name))
    counts = ADD_SHOW_COUNTS.format(
        episodes=plural(len(episodes), "episode"),
        prs=plural(len(prs), "PR"),
        repo=escape.mrkdwn(repo),
    )
    buttons = blocks.actions(
        [
            blocks.button(
                ADD_SHOW_BUTTON, ADD_ACTION, _button_value(url, repo, name), style="primary"
            ),
            blocks.button(CANCEL_BUTTON, CANCEL_ACTION, "cancel"),
        ]
    )
    return message(
        f"{title} {counts}",
        [
            section(f"{title}\n{escape.mrkdwn(url)}"),
            section(ADD_SHOW_NEWEST.format(episode=episode)),
            context(counts),
            buttons,
        ],
    )


def _show_with_feed(deps: Deps, url: str, shows: Sequence[ShowConfig] | None = None) -> str | None:
    """The name of the show (config file's or added) whose feed ``url`` is, if any."""
    wanted = feed_key(url)
    shows = all_shows(deps.settings, deps.store) if shows is None else shows
    same = next((s for s in shows if feed_key(deps.settings.feed_location(s)) == wanted), None)
    return None if same is None else same.name


def _checks(deps: Deps, url: str, team: str) -> tuple[Message | None, list[str]]:
    """A refusal (the feed is a show already, the workspace's limit), and the names taken."""
    shows = all_shows(deps.settings, deps.store)
    same = _show_with_feed(deps, url, shows)
    if same is not None:
        text = ADD_SHOW_DUPLICATE.format(show=escape.mrkdwn(same))
        return _refused(text, "add-show"), []
    limit = deps.settings.max_added_shows
    if len(deps.store.added_shows(team)) >= limit:
        return _refused(ADD_SHOW_LIMIT.format(limit=limit), "add-show"), []
    return None, [s.name for s in shows]


def _read(fetched: FetchResult, url: str, repo: str, taken: list[str]) -> tuple[str, list[Episode]]:
    parsed = parse_feed(fetched.content or b"", fetched.url or url, fetched.content_type)
    name = show_name(parsed.show_title, url, taken)
    return name, list(extract_episodes(parsed, name, repo))


async def preview(command: AddShow, deps: Deps, invocation: Invocation) -> Message:
    """The preview of ``command``'s feed with Add / Cancel, or one line of why not + usage."""
    url, repo = command.url, command.repo or DEFAULT_REPO
    reason = added_feeds.refusal(url)
    if reason is not None:
        return _refused(ADD_SHOW_REFUSED.format(reason=reason), "add-show")
    refusal, taken = await asyncio.to_thread(_checks, deps, url, invocation.team_id)
    if refusal is not None:
        return refusal
    try:
        async with make_http_client() as http:
            fetched = await fetch(
                http,
                url,
                max_bytes=deps.settings.added_feed_max_bytes,
                allow_private=added_feeds.policy(url),
                total_timeout=PREVIEW_TIMEOUT,
            )
        name, episodes = await asyncio.to_thread(_read, fetched, url, repo, taken)
    except FetchError as exc:
        return _refused(ADD_SHOW_FETCH_FAILED.format(reason=exc.reason), "add-show")
    except FeedParseError as exc:
        return _refused(ADD_SHOW_NOT_FEED.format(reason=exc.reason), "add-show")
    if not episodes:
        return _refused(ADD_SHOW_NO_EPISODES, "add-show")
    return preview_message(url, repo, name, episodes)


# -- the buttons and remove-show --------------------------------------------------------


def confirm(deps: Deps, invocation: Invocation, value: str) -> Message:
    """Add clicked: the show stored (blocking), or why not."""
    read = read_button_value(value)
    if read is None:
        return message(BUTTON_OUT_OF_DATE, [section(BUTTON_OUT_OF_DATE)])
    url, repo, name = read
    reason = added_feeds.refusal(url)
    if reason is not None:
        return _refused(ADD_SHOW_REFUSED.format(reason=reason), "add-show")
    outcome = deps.store.add_show(
        invocation.team_id,
        name,
        url,
        repo,
        added_by=invocation.user_id,
        now=deps.now(),
        limit=deps.settings.max_added_shows,
    )
    deps.refresh_shows(force=True)
    shown = escape.mrkdwn(name)
    if outcome == "limit":
        text = ADD_SHOW_LIMIT.format(limit=deps.settings.max_added_shows)
    elif outcome == "duplicate_feed":
        # Named like the preview's refusal: the show the feed is (the URL when none is
        # found, e.g. removed meanwhile).
        text = ADD_SHOW_DUPLICATE.format(show=escape.mrkdwn(_show_with_feed(deps, url) or url))
    elif outcome == "duplicate_name":
        text = ADD_SHOW_NAME_TAKEN.format(show=shown)
    else:
        text = ADD_SHOW_ADDED.format(show=shown, arg=escape.mrkdwn(command_arg(name)))
        return message(text, [section(f":white_check_mark: {text}")])
    return message(text, [section(f":warning: {text}")])


def cancelled() -> Message:
    return message(ADD_SHOW_CANCELLED, [section(ADD_SHOW_CANCELLED)])


def remove(command: RemoveShow, deps: Deps, invocation: Invocation) -> Message:
    """remove-show: the workspace's own added show, its channels here unsubscribed (blocking)."""
    config = deps.settings.show(command.name)
    if config is not None:
        text = REMOVE_SHOW_CONFIG.format(show=escape.mrkdwn(config.name))
        return message(text, [section(f":information_source: {text}")])
    name = match_show(command.name, [s.name for s in deps.store.added_shows()])
    removal = deps.store.remove_added_show(invocation.team_id, name) if name else None
    if removal is None or removal.outcome in ("unknown", "config"):
        value = quote_value(command.name)
        return _refused(REMOVE_SHOW_UNKNOWN.format(value=value), "remove-show")
    deps.refresh_shows(force=True)
    shown = escape.mrkdwn(name or "")
    if removal.outcome == "other_team":
        text = REMOVE_SHOW_OTHER_TEAM.format(show=shown)
        return message(text, [section(f":information_source: {text}")])
    text = REMOVE_SHOW_DONE.format(show=shown)
    channels = ", ".join(f"<#{c}>" for c in removal.channels if _CHANNEL_RE.match(c))
    more = (
        REMOVE_SHOW_UNSUBSCRIBED.format(channels=channels)
        if channels
        else REMOVE_SHOW_NO_CHANNELS
    )
    return message(f"{text} {more}", [section(f":wastebasket: {text} {more}")])


_CHANNEL_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")


async def run_show_command(
    command: ShowCommand, deps: Deps, client: AsyncWebClient, invocation: Invocation
) -> Message:
    """The reply that follows the ack: refused for a non-admin, else the preview or removal."""
    if not await is_show_admin(deps, client, invocation):
        return _admins_only()
    if isinstance(command, AddShow):
        return await preview(command, deps, invocation)
    return await asyncio.to_thread(remove, command, deps, invocation)


def invocation_of(body: dict[str, Any]) -> Invocation:
    def part(key: str) -> str:
        value = body.get(key)
        return str(value.get("id") or "") if isinstance(value, dict) else ""

    return Invocation(team_id=part("team"), channel_id=part("channel"), user_id=part("user"))


__all__ = [
    "ADD_ACTION",
    "CANCEL_ACTION",
    "cancelled",
    "confirm",
    "is_show_admin",
    "preview",
    "preview_message",
    "remove",
    "run_show_command",
    "show_name",
]
