"""`/episodes` arguments → a typed command. Pure: text and the configured shows in, data out.

The text is untrusted and arrives straight from Slack: it is length-capped before anything
else, and every rejection is a ``CommandError`` carrying one line of reason plus the usage
of the subcommand it concerns.
"""

from __future__ import annotations

import calendar
import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from bot import messages as msg
from digests.errors import DigestError
from digests.recap import InvalidWeek, parse_week
from digests.render.escape import unescape

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
# A year-less date is the latest such day not in the future; 29 Feb may be 8 years back.
_LEAP_SEARCH = 8

_ISO_DATE_RE = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
# Day and month in either order: read only when the numbers leave no doubt (25/10, 10/25).
_NUMERIC_DATE_RE = re.compile(r"^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$")
_SHORT_NUMERIC_RE = re.compile(r"^(\d{1,2})/(\d{1,2})$")
_DATELIKE_RE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}$")
_DAY_RE = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?$")
_YEAR_RE = re.compile(r"^\d{4}$")
_ISO_WEEK_RE = re.compile(r"^\d{4}-?w\d{1,2}$", re.IGNORECASE)
_BARE_WEEK_RE = re.compile(r"^w?(\d{1,2})$", re.IGNORECASE)
_PR_RE = re.compile(r"^#?(\d+)$")
_NEGATIVE_PR_RE = re.compile(r"^#?-\d+$")
_URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)
# A pasted pull-request link: github.com/<owner>/<repo>/pull/<n>, maybe with /files, a query
# or an anchor after it. Any repository: the archive is searched by number alone.
_PR_LINK_RE = re.compile(
    r"^https?://(?:www\.)?github\.com/[\w.-]+/[\w.-]+/pull/(\d+)(?:[/?#]\S*)?$", re.IGNORECASE
)
# Straight and curly quotes people put around a show name or a keyword (Slack turns "
# into “ ” on some keyboards).
QUOTES = "\"'“”„‘’‚«»"

_MONTHS = {
    name: number
    for number in range(1, 13)
    for name in (
        calendar.month_name[number].casefold(),
        calendar.month_abbr[number].casefold(),
    )
} | {"sept": 9}
_WEEKDAYS = {
    name: number
    for number in range(7)
    for name in (calendar.day_name[number].casefold(), calendar.day_abbr[number].casefold())
} | {"tues": 1, "thur": 3, "thurs": 3}


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
class NearbyUrl:
    url: str


@dataclass(frozen=True)
class Pr:
    number: int


@dataclass(frozen=True)
class Search:
    words: str


@dataclass(frozen=True)
class Week:
    """An ISO week; ``Week()`` (no week given) is settled against the archive when run."""

    year: int | None = None
    number: int | None = None
    # A bare `week` that shows last week because this one has no episodes yet: the reply
    # says so. Not part of the command's identity (it is a fact about the archive).
    fell_back: bool = field(default=False, compare=False)

    @property
    def monday(self) -> date | None:
        if self.year is None or self.number is None:
            return None
        return date.fromisocalendar(self.year, self.number, 1)


def week_containing(day: date) -> Week:
    iso = day.isocalendar()
    return Week(iso.year, iso.week)


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
    | NearbyUrl
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
EPISODE_QUERIES = (Recent, Latest, NearbyDate, NearbyTitle, NearbyPr, NearbyUrl, Pr, Search)
# Read-only answers may be re-run for "Share in channel"; the others change state.
SHAREABLE = (*EPISODE_QUERIES, Week, ListSubscriptions, Status)


def _quote(value: str, limit: int = 40) -> str:
    """An argument echoed back to the user: short, and unable to close our backticks."""
    value = value.replace("`", "'")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def show_day(day: date) -> str:
    """A day as replies echo it: ``5 Oct 2026`` (unambiguous in every locale)."""
    return f"{day.day} {calendar.month_abbr[day.month]} {day.year}"


def _calendar_day(value: str, subcommand: str, year: int, month: int, day: int) -> date:
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise CommandError(msg.DATE_RANGE.format(value=_quote(value)), subcommand)
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise CommandError(msg.NO_SUCH_DATE.format(value=_quote(value)), subcommand) from exc


def _need_today(today: date | None, value: str, subcommand: str) -> date:
    if today is None:
        raise CommandError(msg.NEED_YEAR.format(value=_quote(value)), subcommand)
    return today


