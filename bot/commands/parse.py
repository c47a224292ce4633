"""`/episodes` arguments → a typed command. Pure: text and the configured shows in, data out.

The text is untrusted and arrives straight from Slack: it is length-capped before anything
else, and every rejection is a ``CommandError`` carrying one line of reason plus the usage
of the subcommand it concerns. The commands themselves are ``bot.commands.model``; days and
weeks, ``bot.commands.dates``.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from bot import messages as msg
from bot.commands.control_parse import CONTROL_WORDS, parse_control
from bot.commands.dates import parse_date, parse_day, parse_week_args, show_day
from bot.commands.model import (
    DEFAULT_RECENT,
    EPISODE_QUERIES,
    MAX_KEYWORD_LEN,
    MAX_KEYWORDS,
    MAX_PR,
    MAX_RECENT,
    MAX_YEAR,
    MIN_YEAR,
    SHAREABLE,
    TYPO_CUTOFF,
    Command,
    CommandError,
    Help,
    Latest,
    ListSubscriptions,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
    Pr,
    Preview,
    Recent,
    Search,
    Status,
    Subscribe,
    Unsubscribe,
    Week,
    week_containing,
)
from bot.commands.model import quote_value as _quote
from digests.filters import Filter
from digests.render.escape import unescape

__all__ = [
    "DEFAULT_RECENT",
    "EPISODE_QUERIES",
    "MAX_KEYWORDS",
    "MAX_KEYWORD_LEN",
    "MAX_PR",
    "MAX_RECENT",
    "MAX_YEAR",
    "MIN_YEAR",
    "QUOTES",
    "SHAREABLE",
    "Arg",
    "Command",
    "CommandError",
    "Help",
    "Latest",
    "ListSubscriptions",
    "NearbyDate",
    "NearbyPr",
    "NearbyTitle",
    "NearbyUrl",
    "Pr",
    "Recent",
    "Search",
    "Status",
    "Subscribe",
    "Unsubscribe",
    "Week",
    "episode_link",
    "parse_command",
    "parse_date",
    "parse_day",
    "parse_pr",
    "show_day",
    "subscribe_text",
    "unparse",
    "unquote_words",
    "week_containing",
]

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
    # The rule lives in bot.messages, so the pause DM spells commands without this package.
    return msg.command_arg(value)


def subscribe_text(show: str, keywords: Sequence[str] = ()) -> str:
    """The arguments of the ``subscribe`` that makes exactly this subscription (without
    the ``subscribe``); ``parse_command`` reads them back to the same show and keywords."""
    return msg.subscribe_args(show, keywords)


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
        return parse_week_args(args, today)
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
    if head in CONTROL_WORDS:
        return parse_control(head, args, shows)
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
        case Preview(show, terms):
            return f"preview {msg.command_arg(show)} {Filter.from_terms(terms).unparse()}".strip()
    raise AssertionError(f"unhandled command {command!r}")
