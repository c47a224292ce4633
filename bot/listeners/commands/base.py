"""What every command handler gets: the app's parts and who asked, where."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.catalog import added_shows
from bot.listeners.commands.ttl import TtlCache
from config.settings import Settings
from digests.render.limits import Message
from digests.render.renderer import Renderer
from digests.store import Store

# An ephemeral reply stays clickable until the person dismisses it; an hour covers reading
# one and deciding to share it (after that, the command is run again).
SHARED_TTL = 3600.0
SHARED_SIZE = 2000


# How long the names of the shows added from Slack are taken as read: another process's
# add-show is known to this one's commands within this many seconds.
ADDED_NAMES_TTL = 5.0


class AddedNames:
    """The names of the shows added from Slack, as last read from the store. Read again
    (in the worker thread a command runs in) once they are ``ttl`` seconds old, so the
    parser on the event loop never waits for the database."""

    def __init__(self, ttl: float = ADDED_NAMES_TTL) -> None:
        self.ttl = ttl
        self._names: tuple[str, ...] = ()
        self._read_at: float | None = None
        self._lock = threading.Lock()

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def refresh(self, read: Callable[[], list[str]], *, force: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            if not force and self._read_at is not None and now - self._read_at < self.ttl:
                return
            self._names = tuple(read())
            self._read_at = now


@dataclass(frozen=True)
class Deps:
    settings: Settings
    store: Store
    renderer: Renderer
    now: Callable[[], datetime]
    # The answers people were shown, by the token their "Share in channel" button carries:
    # a share posts what the person saw, not the command run again later. This process's
    # recent ones; the store keeps them for every process (``Store.keep_answer``).
    answers: TtlCache[Message] = field(
        default_factory=lambda: TtlCache(ttl=SHARED_TTL, size=SHARED_SIZE), compare=False
    )
    # chat.getPermalink: (channel, ts) → the message's link; None without a Slack token.
    permalink: Callable[[str, str], str | None] | None = field(default=None, compare=False)

    # The shows added from Slack (`/episodes add-show`), beside the config file's.
    added: AddedNames = field(default_factory=AddedNames, compare=False)

    @property
    def shows(self) -> list[str]:
        """Every show's name: the config file's, then those added from Slack."""
        return [show.name for show in self.settings.shows] + list(self.added.names)

    def refresh_shows(self, *, force: bool = False) -> None:
        """Read the added shows' names again if they are old (or ``force``); blocking. Their
        repositories go to the renderer too: a PR of another one is ``owner/repo#n``."""

        def read() -> list[str]:
            added = added_shows(self.settings, self.store)
            self.renderer.repos.update({s.name: s.repo for s in added})
            return [s.name for s in added]

        self.added.refresh(read, force=force)

    def today(self) -> date:
        return self.now().astimezone(self.settings.tz).date()


@dataclass(frozen=True)
class Invocation:
    """Who ran the command and where (from Slack's payload, so only ids)."""

    team_id: str
    channel_id: str
    user_id: str = ""
