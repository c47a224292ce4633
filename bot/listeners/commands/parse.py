"""`/episodes` arguments → a typed command. Pure: text and the configured shows in, data out.

The text is untrusted and arrives straight from Slack: it is length-capped before anything
else, and every rejection is a ``CommandError`` carrying one line of reason plus the usage
of the subcommand it concerns. The commands themselves are ``bot.listeners.commands.model``; days
and
weeks, ``bot.listeners.commands.dates``; show names and quotes, ``bot.listeners.commands.names``;
subscribe and
unsubscribe, ``bot.listeners.commands.subscribe_parse``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from datetime import date
from typing import TypeVar

from bot.listeners.commands.control_parse import CONTROL_WORDS, parse_control, read_filter
from bot.listeners.commands.dates import parse_day, parse_week_args
from bot.listeners.commands.model import (
    MAX_PR,
    MAX_RECENT,
    Command,
    CommandError,
    Explain,
    FollowTarget,
    Help,
    Latest,
    ListFollows,
    ListSubscriptions,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
    Pr,
    Preview,
    Recent,
    Search,
    StartFollow,
    Status,
    StopFollow,
    Subscribe,
    Unsubscribe,
    Week,
)
from bot.listeners.commands.model import quote_value as _quote
from bot.listeners.commands.names import QUOTES, close_show, fold, match_show
from bot.listeners.commands.subscribe_parse import parse_subscribe, parse_unsubscribe
from bot.messages.basics import COMMAND, MAX_TEXT
from bot.messages.command_text import command_arg, subscribe_keywords
from bot.messages.control import NEED_WHY
from bot.messages.errors import (
    COUNT_RANGE,
    EXTRA_ARGS,
    NEED_NEARBY,
    NEED_PR,
    NEED_WORDS,
    NOT_A_COUNT,
    NOT_A_PR,
    ONE_SHOW_ONLY,
    ONLY_A_SHOW,
    PR_RANGE,
    PR_START,
    SHOW_TYPO,
    TOO_LONG,
    TOO_MANY_ARGS,
)
from bot.messages.follows import FOLLOW_IS_A_SHOW, FOLLOW_NEED, FOLLOW_ONLY_EXCLUDED
from digests.decide.daily import DEFAULT_TIME
from digests.filters import Filter
from digests.render.escape import unescape

__all__ = ["episode_link", "parse_command", "parse_pr", "subscribe_text", "unparse"]

_PR_RE = re.compile(r"^#?(\d+)$")
_NEGATIVE_PR_RE = re.compile(r"^#?-\d+$")
_URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)
# A pasted pull-request link: github.com/<owner>/<repo>/pull/<n>, maybe with /files, a query
# or an anchor after it. Any repository: the archive is searched by number alone. Scheme
# and host in ASCII case only ((?a:…)): IGNORECASE alone would take "gıthub.com".
_PR_LINK_RE = re.compile(
    r"^(?a:https?://(?:www\.)?github\.com/)([\w.-]+/[\w.-]+)/pull/(\d+)(?:[/?#]\S*)?$",
    re.IGNORECASE,
)
# The label the bot prints for a PR of another repository (``digests.render.prs``).
_PR_LABEL_RE = re.compile(r"^([\w.-]+/[\w.-]+)#(\d+)$")


def _pr_reference(value: str) -> tuple[str | None, str]:
    """(``owner/repo`` or None, the number part) of a PR as typed: a pasted link, the
    ``owner/repo#n`` label, or a bare number (``199720``, ``#199720``)."""
    link = episode_link(value)
    if link is not None and (found := _PR_LINK_RE.match(link)):
        return found.group(1), found.group(2)
    if found := _PR_LABEL_RE.match(value):
        return found.group(1), found.group(2)
    return None, value


def pr_link_repo(value: str) -> str | None:
    """``owner/repo`` of a pasted GitHub pull-request link or an ``owner/repo#n`` label,
    None for anything else."""
    return _pr_reference(value)[0]


def parse_pr(value: str, subcommand: str) -> int:
    """A PR number in any form the bot prints one: ``199720``, ``#199720``,
    ``owner/repo#199720`` or a pasted GitHub pull-request link."""
    value = _pr_reference(value)[1]
    if _NEGATIVE_PR_RE.match(value):
        raise CommandError(PR_START.format(value=_quote(value)), subcommand)
    match = _PR_RE.match(value)
    if not match:
        raise CommandError(NOT_A_PR.format(value=_quote(value)), subcommand)
    digits = match.group(1).lstrip("0")
    if not digits:
        raise CommandError(PR_START.format(value=_quote(value)), subcommand)
    # Length first: no point turning 500 digits into an int to learn it is too big.
    if len(digits) > 10 or int(digits) > MAX_PR:
        raise CommandError(PR_RANGE.format(value=_quote(value)), subcommand)
    return int(digits)


