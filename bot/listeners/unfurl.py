"""Unfurls: a pasted episode URL of a known show becomes a compact digest (``chat.unfurl``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.slack import ack_at_once
from bot.jobs.enrichment import attach_one
from bot.listeners.commands.base import Deps
from bot.listeners.commands.replies import context, section
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Block

log = logging.getLogger(__name__)

MAX_LINKS = 5  # Slack sends at most a handful per message; more is not a real paste
SUMMARY_CHARS = 300


def unfurl_blocks(episode: Episode, deps: Deps) -> list[Block]:
    """Compact: the episode's line (date · headline · duration · PRs) and a short summary."""
    summary = escape.mrkdwn(escape.truncate(escape.oneline(episode.summary), SUMMARY_CHARS))
    out = [section(f"*{escape.mrkdwn(episode.show)}*\n{deps.renderer.episode_line(episode)}")]
    prs = deps.renderer.pr_lines(episode)
    if prs:
        out.append(section(str(prs)))
    if summary:
        out.append(context(str(summary)))
    return out


def unfurls_for(links: Sequence[dict[str, Any]], deps: Deps) -> dict[str, dict[str, Any]]:
    unfurls: dict[str, dict[str, Any]] = {}
    for item in links[:MAX_LINKS]:
        url = str(item.get("url") or "") if isinstance(item, dict) else ""
        if not url or url in unfurls:
            continue
        # The store also matches the spellings a paste adds: #fragment, trailing slash, http.
        episode = attach_one(deps.settings, deps.store, deps.store.episode_by_url(url))
        if episode is not None:
            unfurls[url] = {"blocks": unfurl_blocks(episode, deps)}
    return unfurls


def register(app: AsyncApp, deps: Deps) -> None:
    async def on_link_shared(event: dict[str, Any], client: AsyncWebClient) -> None:
        try:
            unfurls = await asyncio.to_thread(unfurls_for, event.get("links") or [], deps)
        except Exception:
            log.exception("unfurl lookup failed")
            return
        if not unfurls:
            return
        target: dict[str, Any]
        if event.get("source") == "composer" and event.get("unfurl_id"):
            # A link still in the message box has no channel or ts yet, only an unfurl id.
            target = {"unfurl_id": event["unfurl_id"], "source": "composer"}
        else:
            target = {"channel": event.get("channel"), "ts": event.get("message_ts")}
        try:
            await client.chat_unfurl(unfurls=unfurls, **target)
        except (SlackApiError, SlackClientError) as exc:
            log.warning("chat.unfurl failed: %s", exc)

    app.event("link_shared")(ack=ack_at_once, lazy=[on_link_shared])
