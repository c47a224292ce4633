"""What every command handler gets: the app's parts and who asked, where."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.commands.ttl import TtlCache
from config.settings import Settings
from digests.render import Renderer
from digests.render.limits import Message
from digests.store import Store

# An ephemeral reply stays clickable until the person dismisses it; an hour covers reading
# one and deciding to share it (after that, the command is run again).
SHARED_TTL = 3600.0
SHARED_SIZE = 2000


@dataclass(frozen=True)
class Deps:
    settings: Settings
    store: Store
    renderer: Renderer
    now: Callable[[], datetime]
    # The answers people were shown, by the token their "Share in channel" button carries:
    # a share posts what the person saw, not the command run again later.
    answers: TtlCache[Message] = field(
        default_factory=lambda: TtlCache(ttl=SHARED_TTL, size=SHARED_SIZE), compare=False
    )
    # chat.getPermalink: (channel, ts) → the message's link; None without a Slack token.
    permalink: Callable[[str, str], str | None] | None = field(default=None, compare=False)

    @property
    def shows(self) -> list[str]:
        return [show.name for show in self.settings.shows]

    def today(self) -> date:
        return self.now().astimezone(self.settings.tz).date()


@dataclass(frozen=True)
class Invocation:
    """Who ran the command and where (from Slack's payload, so only ids)."""

    team_id: str
    channel_id: str
    user_id: str = ""
