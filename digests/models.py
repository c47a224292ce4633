"""Domain records. Pydantic where data enters; frozen so nothing mutates them in flight."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator


def guid_key(guid: str) -> str:
    """A fixed-length stand-in for a GUID too long for a button value (sha256, hex); the
    store indexes it, so a button can name an episode by it."""
    return hashlib.sha256(guid.encode()).hexdigest()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True, slots=True)
class PullRequestRef:
    """A PR an episode names. A plain record, not a model: a large feed makes tens of
    thousands of them, our extractor is their only maker, and an ``Episode`` read from
    JSON still validates them (pydantic checks dataclass fields from dicts)."""

    number: int
    url: str
    context: str = ""


class Episode(_Frozen):
    """One episode as digestbot understands it (the contract behind ``parse --json``)."""

    guid: str
    show: str
    title: str
    headline: str
    summary: str = ""
    published_at: datetime
    duration_seconds: int | None = None
    url: str | None = None
    audio_url: str | None = None
    pull_requests: tuple[PullRequestRef, ...] = ()
    nearby: tuple[str, ...] = ()
    transcript: str = ""

    @field_validator("published_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def content_hash(self) -> str:
        """Fingerprint of what a reader sees; a change means the posted digest is stale."""
        return hashlib.sha256(self.model_dump_json(exclude={"guid", "show"}).encode()).hexdigest()

    def to_json(self) -> dict[str, object]:
        return self.model_dump(mode="json")


@dataclass(frozen=True, slots=True)
class RawEntry:
    """What a parser read from one item or page, before extraction cleans it up: strings
    our parsers cut from the document, so a record rather than a validated model."""

    guid: str | None = None
    title: str = ""
    description: str = ""
    transcript: str = ""
    published: str | None = None
    duration: str | None = None
    link: str | None = None
    audio_url: str | None = None
    nearby: tuple[str, ...] = ()
    show: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedSource:
    """A parsed feed or page: the show name it claims (if any) and its raw entries."""

    kind: str  # "rss" | "atom" | "page-text" | "page-html"
    show_title: str | None = None
    entries: tuple[RawEntry, ...] = ()


class Show(_Frozen):
    name: str
    feed: str
    repo: str = "pytorch/pytorch"


class RecapEpisode(_Frozen):
    show: str
    guid: str
    headline: str
    url: str | None = None
    published_at: datetime
    duration_seconds: int | None = None
    pr_count: int = 0


class RecapPullRequest(_Frozen):
    number: int
    url: str
    episodes: tuple[str, ...] = Field(default=(), description="headlines of episodes naming it")
    context: str = ""
    guids: tuple[str, ...] = Field(default=(), description="guids of those episodes, same order")


class WeeklyRecap(_Frozen):
    """One ISO week of one channel's shows, aggregated."""

    year: int
    week: int
    shows: tuple[str, ...]
    timezone: str
    start: datetime
    end: datetime
    episodes: tuple[RecapEpisode, ...] = ()
    total_seconds: int = 0
    pull_requests: tuple[RecapPullRequest, ...] = ()
    subjects: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    untimed_episodes: int = Field(default=0, description="episodes with no known duration")

    @property
    def first_day(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)

    @property
    def last_day(self) -> date:
        return date.fromisocalendar(self.year, self.week, 7)

    @property
    def key(self) -> str:
        return f"{self.year}-W{self.week:02d}"
