"""The records the pipeline's stages hand each other: one place, no SQL, no Slack.

Fetch state and subscriptions come out of the store, upsert results and ledger entries
go into the decider, ``Due`` and ``Notice`` come out of it. Every stage imports these from
here, so no stage needs another stage's module for a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import cached_property
from typing import Literal

from digests.filters import Filter

# A feed item with no usable date carries UNKNOWN_DATE until the store dates it (when first
# seen, or by its place in the feed); it lives beside Episode, whose JSON hides it.
from digests.models import UNKNOWN_DATE as UNKNOWN_DATE
from digests.models import Chapter, Episode, PrTime

# Which PRs a show's text names (its `prs` setting): "PR 123" and links (the default), only
# github.com/owner/repo/pull/N links (a show whose "PR 2" is no GitHub PR: a mailing-list
# patch series), or none.
PrMode = Literal["mentions", "links", "off"]
MENTIONS: PrMode = "mentions"

Ident = tuple[str, str, str, str]  # a delivery: (team_id, channel_id, kind, key)


def is_undated(when: datetime) -> bool:
    return when == UNKNOWN_DATE


class EpisodeStatus(StrEnum):
    """What one poll found for a stored episode."""

    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


class LedgerState(StrEnum):
    """A delivery's state in the ledger.

    ``pending`` (planned, certainly not posted) → ``posting`` (claimed; the post may or may
    not have landed) → ``posted`` (``ts`` known) / ``failed`` (Slack refused it for good) /
    ``paused`` (the channel is unreachable; offered again when it is resumed).
    """

    PENDING = "pending"
    POSTING = "posting"
    POSTED = "posted"
    FAILED = "failed"
    PAUSED = "paused"


class Action(StrEnum):
    """What a due delivery does in Slack."""

    POST = "post"
    UPDATE = "update"


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
    # The feed's last read was lenient: what is wrong with its XML (``lenient.summary``).
    read_note: str | None = None


@dataclass(frozen=True)
class PlanInputs:
    """What the store says, in the read a poll starts with, about what a plan of the show
    would read: if none of it moved since a plan that found nothing due, an unchanged feed
    need not be planned again (``bot.jobs.poll_state``)."""

    subscriptions: int = 0  # grows with every write to the show's subscriptions
    episodes: int = 0  # grows with every statement writing the show's episodes
    ledger_head: int = 0  # the show's newest ledger row (rows are never deleted)
    unnamed_head: int = 0  # the newest ledger row that names no show
    quiet_plan: str | None = None  # the inputs' key when the last plan found nothing due


@dataclass(frozen=True)
class UpsertResult:
    episode: Episode
    status: EpisodeStatus


@dataclass(frozen=True)
class PrMention:
    episode: Episode
    context: str
    # The PR's URL as the episode names it: one number can be a PR of several repositories,
    # and an episode naming two of them is mentioned once for each.
    url: str = ""


@dataclass(frozen=True)
class Subscription:
    team_id: str
    channel_id: str
    show: str
    # The channel's filter as its terms (``Filter.terms()``: ``x``, ``+x``, ``-x``); the
    # store keeps it structured, and ``filter`` is the one to match with.
    keywords: tuple[str, ...] = ()
    recap: bool = True
    pr_updates: bool = False  # a reply in the digest's thread when a key PR settles
    paused_reason: str | None = None
    paused_at: datetime | None = None
    source: Literal["config", "slash"] = "slash"
    created_at: datetime | None = field(default=None, compare=False)
    created_by: str | None = None  # Slack user id; None for the config file's
    # A config-file subscription a user unsubscribed (kept so restarts do not revive it).
    unsubscribed_at: datetime | None = field(default=None, compare=False)
    # A pause people asked for (`/episodes pause`), apart from Slack's: episodes that arrive
    # in [held_at, held_until) are not posted; held_until None while it lasts until resumed.
    # Kept after it ends, so what arrived meanwhile stays unposted.
    held_at: datetime | None = field(default=None, compare=False)
    held_until: datetime | None = field(default=None, compare=False)
    # Daily digest mode (`subscribe … daily 17:00`): the local time of day ("HH:MM", in
    # `timezone`) of the channel's one message a day; None: a digest per episode.
    daily_at: str | None = None
    # When the current mode began (NULL: never changed): what arrived before it was the
    # other mode's to post, so neither mode posts it again.
    mode_changed_at: datetime | None = field(default=None, compare=False)

    @property
    def daily(self) -> bool:
        return self.daily_at is not None

    @property
    def paused(self) -> bool:
        return self.paused_reason is not None

    def held(self, now: datetime) -> bool:
        """Whether a user pause is on at ``now``."""
        return self.holds(now)

    def holds(self, arrival: datetime) -> bool:
        """Whether an episode that reached the bot at ``arrival`` fell in the user pause."""
        return (
            self.held_at is not None
            and self.held_at <= arrival
            and (self.held_until is None or arrival < self.held_until)
        )

    @property
    def unsubscribed(self) -> bool:
        return self.unsubscribed_at is not None

    @cached_property
    def filter(self) -> Filter:
        """Which episodes this channel wants (``digests.filters``); no terms, every one."""
        return Filter.from_terms(self.keywords, strict=False)


@dataclass(frozen=True)
class LedgerEntry:
    """What the ledger holds for one (team, channel, kind, key)."""

    state: LedgerState | str
    content_hash: str = ""


@dataclass(frozen=True)
class Due:
    """A delivery the poll owes: post a new digest, or update one already posted."""

    team_id: str
    channel_id: str
    show: str
    episode: Episode
    action: Action
    key: str


@dataclass(frozen=True)
class Notice:
    """A one-off line to a show's channels: its feed started failing or recovered.

    Its words are the renderer's (``notice.j2``); ``error`` is the feed's failure as the
    fetch described it, feed-controlled text the template escapes.
    """

    kind: Literal["failing", "recovered"]
    key: str
    show: str
    error: str | None = None


PrKey = tuple[str, int]  # a pull request: (repo "owner/name", number)
GitHubState = Literal["open", "closed", "merged"]  # what GitHub itself says


@dataclass(frozen=True)
class PrDetails:
    """What GitHub told us about one PR, as stored (``missing``: GitHub says there is no such
    PR; remembered so it is not asked again every poll). ``etag`` is the REST validator.
    ``merged_at``: GitHub's merge time, or a closed PR's close time (a bot-landed merge)."""

    repo: str
    number: int
    title: str = ""
    state: GitHubState = "open"
    draft: bool = False
    merged_at: datetime | None = None
    author: str | None = None
    labels: tuple[str, ...] = ()
    fetched_at: datetime | None = None
    etag: str | None = None
    missing: bool = False

    @property
    def key(self) -> PrKey:
        return (self.repo, self.number)


class RowStep(StrEnum):
    """What a delivery with a ledger row does next
    (:func:`digests.decide.deliveries.ledger_step`)."""

    NOTHING = "nothing"  # posted and unchanged
    EDIT = "edit"  # posted, and the content changed since
    REFUSED = "refused"  # Slack refused exactly this content before: not offered again
    BUSY = "busy"  # another live deliverer holds it right now
    RECOVER = "recover"  # claimed before and never finished: look in Slack before posting
    POST = "post"  # certainly not in Slack yet (pending, paused, or failed then changed)


EpisodeIdentity = tuple[str, str]  # (show, guid) as the store keeps them


@dataclass(frozen=True)
class StoredEpisode:
    """What the store holds of an episode a poll finds again: the upsert decider's input."""

    id: int
    content_hash: str
    published_at: datetime
    first_seen_at: datetime
    raw_hash: str | None = None  # of the feed item it was read from (see Episode.raw_hash)


