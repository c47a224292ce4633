"""The Store: one object, built from a database URL, passed to whoever needs it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from digests.models import Episode
from digests.store.records import FetchState, PrMention, Subscription, UpsertResult


class Store:
    """CONTRACT — every method below is implemented for SQLite and PostgreSQL alike."""

    def __init__(self, url: str) -> None:
        """Create the engine (no connection yet). ``url`` is a SQLAlchemy URL."""
        raise NotImplementedError

    @classmethod
    def open(cls, url: str) -> Store:
        """Engine + ``migrate()``: the usual way to get a ready store."""
        raise NotImplementedError

    def migrate(self) -> None:
        """Alembic ``upgrade head`` (programmatic, migrations shipped in the package)."""
        raise NotImplementedError

    def ping(self) -> bool:
        """True when the database answers ``SELECT 1``."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- shows and their fetch state ------------------------------------------------------
    def ensure_show(self, name: str, feed: str, repo: str) -> None:
        raise NotImplementedError

    def fetch_state(self, show: str) -> FetchState:
        raise NotImplementedError

    def save_fetch_state(self, show: str, state: FetchState) -> None:
        raise NotImplementedError

    # -- episodes ---------------------------------------------------------------------------
    def upsert_episodes(self, episodes: Iterable[Episode], now: datetime) -> list[UpsertResult]:
        """One row per (show, guid); 'changed' when the content hash differs."""
        raise NotImplementedError

    def episode(self, show: str, guid: str) -> Episode | None:
        raise NotImplementedError

    def episode_by_url(self, url: str) -> Episode | None:
        raise NotImplementedError

    def recent(self, limit: int, shows: Sequence[str] | None = None) -> list[Episode]:
        """Newest first."""
        raise NotImplementedError

    def between(
        self, start: datetime, end: datetime, shows: Sequence[str] | None = None
    ) -> list[Episode]:
        """Published in [start, end), oldest first."""
        raise NotImplementedError

    def nearest(self, when: datetime, shows: Sequence[str] | None = None) -> Episode | None:
        raise NotImplementedError

    def neighbours(self, episode: Episode) -> tuple[Episode | None, Episode | None]:
        """(previous, next) episode of the same show by publication time."""
        raise NotImplementedError

    def by_title(self, title: str, shows: Sequence[str] | None = None) -> Episode | None:
        """The episode whose headline equals ``title`` (case-insensitive), else None."""
        raise NotImplementedError

    def by_pr(self, number: int, shows: Sequence[str] | None = None) -> list[PrMention]:
        """Every episode naming PR ``number``, newest first, with the sentence that names it."""
        raise NotImplementedError

    def search(
        self, query: str, limit: int = 10, shows: Sequence[str] | None = None
    ) -> list[Episode]:
        """Full text over headline, summary, transcript (FTS5 / PostgreSQL), ranked."""
        raise NotImplementedError

    # -- subscriptions ----------------------------------------------------------------------
    def subscribe(
        self,
        team_id: str,
        channel_id: str,
        show: str,
        keywords: Sequence[str] = (),
        recap: bool = True,
        source: str = "slash",
    ) -> Subscription:
        """Create or replace; also un-pauses."""
        raise NotImplementedError

    def unsubscribe(self, team_id: str, channel_id: str, show: str | None = None) -> int:
        raise NotImplementedError

    def subscriptions(
        self,
        team_id: str | None = None,
        channel_id: str | None = None,
        show: str | None = None,
        include_paused: bool = True,
    ) -> list[Subscription]:
        raise NotImplementedError

    def pause_channel(self, team_id: str, channel_id: str, reason: str, now: datetime) -> int:
        raise NotImplementedError

    def resume_channel(self, team_id: str, channel_id: str) -> int:
        raise NotImplementedError
