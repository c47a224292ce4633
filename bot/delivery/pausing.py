"""A channel Slack refuses (archived, deleted, not joinable) is paused, and whoever
subscribed it is told by DM, once per pause.

The store pauses the channel's subscriptions and hands the ones it paused to one caller
only; each DM goes through the ledger under a key naming the pause. So a user hears of one
pause once, however many deliverers (or processes) hit the refusal. The config file's
subscriptions have nobody to tell: the log says it. Every piece of the DM that came from a
feed or from Slack (show names, keywords, the error, the channel id) is mrkdwn-escaped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from bot.delivery.items import Delivery, DeliveryReport
from bot.messages.basics import COMMAND
from bot.messages.command_text import subscribe_args
from bot.messages.subscriptions import (
    PAUSE_REASON_OTHER,
    PAUSE_REASONS,
    PAUSED_DM,
    PAUSED_DM_AND,
    PAUSED_DM_COMMAND,
    PAUSED_DM_RESUME,
    PAUSED_DM_SHOW,
    PAUSED_DM_SHOWS_SEP,
)
from digests.render import blocks, limits
from digests.render.escape import Mrkdwn
from digests.store import Store
from digests.store.ledger_writer import LedgerWriter
from digests.types import Subscription

log = logging.getLogger(__name__)

Deliver = Callable[[Sequence[Delivery]], Awaitable[DeliveryReport]]


def paused_notice(channel_id: str, subs: Sequence[Subscription], error: str) -> dict[str, Any]:
    """The DM telling a subscriber that their channel's digests stopped, why, and the exact
    command that brings back each subscription (its show and keywords, nothing dropped)."""
    # Mrkdwn.format and join escape every plain str they are given: only our own wording
    # (already Mrkdwn) goes in as is.
    names = Mrkdwn(PAUSED_DM_SHOWS_SEP).join(
        Mrkdwn(PAUSED_DM_SHOW).format(show=sub.show) for sub in subs
    )
    reason = PAUSE_REASONS.get(error)
    why = Mrkdwn(reason) if reason else Mrkdwn(PAUSE_REASON_OTHER).format(error=error)
    commands = Mrkdwn(PAUSED_DM_AND).join(
        Mrkdwn(PAUSED_DM_COMMAND).format(
            command=COMMAND, args=subscribe_args(sub.show, sub.keywords)
        )
        for sub in subs
    )
    resume = Mrkdwn(PAUSED_DM_RESUME).format(commands=commands)
    text = Mrkdwn(PAUSED_DM).format(shows=names, channel=channel_id, why=why, resume=resume)
    return dict(limits.fit({"text": str(text), "blocks": [blocks.section(text)]}))


def pause_dms(
    team_id: str, channel_id: str, error: str, paused: Sequence[Subscription]
) -> list[Delivery]:
    """One DM per user who subscribed one of ``paused`` (the subscriptions one pause hit)."""
    by_user: dict[str, list[Subscription]] = {}
    for sub in paused:
        if sub.created_by:
            by_user.setdefault(sub.created_by, []).append(sub)
        else:
            log.warning(
                "%s in %s paused (%s); set in the config file, nobody to tell",
                sub.show,
                channel_id,
                error,
            )
    dms: list[Delivery] = []
    for user, subs in sorted(by_user.items()):
        when = subs[0].paused_at.isoformat() if subs[0].paused_at else ""
        message = paused_notice(channel_id, subs, error)
        # Posting to a user id opens the bot's DM with them.
        dms.append(Delivery(team_id, user, "notice", f"paused:{channel_id}:{when}", message))
    return dms


class Pauser:
    """Pauses a refused channel's subscriptions and tells their subscribers.

    ``deliver`` sends the DMs (the deliverer's own ``deliver``: the DMs go through the
    ledger like any post).
    """

    def __init__(
        self,
        store: Store,
        writer: LedgerWriter,
        deliver: Deliver,
        clock: Callable[[], datetime],
    ) -> None:
        self.store = store
        self.writer = writer
        self.deliver = deliver
        self.clock = clock

    async def pause(self, team_id: str, channel_id: str, error: str) -> None:
        now = self.clock()
        paused = await self.writer.call(
            lambda: self.store.pause_subscriptions(team_id, channel_id, error, now)
        )
        log.warning("pausing channel %s: %s", channel_id, error)
        dms = pause_dms(team_id, channel_id, error, paused)
        if not dms:
            return
        told = await self.deliver(dms)
        for ident, why in told.failed.items():
            log.warning("could not tell %s that %s is paused: %s", ident[1], channel_id, why)