_REPO_PR_RE = re.compile(r"^([\w.-]+/[\w.-]+)#(\d+)$")


def parse_follow_target(head: str, args: list[str], shows: Sequence[str]) -> FollowTarget:
    """``follow``/``unfollow``'s target: a PR (``199720``, ``#199720``, ``owner/repo#199720``
    or its link) or words in the filter syntax (``fsdp``, ``"flex attention"``)."""
    if not args:
        raise CommandError(FOLLOW_NEED, head)
    if len(args) == 1:
        one = args[0]
        if (named := _REPO_PR_RE.match(one)) is not None:
            return FollowTarget(parse_pr(named.group(2), head), named.group(1))
        if _PR_RE.match(one) or _NEGATIVE_PR_RE.match(one) or pr_link_repo(one):
            return FollowTarget(parse_pr(one, head), pr_link_repo(one))
        if (show := match_show(one, shows)) is not None:
            word = one.strip('"“”')
            raise CommandError(FOLLOW_IS_A_SHOW.format(show=show, word=word), head)
    # As `subscribe` reads a filter: a lone sign or an apostrophe is not an unclosed quote.
    wanted = read_filter(" ".join(args), head)
    if wanted.empty:
        raise CommandError(FOLLOW_NEED, head)
    if head == "follow" and not (wanted.any_of or wanted.all_of):
        # Only excluded words would match nearly every episode: a follow names what to find.
        raise CommandError(FOLLOW_ONLY_EXCLUDED, head)
    return FollowTarget(terms=wanted.terms())


def episode_link(text: str) -> str | None:
    """The URL of a pasted link: Slack sends ``<url>`` or ``<url|label>`` (and a plain URL
    when it does not linkify); None when ``text`` is not one http(s) link."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].split("|", 1)[0].strip()
    return text if _URL_RE.match(text) else None


def _parse_recent(args: list[str], show: str | None = None) -> Recent:
    if not args:
        return Recent(show=show)
    if len(args) > 1:
        raise CommandError(EXTRA_ARGS.format(value=_quote(args[1]), command="recent"), "recent")
    raw = args[0]
    if not raw.isdigit() or not raw.isascii():
        raise CommandError(NOT_A_COUNT.format(value=_quote(raw)), "recent")
    n = int(raw[:6])
    if len(raw) > 6 or not 1 <= n <= MAX_RECENT:
        raise CommandError(
            COUNT_RANGE.format(limit=MAX_RECENT, value=_quote(raw, 12)), "recent"
        )
    return Recent(n, show)


def _parse_nearby(
    args: list[str], today: date | None
) -> NearbyDate | NearbyTitle | NearbyPr | NearbyUrl:
    if not args:
        raise CommandError(NEED_NEARBY, "nearby")
    first, words = args[0], " ".join(args)
    url = episode_link(words)
    if url is not None:
        return NearbyUrl(url)
    if len(args) == 1 and (first.startswith("#") or _PR_LABEL_RE.match(first)):
        return NearbyPr(parse_pr(first, "nearby"))
    if len(args) == 2 and first.casefold() == "pr":
        return NearbyPr(parse_pr(args[1], "nearby"))
    day = parse_day(words, "nearby", today)
    if day is not None:
        return NearbyDate(day)
    return NearbyTitle(words)


def _parse_pr(args: list[str]) -> Pr:
    if not args:
        raise CommandError(NEED_PR, "pr")
    if len(args) > 1:
        raise CommandError(EXTRA_ARGS.format(value=_quote(args[1]), command="pr"), "pr")
    return Pr(parse_pr(args[0], "pr"), repo=pr_link_repo(args[0]))


def _quote_arg(value: str) -> str:
    """One argument as ``unquote_words`` reads it back: quoted when it has spaces."""
    # The rule lives in bot.messages, so the pause DM spells commands without this package.
    return command_arg(value)


def subscribe_text(show: str, keywords: Sequence[str] = (), also: Sequence[str] = ()) -> str:
    """The arguments of the ``subscribe`` that makes exactly this subscription (without
    the ``subscribe``); ``parse_command`` reads them back to the same show and keywords."""
    # After ``keywords:`` a word that also names a show is still a keyword.
    names = " ".join(_quote_arg(s) for s in (show, *also))
    return f"{names} {subscribe_keywords(keywords)}".rstrip()


def _no_args(name: str, args: list[str], command: Command) -> Command:
    if args:
        raise CommandError(TOO_MANY_ARGS.format(command=name), name)
    return command


def _show_words(words: Sequence[str], shows: Sequence[str]) -> str | None:
    return match_show(" ".join(words).strip(QUOTES).strip(), shows) if words else None


def _take_show(
    args: list[str], shows: Sequence[str], subcommand: str, *, free_text: bool = False
) -> tuple[str | None, list[str]]:
    """The show a query names first (or, for the structured ones, last) and the other
    words: ``recent JAX 3``, ``latest "Deep Learning Daily"``, ``nearby JAX Nov 25``.

    Free text (search, nearby) keeps its words when they would all be the show's name, and
    gets no typo hint (a word there may be anything); the others are told of a near miss.
    """
    for k in range(len(args), 0, -1):
        if free_text and k == len(args):
            continue
        show = _show_words(args[:k], shows)
        if show is not None:
            return show, args[k:]
        if not free_text and (show := _show_words(args[-k:], shows)) is not None:
            return show, args[:-k]
    if not free_text and args:
        close = close_show(args[:1], shows) or close_show(args[-1:], shows)
        if close is not None:
            typed, near = close
            raise CommandError(SHOW_TYPO.format(name=_quote(typed), show=near), subcommand)
    return None, args


def _take_one_show(
    args: list[str], shows: Sequence[str], subcommand: str
) -> tuple[str | None, list[str]]:
    """``_take_show`` for the structured queries, refusing a second show among the other
    words (``latest JAX Triton``): they answer about one show, or the channel's."""
    show, rest = _take_show(args, shows, subcommand)
    if show is not None:
        for k in range(len(rest), 0, -1):
            for words in (rest[:k], rest[-k:]):
                other = _show_words(words, shows)
                if other is not None:
                    reason = ONE_SHOW_ONLY.format(command=subcommand, show=other)
                    raise CommandError(reason, subcommand)
    return show, rest