@dataclass(frozen=True)
class EpisodeWrite:
    """Store ``episode`` (dated as the decider dated it) with ``content_hash``.

    ``id`` is the stored row to overwrite; None for a new episode.
    """

    episode: Episode
    content_hash: str
    id: int | None = None


@dataclass(frozen=True)
class Redate:
    """Give stored row ``id`` this publication date and change nothing else."""

    id: int
    published_at: datetime


@dataclass(frozen=True)
class Rehash:
    """Give stored row ``id`` this item hash (None: none) and change nothing else: its
    episode reads the same from bytes that now hash differently."""

    id: int
    raw_hash: str | None


@dataclass(frozen=True)
class UpsertIntents:
    """What one poll's episodes ask of the store, and what to report for each of them."""

    inserts: tuple[EpisodeWrite, ...] = ()
    updates: tuple[EpisodeWrite, ...] = ()
    redates: tuple[Redate, ...] = ()
    results: tuple[UpsertResult, ...] = ()
    rehashes: tuple[Rehash, ...] = ()


TranscriptStatus = Literal["ok", "failed"]


@dataclass(frozen=True)
class StoredTranscript:
    """An episode's ``<podcast:transcript>`` as fetched once: its text (``ok``), or why it
    could not be had (``failed``; ``attempts`` counts tries, a failure that trying again
    cannot mend is stored at the maximum). Keyed by show and ``guid_key(guid)``; ``url``
    is the link it came from, so a feed that changes the link gets it fetched again."""

    show: str
    guid_key: str
    url: str
    status: TranscriptStatus
    fetched_at: datetime
    text: str = ""
    error: str | None = None
    attempts: int = 1
    pr_times: tuple[PrTime, ...] = ()  # where each PR is first named, when the text is timed


@dataclass(frozen=True)
class StoredChapters:
    """An episode's ``<podcast:chapters>`` document as fetched once: its chapters (``ok``),
    or why they could not be had (``failed``), as ``StoredTranscript`` keeps a transcript."""

    show: str
    guid_key: str
    url: str
    status: TranscriptStatus
    fetched_at: datetime
    chapters: tuple[Chapter, ...] = ()
    error: str | None = None
    attempts: int = 1


class FollowKind(StrEnum):
    """What a person follows: a pull request (by its URL) or words (a filter's terms)."""

    PR = "pr"
    WORDS = "words"


@dataclass(frozen=True)
class Follow:
    """One person's follow (``/episodes follow``): they get a direct message when a new
    episode of a show their workspace follows names it, and, for a PR, when its state
    becomes merged, closed or reverted. ``target``: the PR's URL, or the filter's terms as
    text; ``last_state``: the PR's state last told (or known when followed)."""

    id: int
    team_id: str
    user_id: str
    kind: FollowKind
    target: str
    created_at: datetime
    last_state: str | None = None