def _latest(value: str, subcommand: str, month: int, day: int, today: date | None) -> date:
    """The latest ``day`` of ``month`` that is not after today: "Oct 5" in November is this
    year's, in September last year's."""
    try:
        date(2000, month, day)  # a leap year: does the day exist at all?
    except ValueError as exc:
        raise CommandError(msg.NO_SUCH_DATE.format(value=_quote(value)), subcommand) from exc
    base = _need_today(today, value, subcommand)
    for year in range(base.year, base.year - _LEAP_SEARCH - 1, -1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue  # 29 Feb outside a leap year
        if found <= base:
            return found
    raise CommandError(msg.NO_SUCH_DATE.format(value=_quote(value)), subcommand)


def _day_or_month_first(
    value: str, subcommand: str, a: int, b: int, year: int | None, today: date | None
) -> date:
    """``a/b[/year]`` when only one reading is a date (or both readings are the same day)."""
    if 0 in (a, b) or (a > 12 and b > 12):
        raise CommandError(msg.NO_SUCH_DATE.format(value=_quote(value)), subcommand)
    if a == b or a > 12:
        day, month = a, b
    elif b > 12:
        day, month = b, a
    else:
        first, second = f"{a} {calendar.month_abbr[b]}", f"{b} {calendar.month_abbr[a]}"
        raise CommandError(
            msg.AMBIGUOUS_DATE.format(value=_quote(value), first=first, second=second),
            subcommand,
        )
    if year is None:
        return _latest(value, subcommand, month, day, today)
    return _calendar_day(value, subcommand, year, month, day)


def _month_words(value: str, subcommand: str, today: date | None) -> date | None:
    """``5 Oct 2026``, ``Oct 5, 2026``, ``October 5th``, ``Mon 5 Oct 2026`` (how replies show
    a day), ``5-Oct-2026``; None when the words are not a date of that shape."""
    tokens = [t.rstrip(".") for t in value.casefold().replace(",", " ").split()]
    if len(tokens) == 1 and "-" in tokens[0]:
        tokens = tokens[0].split("-")
    tokens = [t for t in tokens if t and t != "of"]
    weekday = None
    if len(tokens) > 2 and tokens[0] in _WEEKDAYS:
        weekday, tokens = _WEEKDAYS[tokens[0]], tokens[1:]
    if len(tokens) not in (2, 3):
        return None
    if tokens[0] in _MONTHS and _DAY_RE.match(tokens[1]):
        month, day_word = _MONTHS[tokens[0]], tokens[1]
    elif tokens[1] in _MONTHS and _DAY_RE.match(tokens[0]):
        month, day_word = _MONTHS[tokens[1]], tokens[0]
    else:
        return None
    day_match = _DAY_RE.match(day_word)
    assert day_match is not None
    day = int(day_match.group(1))
    if len(tokens) == 3:
        if not _YEAR_RE.match(tokens[2]):
            return None
        found = _calendar_day(value, subcommand, int(tokens[2]), month, day)
    else:
        found = _latest(value, subcommand, month, day, today)
    if weekday is not None and found.weekday() != weekday:
        raise CommandError(
            msg.WRONG_WEEKDAY.format(
                day=show_day(found),
                actual=calendar.day_name[found.weekday()],
                given=calendar.day_name[weekday],
            ),
            subcommand,
        )
    return found


def parse_day(value: str, subcommand: str, today: date | None = None) -> date | None:
    """A day written the ways people write one, or None when ``value`` does not look like a
    date at all (so it can be read as something else).

    ``today`` anchors the relative forms (``today``, ``yesterday``, a date without a year),
    which without it are refused. Raises ``CommandError`` for a date-shaped value that is
    not a day (30 Feb), out of range, or ambiguous (``05/10/2026``: 5 Oct or 10 May?).
    """
    value = " ".join(value.split())
    lowered = value.casefold()
    if lowered in ("today", "yesterday"):
        base = _need_today(today, value, subcommand)
        return base if lowered == "today" else base - timedelta(days=1)
    if match := _ISO_DATE_RE.match(value):
        year, month, day = (int(part) for part in match.groups())
        return _calendar_day(value, subcommand, year, month, day)
    if match := _NUMERIC_DATE_RE.match(value):
        a, b, year = (int(part) for part in match.groups())
        return _day_or_month_first(value, subcommand, a, b, year, today)
    if match := _SHORT_NUMERIC_RE.match(value):
        a, b = (int(part) for part in match.groups())
        return _day_or_month_first(value, subcommand, a, b, None, today)
    if _DATELIKE_RE.match(value):
        raise CommandError(msg.NOT_A_DATE.format(value=_quote(value)), subcommand)
    return _month_words(value, subcommand, today)


def parse_date(value: str, subcommand: str, today: date | None = None) -> date:
    """Like ``parse_day``, but anything that is not a day is an error."""
    found = parse_day(value, subcommand, today)
    if found is None:
        raise CommandError(msg.NOT_A_DATE.format(value=_quote(value)), subcommand)
    return found


def parse_pr(value: str, subcommand: str) -> int:
    """A PR number: ``199720``, ``#199720`` or a pasted GitHub pull-request link."""
    link = episode_link(value)
    if link is not None and (found := _PR_LINK_RE.match(link)):
        value = found.group(1)
    if _NEGATIVE_PR_RE.match(value):
        raise CommandError(msg.PR_START.format(value=_quote(value)), subcommand)
    match = _PR_RE.match(value)
    if not match:
        raise CommandError(msg.NOT_A_PR.format(value=_quote(value)), subcommand)
    digits = match.group(1).lstrip("0")
    if not digits:
        raise CommandError(msg.PR_START.format(value=_quote(value)), subcommand)
    # Length first: no point turning 500 digits into an int to learn it is too big.
    if len(digits) > 10 or int(digits) > MAX_PR:
        raise CommandError(msg.PR_RANGE.format(value=_quote(value)), subcommand)
    return int(digits)


def episode_link(text: str) -> str | None:
    """The URL of a pasted link: Slack sends ``<url>`` or ``<url|label>`` (and a plain URL
    when it does not linkify); None when ``text`` is not one http(s) link."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].split("|", 1)[0].strip()
    return text if _URL_RE.match(text) else None


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


def _parse_nearby(
    args: list[str], today: date | None
) -> NearbyDate | NearbyTitle | NearbyPr | NearbyUrl:
    if not args:
        raise CommandError(msg.NEED_NEARBY, "nearby")
    first, words = args[0], " ".join(args)
    url = episode_link(words)
    if url is not None:
        return NearbyUrl(url)
    if len(args) == 1 and first.startswith("#"):
        return NearbyPr(parse_pr(first, "nearby"))
    if len(args) == 2 and first.casefold() == "pr":
        return NearbyPr(parse_pr(args[1], "nearby"))
    day = parse_day(words, "nearby", today)
    if day is not None:
        return NearbyDate(day)
    return NearbyTitle(words)


def _parse_pr(args: list[str]) -> Pr:
    if not args:
        raise CommandError(msg.NEED_PR, "pr")
    if len(args) > 1:
        raise CommandError(msg.EXTRA_ARGS.format(value=_quote(args[1]), command="pr"), "pr")
    return Pr(parse_pr(args[0], "pr"))


def _week_number(value: str, number: int, today: date | None) -> Week:
    """``w41``: this year's week 41 when it has begun, else last year's."""
    base = _need_today(today, value, "week")
    year = base.isocalendar().year
    for candidate in (year, year - 1):
        try:
            monday = date.fromisocalendar(candidate, number, 1)
        except ValueError:
            continue
        if monday <= base:
            return Week(candidate, number)
    raise CommandError(msg.NO_SUCH_WEEK.format(value=_quote(value)), "week")


def _parse_week(args: list[str], today: date | None) -> Week:
    if not args:
        return Week()
    value = " ".join(args)
    lowered = value.casefold()
    if lowered in ("this", "this week", "current"):
        return week_containing(_need_today(today, value, "week"))
    if lowered in ("last", "last week", "previous"):
        return week_containing(_need_today(today, value, "week") - timedelta(days=7))
    if _ISO_WEEK_RE.match(value):
        try:
            year, number = parse_week(value)
        except InvalidWeek as exc:
            raise CommandError(msg.NO_SUCH_WEEK.format(value=_quote(value)), "week") from exc
        if not MIN_YEAR <= year <= MAX_YEAR:
            raise CommandError(msg.DATE_RANGE.format(value=_quote(value)), "week")
        return Week(year, number)
    if match := _BARE_WEEK_RE.match(value):
        return _week_number(value, int(match.group(1)), today)
    day = parse_day(value, "week", today)
    if day is None:
        raise CommandError(msg.NOT_A_WEEK.format(value=_quote(value)), "week")
    return week_containing(day)


def _fold(name: str) -> str:
    """A name as compared: case, Unicode look-alikes (full-width letters) and runs of
    spaces do not count."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def _match_show(word: str, shows: Sequence[str]) -> str | None:
    wanted = _fold(word)
    return next((s for s in shows if _fold(s) == wanted), None)


@dataclass(frozen=True)
class Arg:
    text: str
    quoted: bool  # a quoted run of words: one argument, never part of a longer name


def unquote_words(words: Sequence[str]) -> list[Arg]:
    """Words with quoted runs joined: ``"Deep Learning Daily" compiler`` → ``Deep Learning
    Daily``, ``compiler``. Quotes around a word are dropped (a quote left open only from the
    word it is on), and so are words that were nothing but quotes."""
    out: list[Arg] = []
    i = 0
    while i < len(words):
        word = words[i]
        end = i
        if word[0] in QUOTES and not (len(word) > 1 and word[-1] in QUOTES):
            end = next((j for j in range(i + 1, len(words)) if words[j][-1] in QUOTES), i)
        joined = " ".join(words[i : end + 1]).strip(QUOTES).strip()
        if joined:
            out.append(Arg(joined, end > i))
        i = end + 1
    return out


def _quote_arg(value: str) -> str:
    """One argument as ``unquote_words`` reads it back: quoted when it has spaces."""
    return f'"{value}"' if len(value.split()) > 1 else value


def subscribe_text(show: str, keywords: Sequence[str] = ()) -> str:
    """The arguments of the ``subscribe`` that makes exactly this subscription (without
    the ``subscribe``); ``parse_command`` reads them back to the same show and keywords."""
    return " ".join(_quote_arg(arg) for arg in (show, *keywords))


def _show_list(shows: Sequence[str]) -> str:
    return ", ".join(shows) if shows else "none"


def _leading_show(args: list[Arg], shows: Sequence[str]) -> tuple[str | None, list[str]]:
    """The configured show the words start with (longest match: names may have spaces; a
    quoted name is the whole name)."""
    texts = [a.text for a in args]
    longest = next((k for k in range(1, len(args)) if args[k].quoted or args[0].quoted), None)
    for k in range(longest or len(args), 0, -1):
        show = _match_show(" ".join(texts[:k]), shows)
        if show is not None:
            return show, texts[k:]
    return None, texts


def _close_show(args: list[str], shows: Sequence[str]) -> tuple[str, str] | None:
    """(the words, the show) when the leading words look like a typo of a show's name."""
    best: tuple[float, str, str] | None = None
    # Word by word: a quoted name arrives as one argument.
    flat = " ".join(args).split()
    for show in shows:
        words = " ".join(flat[: len(show.split())])
        if _fold(words) == _fold(show):
            continue  # never "did you mean" the very name typed
        ratio = difflib.SequenceMatcher(None, _fold(words), _fold(show)).ratio()
        if ratio >= TYPO_CUTOFF and (best is None or ratio > best[0]):
            best = (ratio, words, show)
    return (best[1], best[2]) if best else None


def _parse_subscribe(words: list[str], shows: Sequence[str]) -> Subscribe:
    if not shows:
        raise CommandError(msg.NO_SHOWS, "subscribe")
    quoted = unquote_words(words)
    args = [a.text for a in quoted]
    show, rest = _leading_show(quoted, shows)
    close = _close_show(args, shows) if show is None and args else None
    if close is not None:
        # A misspelt show must not quietly become a keyword filter (replacing what the
        # channel had).
        typed, near = close
        raise CommandError(msg.SHOW_TYPO.format(name=_quote(typed), show=near), "subscribe")
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


def _parse_unsubscribe(words: list[str], shows: Sequence[str]) -> Unsubscribe:
    args = [a.text for a in unquote_words(words)]
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


def parse_command(text: str, shows: Sequence[str], today: date | None = None) -> Command:
    """Parse the text after ``/episodes`` as Slack sends it (``&``, ``<``, ``>`` arrive as
    entities, like all text in Slack). Raises ``CommandError`` for bad arguments.

    ``today`` (in the team's timezone) anchors relative dates and weeks (``yesterday``,
    ``Oct 5``, ``w41``, ``last``); the command that comes out names absolute ones.
    """
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
        return _parse_nearby(args, today)
    if head == "pr":
        return _parse_pr(args)
    if head.startswith("#") and not args:
        return Pr(parse_pr(head, "pr"))
    if head in ("search", "find"):
        if not args:
            raise CommandError(msg.NEED_WORDS, "search")
        return Search(" ".join(args))
    if head == "week":
        return _parse_week(args, today)
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
        case NearbyUrl(url):
            return f"nearby {url}"
        case NearbyTitle(words):
            return f"nearby {words}"
        case Pr(number):
            return f"pr {number}"
        case Search(words):
            return f"search {words}"
        case Week(year, number):
            return f"week {year}-W{number:02d}" if year and number else "week"
        case Subscribe(show, keywords):
            return f"subscribe {subscribe_text(show, keywords)}"
        case Unsubscribe(show):
            return f"unsubscribe {_quote_arg(show)}" if show else "unsubscribe"
        case ListSubscriptions():
            return "list"
        case Status():
            return "status"
        case Help():
            return "help"
    raise AssertionError(f"unhandled command {command!r}")