_Showable = TypeVar("_Showable", bound=NearbyDate | NearbyTitle | NearbyPr | NearbyUrl | Pr | Week)


def _with_show(command: _Showable, show: str | None) -> _Showable:
    return dataclasses.replace(command, show=show) if show else command


def _parse_query(head: str, args: list[str], shows: Sequence[str], today: date | None) -> Command:
    """recent, latest, nearby, pr, search, week, each with an optional show name."""
    if head == "recent":
        show, rest = _take_one_show(args, shows, "recent")
        return _parse_recent(rest, show)
    if head == "latest":
        show, rest = _take_one_show(args, shows, "latest")
        if rest:
            reason = ONLY_A_SHOW.format(command="latest", value=_quote(rest[0]))
            raise CommandError(reason, "latest")
        return Latest(show)
    if head in ("nearby", "near", "around"):
        show, rest = _take_show(args, shows, "nearby", free_text=True)
        return _with_show(_parse_nearby(rest, today), show)
    if head == "pr":
        show, rest = _take_one_show(args, shows, "pr")
        return _with_show(_parse_pr(rest), show)
    if head in ("search", "find"):
        show, rest = _take_show(args, shows, "search", free_text=True)
        if not rest:
            raise CommandError(NEED_WORDS, "search")
        return Search(" ".join(rest), show)
    show, rest = _take_one_show(args, shows, "week")
    return _with_show(parse_week_args(rest, today), show)


_QUERY_HEADS = ("recent", "latest", "nearby", "near", "around", "pr", "search", "find", "week")


