"""`/episodes` arguments → a typed command. Pure: text and the configured shows in, data out.

The text is untrusted and arrives straight from Slack: it is length-capped before anything
else, and every rejection is a ``CommandError`` carrying one line of reason plus the usage
of the subcommand it concerns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from bot import messages as msg
from digests.errors import DigestError
from digests.render.escape import unescape

MAX_RECENT = 20
DEFAULT_RECENT = 5
MAX_KEYWORDS = 10
MAX_KEYWORD_LEN = 50
# PostgreSQL's integer; a bigger "PR number" is a typo or an attack, not a PR.
MAX_PR = 2**31 - 1

_DATE_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_DATELIKE_RE = re.compile(r"^\d{2,4}[-/.]\d{1,2}[-/.]\d{1,4}$")
_PR_RE = re.compile(r"^#?(\d+)$")


class CommandError(DigestError):
    """A bad argument: ``reason`` is one line, ``usage`` the subcommand(s) it concerns."""

    def __init__(self, reason: str, subcommand: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.subcommand = subcommand

    @property
    def usage(self) -> str:
        return msg.USAGE.get(self.subcommand or "", msg.USAGE_SHORT)


@dataclass(frozen=True)
class Recent:
    n: int = DEFAULT_RECENT


@dataclass(frozen=True)
class Latest:
    pass


@dataclass(frozen=True)
class NearbyDate:
    day: date


@dataclass(frozen=True)
class NearbyTitle:
    words: str


@dataclass(frozen=True)
class NearbyPr:
    number: int


@dataclass(frozen=True)
class Pr:
    number: int


@dataclass(frozen=True)
class Search:
    words: str


@dataclass(frozen=True)
class Week:
    day: date | None = None


@dataclass(frozen=True)
class Subscribe:
    show: str
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unsubscribe:
    show: str | None = None


@dataclass(frozen=True)
class ListSubscriptions:
    pass


@dataclass(frozen=True)
class Status:
    pass


@dataclass(frozen=True)
class Help:
    unknown: str | None = None


Command = (
    Recent
    | Latest
    | NearbyDate
    | NearbyTitle
    | NearbyPr
    | Pr
    | Search
    | Week
    | Subscribe
    | Unsubscribe
    | ListSubscriptions
    | Status
    | Help
)

# Questions about the archive alone: the same answer in every channel (so one cache entry
# serves them all).
EPISODE_QUERIES = (Recent, Latest, NearbyDate, NearbyTitle, NearbyPr, Pr, Search)
# Read-only answers may be re-run for "Share in channel"; the others change state.
SHAREABLE = (*EPISODE_QUERIES, Week, ListSubscriptions, Status)


def _quote(value: str, limit: int = 40) -> str:
    """An argument echoed back to the user: short, and unable to close our backticks."""
    value = value.replace("`", "'")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def parse_date(value: str, subcommand: str) -> date:
    match = _DATE_RE.match(value)
    if not match:
        raise CommandError(msg.NOT_A_DATE.format(value=_quote(value)), subcommand)
    year, month, day = (int(part) for part in match.groups())
    if not 2000 <= year <= 2100:
        raise CommandError(msg.DATE_RANGE.format(value=_quote(value)), subcommand)
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise CommandError(msg.NO_SUCH_DATE.format(value=_quote(value)), subcommand) from exc


def parse_pr(value: str, subcommand: str) -> int:
    match = _PR_RE.match(value)
    if not match:
        raise CommandError(msg.NOT_A_PR.format(value=_quote(value)), subcommand)
    number = int(match.group(1)[:12])
    if len(match.group(1)) > 10 or number > MAX_PR or number == 0:
        raise CommandError(msg.PR_RANGE.format(value=_quote(value)), subcommand)
    return number


def _parse_recent(args: list[str]) -> Recent:
    if not args:
        return Recent()
    if len(args) > 1:
        raise CommandError(msg.EXTRA_ARGS.format(value=_quote(args[1]), command="recent"), "recent")
    raw = args[0]
    if not raw.isdigit() or not raw.isascii():
        raise CommandError(msg.NOT_A_COUNT.format(value=_quote(raw)), "recent")
    n = int(raw[:6])
    if len(raw) > 6 or not 1 <= n <= MAX_RECENT:
        raise CommandError(
            msg.COUNT_RANGE.format(limit=MAX_RECENT, value=_quote(raw, 12)), "recent"
        )
    return Recent(n)


def _parse_nearby(args: list[str]) -> NearbyDate | NearbyTitle | NearbyPr:
    if not args:
        raise CommandError(msg.NEED_NEARBY, "nearby")
    first = args[0]
    if len(args) == 1 and (_DATE_RE.match(first) or _DATELIKE_RE.match(first)):
        return NearbyDate(parse_date(first, "nearby"))
    if len(args) == 1 and first.startswith("#"):
        return NearbyPr(parse_pr(first, "nearby"))
    if len(args) == 2 and first.casefold() == "pr":
        return NearbyPr(parse_pr(args[1], "nearby"))
    return NearbyTitle(" ".join(args))


def _parse_pr(args: list[str]) -> Pr:
    if not args:
        raise CommandError(msg.NEED_PR, "pr")
    if len(args) > 1:
        raise CommandError(msg.EXTRA_ARGS.format(value=_quote(args[1]), command="pr"), "pr")
    return Pr(parse_pr(args[0], "pr"))


def _parse_week(args: list[str]) -> Week:
    if not args:
        return Week()
    if len(args) > 1:
        raise CommandError(msg.EXTRA_ARGS.format(value=_quote(args[1]), command="week"), "week")
    return Week(parse_date(args[0], "week"))


def _match_show(word: str, shows: Sequence[str]) -> str | None:
    wanted = word.casefold()
    return next((s for s in shows if s.casefold() == wanted), None)


def _show_list(shows: Sequence[str]) -> str:
    return ", ".join(shows) if shows else "none"


def _leading_show(args: list[str], shows: Sequence[str]) -> tuple[str | None, list[str]]:
    """The configured show the words start with (longest match: names may have spaces)."""
    for k in range(len(args), 0, -1):
        show = _match_show(" ".join(args[:k]), shows)
        if show is not None:
            return show, args[k:]
    return None, args


def _parse_subscribe(args: list[str], shows: Sequence[str]) -> Subscribe:
    if not shows:
        raise CommandError(msg.NO_SHOWS, "subscribe")
    show, rest = _leading_show(args, shows)
    if show is not None:
        keywords = rest
    elif len(shows) == 1:
        # With one show the show may be omitted, so every word is a keyword filter.
        show, keywords = shows[0], args
    elif args:
        raise CommandError(
            msg.UNKNOWN_SHOW.format(name=_quote(args[0]), shows=_show_list(shows)), "subscribe"
        )
    else:
        raise CommandError(msg.NAME_THE_SHOW.format(shows=_show_list(shows)), "subscribe")
    if len(keywords) > MAX_KEYWORDS:
        raise CommandError(msg.TOO_MANY_KEYWORDS.format(limit=MAX_KEYWORDS), "subscribe")
    if any(len(k) > MAX_KEYWORD_LEN for k in keywords):
        raise CommandError(msg.KEYWORD_TOO_LONG.format(limit=MAX_KEYWORD_LEN), "subscribe")
    # Order kept, repeats (in any case) dropped: the filter is a set, the reply is readable.
    seen: dict[str, str] = {}
    for keyword in keywords:
        seen.setdefault(keyword.casefold(), keyword)
    return Subscribe(show, tuple(seen.values()))


def _parse_unsubscribe(args: list[str], shows: Sequence[str]) -> Unsubscribe:
    if not args:
        return Unsubscribe()
    name = " ".join(args)
    show = _match_show(name, shows)
    if show is None:
        raise CommandError(
            msg.UNKNOWN_SHOW.format(name=_quote(name), shows=_show_list(shows)), "unsubscribe"
        )
    return Unsubscribe(show)


def _no_args(name: str, args: list[str], command: Command) -> Command:
    if args:
        raise CommandError(msg.TOO_MANY_ARGS.format(command=name), name)
    return command


def parse_command(text: str, shows: Sequence[str]) -> Command:
    """Parse the text after ``/episodes`` as Slack sends it (``&``, ``<``, ``>`` arrive as
    entities, like all text in Slack). Raises ``CommandError`` for bad arguments."""
    if len(text) > msg.MAX_TEXT:
        raise CommandError(
            msg.TOO_LONG.format(length=f"{len(text):,}", command=msg.COMMAND, limit=msg.MAX_TEXT)
        )
    words = unescape(text).split()
    if not words:
        return Recent()
    head, args = words[0].casefold(), words[1:]
    if head == "recent":
        return _parse_recent(args)
    if head.isdigit() and not args:
        # `/episodes 10` reads naturally as "the last 10".
        return _parse_recent([head])
    if head == "latest":
        return _no_args("latest", args, Latest())
    if head in ("nearby", "near", "around"):
        return _parse_nearby(args)
    if head == "pr":
        return _parse_pr(args)
    if head.startswith("#") and not args:
        return Pr(parse_pr(head, "pr"))
    if head in ("search", "find"):
        if not args:
            raise CommandError(msg.NEED_WORDS, "search")
        return Search(" ".join(args))
    if head == "week":
        return _parse_week(args)
    if head in ("subscribe", "follow"):
        return _parse_subscribe(args, shows)
    if head in ("unsubscribe", "unfollow"):
        return _parse_unsubscribe(args, shows)
    if head in ("list", "subscriptions"):
        return _no_args("list", args, ListSubscriptions())
    if head == "status":
        return _no_args("status", args, Status())
    if head in ("help", "usage", "?"):
        return Help()
    return Help(unknown=_quote(words[0], 30))


def unparse(command: Command) -> str:
    """The canonical text of a command as Slack would send it: what a "Share in channel"
    button re-runs (``parse_command(unparse(c)) == c``)."""
    return _slack_escape(_canonical(command))


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _canonical(command: Command) -> str:
    match command:
        case Recent(n):
            return f"recent {n}"
        case Latest():
            return "latest"
        case NearbyDate(day):
            return f"nearby {day.isoformat()}"
        case NearbyPr(number):
            return f"nearby #{number}"
        case NearbyTitle(words):
            return f"nearby {words}"
        case Pr(number):
            return f"pr {number}"
        case Search(words):
            return f"search {words}"
        case Week(day):
            return f"week {day.isoformat()}" if day else "week"
        case Subscribe(show, keywords):
            return " ".join(["subscribe", show, *keywords])
        case Unsubscribe(show):
            return f"unsubscribe {show}" if show else "unsubscribe"
        case ListSubscriptions():
            return "list"
        case Status():
            return "status"
        case Help():
            return "help"
    raise AssertionError(f"unhandled command {command!r}")
