"""Buttons: "Share in channel" on `/episodes` replies, "Key PRs" and "Nearby" on digests.

Each button is acked at once (an empty 200); the work — a store lookup and a post to
Slack — runs in a lazy listener after the HTTP response, so a slow Slack never makes the
click time out.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext, AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack import ack_at_once
from bot.jobs.enrichment import attach_one
from bot.listeners.commands import add_show
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.episodes import nearby_of
from bot.listeners.commands.replies import (
    SHARE_ACTION,
    message,
    read_share_token,
    read_share_value,
    section,
    share_gone,
    shared_copy,
)
from bot.listeners.commands.slash import answer_off_loop, failure_reply
from bot.listeners.commands.ttl import TtlCache
from bot.messages.answers import EPISODE_GONE, KEY_PRS_NONE
from bot.messages.errors import BUTTON_OUT_OF_DATE
from bot.messages.shows import SHOW_ADMINS_ONLY
from digests.errors import StoreError
from digests.models import Episode
from digests.render.blocks import read_button_value
from digests.render.limits import Message

log = logging.getLogger(__name__)

KEY_PRS_ACTION = "digest_prs"
NEARBY_ACTION = "digest_nearby"


def _action(body: dict[str, Any]) -> dict[str, Any]:
    actions = body.get("actions") or [{}]
    first = actions[0]
    return first if isinstance(first, dict) else {}


def _id(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    return str(value.get("id") or "") if isinstance(value, dict) else ""


def invocation_of(body: dict[str, Any]) -> Invocation:
    return Invocation(
        team_id=_id(body, "team"), channel_id=_id(body, "channel"), user_id=_id(body, "user")
    )


def episode_of(body: dict[str, Any], deps: Deps) -> Episode | None:
    """The episode a digest button names (``digests.render.blocks.button_value``): by guid,
    or by its hash when the guid was too long for a button value."""
    value = read_button_value(str(_action(body).get("value") or ""))
    # No show: the value is not ours, or the show name itself was hashed (a name of some
    # 2,000 characters, which no real show has): either way, "gone".
    show = value.get("show")
    if not show:
        return None
    if guid := value.get("guid"):
        return deps.store.episode(show, guid)
    if key := value.get("guid_sha256"):
        return deps.store.episode_by_guid_key(show, key)
    return None


def _reply_kwargs(reply: Message) -> dict[str, Any]:
    return {"text": reply["text"], "blocks": reply["blocks"]}


def _kept_answer(deps: Deps, token: str) -> Message | None:
    """The answer another process (or this one, earlier) showed under ``token``."""
    try:
        kept = deps.store.shared_answer(token)
    except StoreError as exc:  # the command runs again, as for an answer forgotten
        log.warning("could not read a shared answer: %s", exc)
        return None
    if kept is None or not isinstance(kept.get("text"), str):
        return None
    blocks = kept.get("blocks")
    return Message(text=kept["text"], blocks=blocks if isinstance(blocks, list) else [])


async def _share(body: dict[str, Any], respond: AsyncRespond, deps: Deps) -> None:
    """ "Share in channel": the command run again, posted for everyone, the private reply gone."""
    value = str(_action(body).get("value") or "")
    text = read_share_value(value)
    if text is None:
        await respond(replace_original=False, **_reply_kwargs(share_gone()))
        return
    invocation = invocation_of(body)
    token = read_share_token(value)
    shown = deps.answers.get(token) if token else None
    if shown is None and token:
        shown = await asyncio.to_thread(_kept_answer, deps, token)
    if shown is None:
        result = await answer_off_loop(text, deps, invocation, for_share=True)
        if result.share is None:
            # Refused or failed: tell the clicker only, and leave their reply in place.
            await respond(replace_original=False, **_reply_kwargs(result.message))
            return
        shown = result.message
    copy = shared_copy(shown, invocation.user_id)
    # The ephemeral reply cannot become public in place: post the copy, then remove it.
    await respond(response_type="in_channel", replace_original=False, **_reply_kwargs(copy))
    await respond(delete_original=True)


def _thread_target(
    body: dict[str, Any], bot_user_id: str | None, threaded: TtlCache[bool]
) -> tuple[str, str] | None:
    """(channel, thread ts) to reply in, or None when the reply should be ephemeral."""
    container = body.get("container") or {}
    posted = body.get("message") or {}
    channel, ts = _id(body, "channel"), posted.get("thread_ts") or posted.get("ts")
    if not channel or not ts or container.get("is_ephemeral"):
        return None
    if container.get("channel_id") not in (None, channel):
        return None  # a click that names another channel than its message's: no thread there
    if bot_user_id and bot_user_id in (posted.get("reply_users") or []):
        return None  # the thread already holds our reply (ours, or delivery's)
    if threaded.get(f"{channel}:{ts}"):
        return None
    return channel, str(ts)


async def _nearby(body: dict[str, Any], respond: AsyncRespond, deps: Deps) -> None:
    def build() -> Message:
        episode = episode_of(body, deps)
        if episode is None:
            return message(EPISODE_GONE, [section(EPISODE_GONE)])
        return nearby_of(episode, deps)

    try:
        reply = await asyncio.to_thread(build)
    except Exception as exc:
        log.exception("Nearby button failed")
        reply = failure_reply(exc)
    await respond(response_type="ephemeral", replace_original=False, **_reply_kwargs(reply))


async def _add_show_clicked(
    body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient, deps: Deps
) -> None:
    """Add on an add-show preview: asked again whether the clicker may (a preview may be
    forwarded, an admin demoted since), then stored; the preview becomes the result."""
    invocation = invocation_of(body)
    value = str(_action(body).get("value") or "")
    try:
        if not await add_show.is_show_admin(deps, client, invocation):
            reply = message(SHOW_ADMINS_ONLY, [section(SHOW_ADMINS_ONLY)])
            await respond(replace_original=False, **_reply_kwargs(reply))
            return
        reply = await asyncio.to_thread(add_show.confirm, deps, invocation, value)
    except Exception as exc:
        log.exception("Add show button failed")
        reply = failure_reply(exc, changing=True)
    await respond(replace_original=True, **_reply_kwargs(reply))


_ANY_ACTION = re.compile(r".*", re.DOTALL)


async def _out_of_date(body: dict[str, Any], respond: AsyncRespond) -> None:
    reply = message(BUTTON_OUT_OF_DATE, [section(BUTTON_OUT_OF_DATE)])
    if body.get("response_url"):
        await respond(response_type="ephemeral", replace_original=False, **_reply_kwargs(reply))


def register(app: AsyncApp, deps: Deps) -> None:
    async def share(body: dict[str, Any], respond: AsyncRespond) -> None:
        await _share(body, respond, deps)

    async def nearby(body: dict[str, Any], respond: AsyncRespond) -> None:
        await _nearby(body, respond, deps)

    # Messages whose thread this process already answered: the next clicks get the list
    # privately instead of one more copy in the thread for everyone.
    threaded: TtlCache[bool] = TtlCache(ttl=24 * 3600, size=10_000)

    async def key_prs(
        body: dict[str, Any],
        respond: AsyncRespond,
        client: AsyncWebClient,
        context: AsyncBoltContext,
    ) -> None:
        episode: Episode | None = None
        # Going under a digest whose delivered thread reply has the transcript: not twice.
        # (Looked at again after the read, where it is also claimed, with no await between.)
        in_thread = deps.settings.thread_replies and (
            _thread_target(body, context.bot_user_id, threaded) is not None
        )
        try:
            episode = await asyncio.to_thread(
                lambda: attach_one(deps.settings, deps.store, episode_of(body, deps))
            )
            if episode is None:
                replies = [message(EPISODE_GONE, [section(EPISODE_GONE)])]
            else:
                replies = (
                    deps.renderer.key_prs(episode, in_thread=in_thread)
                    if episode.pull_requests
                    else []
                )
                replies = replies or [message(KEY_PRS_NONE, [section(KEY_PRS_NONE)])]
        except Exception as exc:
            log.exception("Key PRs button failed")
            replies, episode = [failure_reply(exc)], None
        target = _thread_target(body, context.bot_user_id, threaded)
        if episode is not None and episode.pull_requests and target is not None:
            channel, ts = target
            threaded.put(f"{channel}:{ts}", True)
            try:
                for reply in replies:
                    await client.chat_postMessage(
                        channel=channel,
                        thread_ts=ts,
                        unfurl_links=False,
                        unfurl_media=False,
                        **_reply_kwargs(reply),
                    )
                return
            except (SlackApiError, SlackClientError) as exc:
                # Not in the channel any more, say: the clicker still gets the list.
                log.warning("thread reply in %s failed: %s", channel, exc)
        for reply in replies[:4]:  # a response_url takes 5 uses in all
            await respond(response_type="ephemeral", replace_original=False, **_reply_kwargs(reply))

    async def add_show_clicked(
        body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
    ) -> None:
        await _add_show_clicked(body, respond, client, deps)

    async def cancel_clicked(respond: AsyncRespond) -> None:
        await respond(replace_original=True, **_reply_kwargs(add_show.cancelled()))

    app.action(add_show.ADD_ACTION)(ack=ack_at_once, lazy=[add_show_clicked])
    app.action(add_show.CANCEL_ACTION)(ack=ack_at_once, lazy=[cancel_clicked])
    app.action(SHARE_ACTION)(ack=ack_at_once, lazy=[share])
    app.action(KEY_PRS_ACTION)(ack=ack_at_once, lazy=[key_prs])
    app.action(NEARBY_ACTION)(ack=ack_at_once, lazy=[nearby])
    # Last: Bolt runs the first listener that matches, so this only sees buttons of an
    # older release (or someone else's) — acked, and told so, instead of a 404.
    app.action(_ANY_ACTION)(ack=ack_at_once, lazy=[_out_of_date])
