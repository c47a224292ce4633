"""Small frozen records the store hands out instead of rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from digests.models import Episode


@dataclass(frozen=True)
class FetchState:
    """Per-show polling state: conditional-GET validators, failures and the next poll."""

    etag: str | None = None
    last_modified: str | None = None
    last_polled_at: datetime | None = None
    last_success_at: datetime | None = None
    last_error: str | None = None
    failures: int = 0
    next_poll_at: datetime | None = None
    failing_notified: bool = False


@dataclass(frozen=True)
class UpsertResult:
    episode: Episode
    status: Literal["new", "changed", "unchanged"]


@dataclass(frozen=True)
class PrMention:
    episode: Episode
    context: str


@dataclass(frozen=True)
class Subscription:
    team_id: str
    channel_id: str
    show: str
    keywords: tuple[str, ...] = ()
    recap: bool = True
    paused_reason: str | None = None
    paused_at: datetime | None = None
    source: Literal["config", "slash"] = "slash"
    created_at: datetime | None = field(default=None, compare=False)
    created_by: str | None = None  # Slack user id; None for the config file's
    # A config-file subscription a user unsubscribed (kept so restarts do not revive it).
    unsubscribed_at: datetime | None = field(default=None, compare=False)

    @property
    def paused(self) -> bool:
        return self.paused_reason is not None

    @property
    def unsubscribed(self) -> bool:
        return self.unsubscribed_at is not None