def parse_command(
    text: str, shows: Sequence[str], today: date | None = None, daily_at: str = DEFAULT_TIME
) -> Command:
    """Parse the text after ``/episodes`` as Slack sends it (``&``, ``<``, ``>`` arrive as
    entities, like all text in Slack). Raises ``CommandError`` for bad arguments.

    ``today`` (in the team's timezone) anchors relative dates and weeks (``yesterday``,
    ``Oct 5``, ``w41``, ``last``); the command that comes out names absolute ones.
    ``daily_at``: what a bare ``subscribe … daily`` means (the ``daily_at`` setting).
    Subcommand names are read like show names: any case, full-width forms too (NFKC).
    """
    if len(text) > MAX_TEXT:
        raise CommandError(
            TOO_LONG.format(length=f"{len(text):,}", command=COMMAND, limit=MAX_TEXT)
        )
    words = unescape(text).split()
    if not words:
        return Recent()
    head, args = fold(words[0]), words[1:]
    if head in _QUERY_HEADS:
        return _parse_query(head, args, shows, today)
    if words[0].isdigit() and not args:
        # `/episodes 10` reads naturally as "the last 10".
        return _parse_recent([words[0]])
    if (words[0].startswith("#") or _PR_LABEL_RE.match(words[0])) and not args:
        return _parse_pr(words)  # `/episodes #199720`, `/episodes llvm/llvm-project#5`
    if head in ("help", "usage", "?"):
        return Help()
    if head in _NO_ARGS:
        name, made = _NO_ARGS[head]
        return _no_args(name, args, made())
    if head == "subscribe":
        return parse_subscribe(args, shows, daily_at)
    if head == "unsubscribe":
        return parse_unsubscribe(args, shows)
    if head in ("follow", "unfollow"):
        target = parse_follow_target(head, args, shows)
        return StartFollow(target) if head == "follow" else StopFollow(target)
    if head in CONTROL_WORDS:
        return parse_control(head, args, shows, today)
    if head == "why":
        return _parse_why(args, shows, today)
    if (show := _show_words(words, shows)) is not None:
        return Recent(show=show)  # a bare show name: its recent episodes, as `recent JAX`
    return Help(unknown=_quote(words[0], 30))


# Subcommands that take no arguments: the word → (its usage's name, the command).
_NO_ARGS: dict[str, tuple[str, Callable[[], Command]]] = {
    "following": ("following", ListFollows),
    "list": ("list", ListSubscriptions),
    "subscriptions": ("list", ListSubscriptions),
    "status": ("status", Status),
}


def _parse_why(args: list[str], shows: Sequence[str], today: date | None) -> Explain:
    if not args:
        raise CommandError(NEED_WHY, "why")
    # The episode as `nearby` reads it, a show name first included (`why JAX Oct 1`).
    show, rest = _take_show(args, shows, "why", free_text=True)
    return Explain(_with_show(_parse_nearby(rest, today), show))


def unparse(command: Command) -> str:
    """The canonical text of a command as Slack would send it: what a "Share in channel"
    button re-runs (``parse_command(unparse(c)) == c``)."""
    return _slack_escape(_canonical(command))


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _on(show: str | None) -> str:
    """A query's show as the canonical text names it (first, quoted when it has spaces)."""
    return f"{_quote_arg(show)} " if show else ""


def _canonical(command: Command) -> str:
    match command:
        case Recent(n, show):
            return f"recent {_on(show)}{n}"
        case Latest(show):
            return f"latest {_on(show)}".rstrip()
        case NearbyDate(day, show):
            return f"nearby {_on(show)}{day.isoformat()}"
        case NearbyPr(number, show):
            return f"nearby {_on(show)}#{number}"
        case NearbyUrl(url, show):
            return f"nearby {_on(show)}{url}"
        case NearbyTitle(words, show):
            return f"nearby {_on(show)}{words}"
        case Pr(number, show, repo):
            target = f"https://github.com/{repo}/pull/{number}" if repo else str(number)
            return f"pr {_on(show)}{target}"
        case Search(words, show):
            return f"search {_on(show)}{words}"
        case Week(year, number, _, show):
            week = f" {year}-W{number:02d}" if year and number else ""
            return f"week {_on(show)}".rstrip() + week
    return _canonical_other(command)


def _canonical_other(command: Command) -> str:
    """``_canonical`` of what is not a question about episodes."""
    match command:
        case Subscribe(show, keywords, also, recap, daily, pr_updates):
            recap_text = "" if recap is None else f" recap {'on' if recap else 'off'}"
            daily_text = "" if daily is None else f" daily {daily}"
            news = "" if pr_updates is None else f" pr-updates {'on' if pr_updates else 'off'}"
            words = subscribe_text(show, keywords, also)
            return f"subscribe {words}{recap_text}{daily_text}{news}"
        case Unsubscribe():
            return " ".join(["unsubscribe", *(_quote_arg(s) for s in command.shows)])
        case ListSubscriptions():
            return "list"
        case Status():
            return "status"
        case Help():
            return "help"
        case Preview(show, terms):
            return f"preview {command_arg(show)} {Filter.from_terms(terms).unparse()}".strip()
    raise AssertionError(f"unhandled command {command!r}")
