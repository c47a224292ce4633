"""`/episodes` commands as data: what ``parse_command`` returns and the handlers take.

Also ``CommandError`` (one line of reason plus the usage of the subcommand it concerns) and
the limits the parser enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from bot.messages.usage import USAGE, USAGE_SHORT
from digests.errors import DigestError

MAX_RECENT = 20
DEFAULT_RECENT = 5
MAX_KEYWORDS = 10
MAX_KEYWORD_LEN = 50
# difflib ratio above which a word is taken for a misspelt show ("PyTroch" 0.86), not a
# keyword ("python" 0.62 against "PyTorch").
TYPO_CUTOFF = 0.8
# PostgreSQL's integer; a bigger "PR number" is a typo or an attack, not a PR.
MAX_PR = 2**31 - 1

MIN_YEAR, MAX_YEAR = 2000, 2100


class CommandError(DigestError):
    """A bad argument: ``reason`` is one line, ``usage`` the subcommand(s) it concerns."""

    def __init__(self, reason: str, subcommand: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.subcommand = subcommand

    @property
    def usage(self) -> str:
        return USAGE.get(self.subcommand or "", USAGE_SHORT)


# ``show`` on a query: the show named in the command (``recent JAX 3``); None asks about the
# shows the channel follows (every show when it follows none).


@dataclass(frozen=True)
class Recent:
    n: int = DEFAULT_RECENT
    show: str | None = None


@dataclass(frozen=True)
class Latest:
    show: str | None = None


@dataclass(frozen=True)
class NearbyDate:
    day: date
    show: str | None = None


@dataclass(frozen=True)
class NearbyTitle:
    words: str
    show: str | None = None


@dataclass(frozen=True)
class NearbyPr:
    number: int
    show: str | None = None


@dataclass(frozen=True)
class NearbyUrl:
    url: str
    show: str | None = None


@dataclass(frozen=True)
class Pr:
    number: int
    show: str | None = None
    # ``owner/repo`` of a pasted GitHub link: only that repository's PR is meant.
    repo: str | None = None


@dataclass(frozen=True)
class Search:
    words: str
    show: str | None = None


@dataclass(frozen=True)
class Week:
    """An ISO week; ``Week()`` (no week given) is settled against the archive when run."""

    year: int | None = None
    number: int | None = None
    # A bare `week` that shows last week because this one has no episodes yet: the reply
    # says so. Not part of the command's identity (it is a fact about the archive).
    fell_back: bool = field(default=False, compare=False)
    show: str | None = None

    @property
    def monday(self) -> date | None:
        if self.year is None or self.number is None:
            return None
        return date.fromisocalendar(self.year, self.number, 1)


def week_containing(day: date) -> Week:
    iso = day.isocalendar()
    return Week(iso.year, iso.week)


DAILY_OFF = "off"


@dataclass(frozen=True)
class Subscribe:
    show: str
    keywords: tuple[str, ...] = ()
    # More shows named in the same command (`subscribe PyTorch JAX`), same keywords.
    also: tuple[str, ...] = ()
    # `recap on|off`; None keeps what the channel had (on for a new subscription).
    recap: bool | None = None
    # `daily 17:00` ("HH:MM"), `daily off` (DAILY_OFF: a digest per episode); None keeps
    # the mode the subscription had (per episode for a new one).
    daily: str | None = None
    # `pr-updates on|off`: PR news in posted digests' threads; None keeps what it was.
    pr_updates: bool | None = None

    @property
    def shows(self) -> tuple[str, ...]:
        return (self.show, *self.also)


@dataclass(frozen=True)
class Unsubscribe:
    show: str | None = None
    # More shows named in the same command (`unsubscribe JAX Triton`); none without a show.
    also: tuple[str, ...] = ()

    @property
    def shows(self) -> tuple[str, ...]:
        """The shows named; empty: every show of the channel."""
        return (self.show, *self.also) if self.show else ()


@dataclass(frozen=True)
class ListSubscriptions:
    pass


@dataclass(frozen=True)
class Status:
    pass


@dataclass(frozen=True)
class Help:
    unknown: str | None = None


@dataclass(frozen=True)
class Preview:
    """What ``terms`` (a filter, as ``digests.filters`` stores it) would do to ``show``."""

    show: str
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pause:
    """A user pause of ``show`` (every show of the channel when None): for ``duration``
    from now, until the start of ``until`` (a day in the team's timezone), or with neither
    until resumed."""

    show: str | None = None
    duration: timedelta | None = None
    until: date | None = None
    also: tuple[str, ...] = ()  # more shows named (`pause PyTorch, JAX for 3d`)

    @property
    def shows(self) -> tuple[str, ...]:
        return (self.show, *self.also) if self.show else ()


@dataclass(frozen=True)
class Explain:
    """``why <episode>``: the episode as ``nearby`` reads it."""

    target: NearbyDate | NearbyTitle | NearbyPr | NearbyUrl


@dataclass(frozen=True)
class Resume:
    show: str | None = None
    catch_up: bool = False
    also: tuple[str, ...] = ()  # more shows named (`resume PyTorch JAX`)

    @property
    def shows(self) -> tuple[str, ...]:
        return (self.show, *self.also) if self.show else ()


@dataclass(frozen=True)
class FollowTarget:
    """What a person follows: a PR (``number``, and ``repo`` when the command named it) or
    words (``terms``, in the filter syntax)."""

    number: int | None = None
    repo: str | None = None
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class StartFollow:
    target: FollowTarget


@dataclass(frozen=True)
class StopFollow:
    target: FollowTarget


@dataclass(frozen=True)
class ListFollows:
    pass


Command = (
    Recent
    | Latest
    | NearbyDate
    | NearbyTitle
    | NearbyPr
    | NearbyUrl
    | Pr
    | Search
    | Week
    | Subscribe
    | Unsubscribe
    | ListSubscriptions
    | Status
    | Help
    | Preview
    | Pause
    | Resume
    | Explain
    | StartFollow
    | StopFollow
    | ListFollows
)

# Questions about the archive alone: the same answer in every channel (so one cache entry
# serves them all).
EPISODE_QUERIES = (Recent, Latest, NearbyDate, NearbyTitle, NearbyPr, NearbyUrl, Pr, Search)
# Read-only answers may be re-run for "Share in channel"; the others change state.
SHAREABLE = (*EPISODE_QUERIES, Week, ListSubscriptions, Status)


def quote_value(value: str, limit: int = 40) -> str:
    """An argument echoed back to the user: short, and unable to close our backticks."""
    value = value.replace("`", "'")
    return value if len(value) <= limit else value[: limit - 1] + "…"
