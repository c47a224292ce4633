"""Domain records. Pydantic where data enters; frozen so nothing mutates them in flight."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, field_validator

# What an episode whose feed gives no usable date carries until the store dates it.
UNKNOWN_DATE = datetime(1970, 1, 1, tzinfo=UTC)


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


@dataclass(frozen=True, slots=True)
class PrInfo:
    """What GitHub told us about one of an episode's PRs, as a reader is shown it (the state
    word already decided by the show's rules; see ``digests.pulls``). ``rank``: 0 is the
    most important of the episode's PRs."""

    number: int
    title: str = ""
    state: str | None = None  # open | draft | merged | closed | reverted; None: unknown
    area: str | None = None
    author: str | None = None
    missing: bool = False
    rank: int = 0
    weight: int = 0  # what its labels add to its importance (the show's label weights)
    merged_at: datetime | None = None  # when it landed, for a merged one


@dataclass(frozen=True, slots=True)
class TranscriptLink:
    """A ``<podcast:transcript>`` an item links: where its full text is, and in what form
    (``text/vtt``, ``application/x-subrip``, ``application/json``, ``text/html``,
    ``text/plain``; lower-cased, parameters cut)."""

    url: str
    type: str = ""
    language: str | None = None


@dataclass(frozen=True, slots=True)
class Cue:
    """A timed stretch of a transcript: when it starts (seconds from the episode's start)
    and what is said in it."""

    start: float
    text: str


@dataclass(frozen=True, slots=True)
class PrTime:
    """Where in the episode a PR (by its URL) is first named: whole seconds from the start."""

    url: str
    at: int


@dataclass(frozen=True, slots=True)
class Chapter:
    """One of an episode's chapters: where it starts (whole seconds), its title, and the
    link the chapter names, if any."""

    start: int
    title: str
    url: str | None = None


# Fields that say where more text may be had, not what a reader sees: a digest is not
# stale because they appeared.
_NOT_SHOWN = frozenset({"guid", "show", "transcript_links", "chapters_url"})


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
    # Attached from stored GitHub details just before rendering; never part of the JSON
    # (``parse --json``) and absent from what the store hashes.
    pr_info: tuple[PrInfo, ...] = Field(default=(), exclude=True, repr=False)
    transcript_links: tuple[TranscriptLink, ...] = ()
    chapters_url: str | None = None
    # How many PRs the text names when that is more than ``pull_requests`` keeps (its cap),
    # so the thread says "first 200 of 250"; 0: all are there. Neither JSON nor hash.
    pull_requests_named: int = Field(default=0, exclude=True, repr=False)
    # The hash of the feed item's bytes this episode was read from (``digests.parse.
    # item_hashes``), when reading it again would give this episode again; neither JSON
    # nor content hash.
    raw_hash: str | None = Field(default=None, exclude=True, repr=False)
    # When each PR is first named, from a timed transcript (empty without one); not part of
    # the JSON contract, hashed only when present so episodes without timings hash as before.
    pr_times: tuple[PrTime, ...] = Field(default=(), exclude=True, repr=False)
    # The episode's chapters (from its <podcast:chapters> document); likewise outside the JSON.
    chapters: tuple[Chapter, ...] = Field(default=(), exclude=True, repr=False)

    @field_validator("published_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def content_hash(self) -> str:
        """Fingerprint of what a reader sees; a change means the posted digest is stale.

        PR details count when attached (a title arriving, open → merged), so the posted
        digest is edited; without them the hash is the feed's alone, as before details.
        """
        digest = hashlib.sha256(self.model_dump_json(exclude=set(_NOT_SHOWN)).encode())
        if self.pr_info:
            digest.update(repr(self.pr_info).encode())
        if self.pr_times:
            digest.update(repr(self.pr_times).encode())
        if self.chapters:
            digest.update(repr(self.chapters).encode())
        return digest.hexdigest()

    def to_json(self) -> dict[str, object]:
        """The episode JSON contract; ``published_at`` is null when the feed gives no date."""
        data = self.model_dump(mode="json")
        if self.published_at == UNKNOWN_DATE:
            data["published_at"] = None
        return data


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
    transcripts: tuple[TranscriptLink, ...] = ()
    chapters_url: str | None = None
    chapters: tuple[Chapter, ...] = ()  # written in the item itself (Podlove Simple Chapters)
    raw_hash: str | None = None  # of the item's bytes, when the parse was asked to hash
    # The description and transcript are already as ``paragraphs`` leaves them (the feed
    # reader's are): extraction then need not normalise them again unless a cap cut them.
    normalised: bool = False


@dataclass(frozen=True, slots=True)
class ParsedSource:
    """A parsed feed or page: the show name it claims (if any) and its raw entries.

    ``skipped``: the items not read because their bytes hash as a stored episode's, each
    as (how many entries come before it, that episode's guid), in feed order.
    """

    kind: str  # "rss" | "atom" | "json-feed" | "page-text" | "page-html"
    show_title: str | None = None
    entries: tuple[RawEntry, ...] = ()
    link: str | None = None  # the show's own page (channel <link>, home_page_url)
    skipped: tuple[tuple[int, str], ...] = ()
    # A feed that is not well-formed XML, read leniently: what was wrong with it
    # (``digests.parse.lenient``); empty for a well-formed one.
    lenient: tuple[str, ...] = ()


# A recap's episodes and PRs: records that ``digests.recap.aggregate`` makes from
# validated episodes (hundreds a week), not models that validate them again.
@dataclass(frozen=True, slots=True, kw_only=True)
class RecapEpisode:
    show: str
    guid: str
    headline: str
    url: str | None = None
    published_at: datetime
    duration_seconds: int | None = None
    pr_count: int = 0


class RecapPullRequest(NamedTuple):
    """A named tuple: a week of 20 shows has some 700, and a frozen dataclass sets each
    of its nine fields through ``object.__setattr__`` (twice the cost of the tuple)."""

    number: int
    url: str
    episodes: tuple[str, ...] = ()  # headlines of the episodes naming it
    context: str = ""
    guids: tuple[str, ...] = ()  # guids of those episodes, same order
    # From GitHub, when known (see digests.pulls): the title, state word and area.
    title: str = ""
    state: str | None = None
    area: str | None = None
    merged_this_week: bool = False


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
    # Taken as made (a named tuple would otherwise be rebuilt field by field).
    pull_requests: tuple[InstanceOf[RecapPullRequest], ...] = ()
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
