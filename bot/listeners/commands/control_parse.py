"""Arguments of the channel-control subcommands: preview, pause, resume. Pure.

A filter is read here, not by ``shlex``: an apostrophe ("don't") is part of a word, and the
curly quotes Slack types stand for straight ones; the terms then go to ``digests.filters``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, timedelta

from bot.listeners.commands.dates import parse_date, show_day
from bot.listeners.commands.model import (
    MAX_KEYWORD_LEN,
    MAX_KEYWORDS,
    CommandError,
    Pause,
    Preview,
    Resume,
    quote_value,
)
from bot.listeners.commands.names import close_show, match_show
from bot.listeners.commands.subscribe_parse import parse_shows
from bot.messages.control import (
    FILTER_EMPTY_QUOTES,
    FILTER_LONE_SIGN,
    FILTER_OPEN_QUOTE,
    FILTER_TERM_TOO_LONG,
    FILTER_TOO_MANY,
    PAUSE_NEED_WHEN,
    PAUSE_NOT_A_DURATION,
    PAUSE_TOO_LONG,
    PAUSE_UNTIL_PAST,
    PAUSE_ZERO,
    RESUME_EXTRA,
)
from bot.messages.errors import NAME_THE_SHOW, NO_SHOWS, SHOW_TYPO, UNKNOWN_SHOW
from digests.filters import Filter, FilterSyntaxError

# A term: an optional sign, then a "quoted phrase" or a bare word.
_TERM_RE = re.compile(r'([+-]?)"([^"]*)"|(\S+)')
_DOUBLE_QUOTES = str.maketrans({c: '"' for c in "“”„«»"})

CONTROL_WORDS = frozenset({"preview", "pause", "resume", "unpause"})
ControlCommand = Preview | Pause | Resume

MAX_PAUSE_DAYS = 365
_DURATION_RE = re.compile(r"^(\d{1,6})\s*(h|hrs?|hours?|d|days?|w|wks?|weeks?)$")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 24 * 7}
_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        [
            ("mon", "monday"),
            ("tue", "tues", "tuesday"),
            ("wed", "wednesday"),
            ("thu", "thur", "thurs", "thursday"),
            ("fri", "friday"),
            ("sat", "saturday"),
            ("sun", "sunday"),
        ]
    )
    for name in names
}
_CATCH_UP_FLAGS = frozenset({"--catch-up", "--catchup", "catch-up", "—catch-up", "–catch-up"})


def split_show(text: str, shows: Sequence[str]) -> tuple[str | None, str]:
    """(the configured show ``text`` starts with, the rest); the longest name wins, and a
    name may be quoted (``"Deep Learning Daily" fsdp``)."""
    words = text.split()
    for k in range(len(words), 0, -1):
        head = " ".join(words[:k])
        if head.count('"') == 2 and head.startswith('"') and head.endswith('"'):
            head = head[1:-1]
        elif '"' in head:
            continue
        show = match_show(head, shows)
        if show is not None:
            return show, " ".join(words[k:])
    return None, text


def read_filter(text: str, subcommand: str) -> Filter:
    """``inductor "flex attention" +cuda -rocm`` → a Filter, or a one-line ``CommandError``."""
    if text.count('"') % 2:
        raise CommandError(FILTER_OPEN_QUOTE, subcommand)
    terms: list[str] = []
    for sign, phrase, word in _TERM_RE.findall(text.replace(",", " ")):
        if not (word or sign or phrase.strip()):
            raise CommandError(FILTER_EMPTY_QUOTES, subcommand)
        term = word or sign + " ".join(phrase.split())
        if term:
            terms.append(term)
    if len(terms) > MAX_KEYWORDS:
        raise CommandError(
            FILTER_TOO_MANY.format(limit=MAX_KEYWORDS, count=len(terms)), subcommand
        )
    if any(len(t.lstrip("+-")) > MAX_KEYWORD_LEN for t in terms):
        raise CommandError(FILTER_TERM_TOO_LONG.format(limit=MAX_KEYWORD_LEN), subcommand)
    for term in terms:
        try:
            Filter.from_terms([term])
        except FilterSyntaxError as exc:  # a sign on nothing, or on punctuation only ("+!")
            raise CommandError(
                FILTER_LONE_SIGN.format(term=quote_value(term), sign=term[0]), subcommand
            ) from exc
    return Filter.from_terms(terms)


def parse_preview(args: Sequence[str], shows: Sequence[str]) -> Preview:
    if not shows:
        raise CommandError(NO_SHOWS, "preview")
    text = " ".join(args).translate(_DOUBLE_QUOTES)
    show, rest = split_show(text, shows)
    if show is None:
        if len(shows) > 1 and not text:
            raise CommandError(NAME_THE_SHOW.format(shows=", ".join(shows)), "preview")
        typo = close_show(text.replace('"', " ").split(), shows)
        if typo is not None:  # a misspelt show is not a filter word, as with subscribe
            name = quote_value(typo[0])
            raise CommandError(SHOW_TYPO.format(name=name, show=typo[1]), "preview")
        if len(shows) > 1:
            first = quote_value(text.split()[0].strip('"'))
            raise CommandError(
                UNKNOWN_SHOW.format(name=first, shows=", ".join(shows)), "preview"
            )
        show = shows[0]  # with one show it may be left out, as with subscribe
    return Preview(show, read_filter(rest, "preview").terms())


def parse_duration(value: str) -> timedelta:
    """``12h``, ``3d``, ``2w``, ``3 days``: at least an hour, at most ``MAX_PAUSE_DAYS``."""
    found = _DURATION_RE.match(" ".join(value.casefold().split()))
    if not found:
        raise CommandError(PAUSE_NOT_A_DURATION.format(value=quote_value(value)), "pause")
    count, unit = int(found.group(1)), found.group(2)[0]
    if count == 0:
        raise CommandError(PAUSE_ZERO.format(value=quote_value(value)), "pause")
    hours = count * _UNIT_HOURS[unit]
    if hours > MAX_PAUSE_DAYS * 24:
        raise CommandError(
            PAUSE_TOO_LONG.format(limit=MAX_PAUSE_DAYS, value=quote_value(value)), "pause"
        )
    return timedelta(hours=hours)


def parse_until(value: str, today: date | None) -> date:
    """The day a pause ends at the start of: ``tomorrow``, a weekday (the next one), or a
    date (without a year, the coming one); after ``today`` and at most ``MAX_PAUSE_DAYS`` away."""
    lowered = " ".join(value.casefold().split())
    if today is not None and lowered == "tomorrow":
        return today + timedelta(days=1)
    if today is not None and lowered in _WEEKDAYS:
        return today + timedelta(days=(_WEEKDAYS[lowered] - today.weekday() - 1) % 7 + 1)
    # A day without its year is the coming one: a pause ends in the future.
    day = parse_date(value, "pause", today, ahead=True)
    if today is not None and day <= today:
        raise CommandError(PAUSE_UNTIL_PAST.format(day=show_day(day)), "pause")
    if today is not None and (day - today).days > MAX_PAUSE_DAYS:
        limit = PAUSE_TOO_LONG.format(limit=MAX_PAUSE_DAYS, value=quote_value(value))
        raise CommandError(limit, "pause")
    return day


def parse_pause(args: Sequence[str], shows: Sequence[str], today: date | None) -> Pause:
    lowered = [a.casefold() for a in args]
    cut = next((i for i, w in enumerate(lowered) if w in ("for", "until", "till")), len(args))
    named = parse_shows(args[:cut], shows, "pause")
    show, also = (named[0], named[1:]) if named else (None, ())
    if cut == len(args):
        return Pause(show, also=also)
    when = " ".join(args[cut + 1 :])
    if not when:
        raise CommandError(PAUSE_NEED_WHEN.format(word=lowered[cut]), "pause")
    if lowered[cut] == "for":
        return Pause(show, duration=parse_duration(when), also=also)
    return Pause(show, until=parse_until(when, today), also=also)


def parse_resume(args: Sequence[str], shows: Sequence[str]) -> Resume:
    flags = [a for a in args if a.casefold() in _CATCH_UP_FLAGS]
    words = [a for a in args if a.casefold() not in _CATCH_UP_FLAGS]
    stray = next((w for w in words if w.startswith(("-", "—", "–"))), None)
    if stray is not None:
        raise CommandError(RESUME_EXTRA.format(value=quote_value(stray)), "resume")
    named = parse_shows(words, shows, "resume")
    show, also = (named[0], named[1:]) if named else (None, ())
    return Resume(show, catch_up=bool(flags), also=also)


def parse_control(
    head: str, args: Sequence[str], shows: Sequence[str], today: date | None = None
) -> ControlCommand:
    """The command for a word of ``CONTROL_WORDS``."""
    if head == "pause":
        return parse_pause(args, shows, today)
    if head in ("resume", "unpause"):
        return parse_resume(args, shows)
    return parse_preview(args, shows)
