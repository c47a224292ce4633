"""A short-lived cache of `/episodes` answers, so a busy channel costs one query per TTL.

Answering from the store and rendering is most of a command's CPU, which caps what one
process answers per second; a hit costs a dict lookup (docs/benchmarks.md). Episodes
change at most once per poll (minutes), so a few seconds of staleness is invisible. Answers
about this channel's own state (list, status) and changes (subscribe) are never cached,
and a change in this process clears everything. With several shows, a query that names
no show answers for the channel's shows, so its key names the channel (``channel_scoped``):
such an answer is good only while the store's subscriptions version
(``Store.answers_version``) is the one it was made under, so a subscribe on another web
process is seen by the next command here.
"""

from __future__ import annotations

from datetime import date
from functools import lru_cache

from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.model import EPISODE_QUERIES, CommandError, Week
from bot.listeners.commands.parse import parse_command, unparse
from bot.listeners.commands.ttl import DEFAULT_SIZE, DEFAULT_TTL, SingleFlight, TtlCache

__all__ = [
    "DEFAULT_SIZE",
    "DEFAULT_TTL",
    "SingleFlight",
    "TtlCache",
    "cache_key",
    "channel_scoped",
]

_CHANNEL = "\x1f"  # separates a key's command from the channel it depends on


def cache_key(text: str, deps: Deps, invocation: Invocation) -> str | None:
    """The key of a cacheable command (canonical text, plus what else it depends on)."""
    base, per_channel = _command_key(text, tuple(deps.shows), deps.today())
    if base is None or not per_channel:
        return base
    return f"{base}{_CHANNEL}{invocation.team_id}{_CHANNEL}{invocation.channel_id}"


def channel_scoped(key: str) -> bool:
    """Whether the answer under ``key`` depends on what the channel follows."""
    return _CHANNEL in key


@lru_cache(maxsize=1024)
def _command_key(text: str, shows: tuple[str, ...], today: date) -> tuple[str | None, bool]:
    """(the key's command part, whether it depends on the channel): parsing is pure, and a
    busy channel sends the same few texts, so each is parsed once a day (a parse cost as
    much as the rest of a cache hit's own work)."""
    try:
        command = parse_command(text, list(shows), today=today)
    except CommandError:
        return None, False  # parsing is the whole cost of an error reply
    if isinstance(command, EPISODE_QUERIES):
        # Without a show named, the answer is about the shows this channel follows.
        return unparse(command), command.show is None and len(shows) >= 2
    if isinstance(command, Week):
        # The week shown depends on the shows this channel follows; a bare `week` also on
        # today (and on whether this week has episodes yet, which the TTL bounds).
        return (unparse(command) if command.monday else f"week@{today.isoformat()}"), True
    return None, False
