"""App Home: the latest episodes and this workspace's subscriptions, within 100 blocks."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack import ack_at_once
from bot.jobs.enrichment import attach_details
from bot.listeners.commands.base import Deps
from bot.listeners.commands.episodes import spans_shows
from bot.listeners.commands.follows import describe
from bot.listeners.commands.replies import context as context_block
from bot.listeners.commands.replies import divider, section
from bot.listeners.commands.subscriptions import subscription_line
from bot.messages.answers import NO_EPISODES
from bot.messages.home import (
    HOME_FOLLOWING,
    HOME_HINT,
    HOME_LATEST,
    HOME_MORE,
    HOME_NO_SUBSCRIPTIONS,
    HOME_SUBSCRIPTIONS,
    HOME_TITLE,
)
from config.settings import CHANNEL_ID_PATTERN
from digests.models import Episode
from digests.render import blocks, escape, limits
from digests.render.limits import Block
from digests.store.follows import FollowStore
from digests.types import Follow, Subscription

log = logging.getLogger(__name__)

HOME_EPISODES = 10
SUBSCRIPTIONS_SHOWN = 60
HOME_FOLLOWS = 50
_CHANNEL_RE = re.compile(CHANNEL_ID_PATTERN)


def _channel(channel_id: str) -> str:
    # Slack renders <#C…> as the channel's name; anything else is shown as text.
    return f"<#{channel_id}>" if _CHANNEL_RE.match(channel_id) else str(escape.mrkdwn(channel_id))


def home_view(
    episodes: Sequence[Episode],
    subscriptions: Sequence[Subscription],
    deps: Deps,
    follows: Sequence[Follow] = (),
) -> dict[str, Any]:
    """The Home tab. Pure: the caller fetched ``episodes``, ``subscriptions`` and the viewer's
    ``follows``."""
    out: list[Block] = [blocks.header(HOME_TITLE), context_block(HOME_HINT), divider()]
    out += _following(follows)
    out.append(section(f"*{HOME_LATEST}*"))
    if episodes:
        newest = episodes[:HOME_EPISODES]
        several = spans_shows(newest)
        for episode in newest:
            prs = deps.renderer.pr_lines(episode, limit=2)
            line = deps.renderer.episode_line(episode, show_name=several)
            out.append(section(f"{line}\n{prs}" if prs else str(line)))
    else:
        out.append(section(NO_EPISODES))
    out += [divider(), section(f"*{HOME_SUBSCRIPTIONS}*")]
    if not subscriptions:
        out.append(section(HOME_NO_SUBSCRIPTIONS))
    by_channel: dict[str, list[Subscription]] = {}
    for sub in subscriptions:
        by_channel.setdefault(sub.channel_id, []).append(sub)
    shown = 0
    for channel_id, subs in by_channel.items():
        if shown >= SUBSCRIPTIONS_SHOWN:
            break
        lines = "\n".join(f"• {subscription_line(s, deps)}" for s in subs)
        out.append(section(f"{_channel(channel_id)}\n{lines}"))
        shown += 1
    if len(by_channel) > shown:
        out.append(context_block(HOME_MORE.format(count=len(by_channel) - shown)))
    fitted = limits.fit(
        limits.Message(text=HOME_TITLE, blocks=out), max_blocks=limits.BLOCKS_PER_VIEW
    )
    return {"type": "home", "blocks": fitted["blocks"]}


def _following(follows: Sequence[Follow]) -> list[Block]:
    """What the viewer follows by DM (``/episodes follow``), when anything."""
    if not follows:
        return []
    lines = "\n".join(f"• {describe(f.kind, f.target)}" for f in follows[:HOME_FOLLOWS])
    more = len(follows) - HOME_FOLLOWS
    out = [section(f"*{HOME_FOLLOWING}*\n{lines}")]
    if more > 0:
        out.append(context_block(HOME_MORE.format(count=more)))
    return [*out, divider()]


def load_home(deps: Deps, team_id: str, user_id: str = "") -> dict[str, Any]:
    episodes = attach_details(deps.settings, deps.store, deps.store.recent(HOME_EPISODES))
    subscriptions = deps.store.subscriptions(team_id=team_id) if team_id else []
    follows = FollowStore(deps.store).of_user(team_id, user_id) if team_id and user_id else []
    return home_view(episodes, subscriptions, deps, follows)


def register(app: AsyncApp, deps: Deps) -> None:
    async def publish(
        event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
    ) -> None:
        if event.get("tab", "home") != "home":
            return
        user = str(event.get("user") or "")
        if not user:
            return
        try:
            view = await asyncio.to_thread(load_home, deps, context.team_id or "", user)
            await client.views_publish(user_id=user, view=view)
        except (SlackApiError, SlackClientError) as exc:
            log.warning("views.publish for %s failed: %s", user, exc)
        except Exception:
            log.exception("App Home for %s failed", user)

    app.event("app_home_opened")(ack=ack_at_once, lazy=[publish])
