"""What every command handler gets: the app's parts and who asked, where."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime

from config.settings import Settings
from digests.render import Renderer
from digests.store import Store


@dataclass(frozen=True)
class Deps:
    settings: Settings
    store: Store
    renderer: Renderer
    now: Callable[[], datetime]

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
