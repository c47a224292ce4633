"""Days and weeks as people write them in `/episodes nearby` and `/episodes week`: ISO and
numeric dates (read only when unambiguous), month words, ``today``, ISO and bare weeks.
Pure: the text and ``today`` in, a ``date`` or ``Week`` out, or a ``CommandError``."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from bot.listeners.commands.model import MAX_YEAR, MIN_YEAR, CommandError, Week, week_containing
from bot.listeners.commands.model import quote_value as _quote
from bot.messages.errors import (
    AMBIGUOUS_DATE,
    DATE_RANGE,
    NEED_YEAR,
    NO_SUCH_DATE,
    NO_SUCH_WEEK,
    NOT_A_DATE,
    NOT_A_WEEK,
    WRONG_WEEKDAY,
)
from digests.recap import InvalidWeek, parse_week

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


def show_day(day: date) -> str:
    """A day as replies echo it: ``5 Oct 2026`` (unambiguous in every locale)."""
    return f"{day.day} {calendar.month_abbr[day.month]} {day.year}"


def _calendar_day(value: str, subcommand: str, year: int, month: int, day: int) -> date:
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise CommandError(DATE_RANGE.format(value=_quote(value)), subcommand)
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise CommandError(NO_SUCH_DATE.format(value=_quote(value)), subcommand) from exc


def _need_today(today: date | None, value: str, subcommand: str) -> date:
    if today is None:
        raise CommandError(NEED_YEAR.format(value=_quote(value)), subcommand)
    return today


def _latest(
    value: str, subcommand: str, month: int, day: int, today: date | None, ahead: bool = False
) -> date:
    """The latest ``day`` of ``month`` that is not after today: "Oct 5" in November is this
    year's, in September last year's. ``ahead``: the first that is not before today instead
    ("until Dec 24" of a pause means the coming one)."""
    try:
        date(2000, month, day)  # a leap year: does the day exist at all?
    except ValueError as exc:
        raise CommandError(NO_SUCH_DATE.format(value=_quote(value)), subcommand) from exc
    base = _need_today(today, value, subcommand)
    step = 1 if ahead else -1
    for year in range(base.year, base.year + step * (_LEAP_SEARCH + 1), step):
        try:
            found = date(year, month, day)
        except ValueError:
            continue  # 29 Feb outside a leap year
        if (found >= base) if ahead else (found <= base):
            return found
    raise CommandError(NO_SUCH_DATE.format(value=_quote(value)), subcommand)


def _day_or_month_first(
    value: str,
    subcommand: str,
    a: int,
    b: int,
    year: int | None,
    today: date | None,
    ahead: bool = False,
) -> date:
    """``a/b[/year]`` when only one reading is a date (or both readings are the same day)."""
    if 0 in (a, b) or (a > 12 and b > 12):
        raise CommandError(NO_SUCH_DATE.format(value=_quote(value)), subcommand)
    if a == b or a > 12:
        day, month = a, b
    elif b > 12:
        day, month = b, a
    else:
        first, second = f"{a} {calendar.month_abbr[b]}", f"{b} {calendar.month_abbr[a]}"
        raise CommandError(
            AMBIGUOUS_DATE.format(value=_quote(value), first=first, second=second),
            subcommand,
        )
    if year is None:
        return _latest(value, subcommand, month, day, today, ahead)
    return _calendar_day(value, subcommand, year, month, day)


def _month_words(
    value: str, subcommand: str, today: date | None, ahead: bool = False
) -> date | None:
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
        found = _latest(value, subcommand, month, day, today, ahead)
    if weekday is not None and found.weekday() != weekday:
        raise CommandError(
            WRONG_WEEKDAY.format(
                day=show_day(found),
                actual=calendar.day_name[found.weekday()],
                given=calendar.day_name[weekday],
            ),
            subcommand,
        )
    return found


def parse_day(
    value: str, subcommand: str, today: date | None = None, *, ahead: bool = False
) -> date | None:
    """A day written the ways people write one, or None when ``value`` does not look like a
    date at all (so it can be read as something else).

    ``today`` anchors the relative forms (``today``, ``yesterday``, a date without a year),
    which without it are refused; a date without a year is the latest such day not after
    ``today``, or with ``ahead`` the first not before it. Raises ``CommandError`` for a
    date-shaped value that is not a day (30 Feb), out of range, or ambiguous
    (``05/10/2026``: 5 Oct or 10 May?).
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
        return _day_or_month_first(value, subcommand, a, b, None, today, ahead)
    if _DATELIKE_RE.match(value):
        raise CommandError(NOT_A_DATE.format(value=_quote(value)), subcommand)
    return _month_words(value, subcommand, today, ahead)


def parse_date(
    value: str, subcommand: str, today: date | None = None, *, ahead: bool = False
) -> date:
    """Like ``parse_day``, but anything that is not a day is an error."""
    found = parse_day(value, subcommand, today, ahead=ahead)
    if found is None:
        raise CommandError(NOT_A_DATE.format(value=_quote(value)), subcommand)
    return found


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
    raise CommandError(NO_SUCH_WEEK.format(value=_quote(value)), "week")


def parse_week_args(args: list[str], today: date | None) -> Week:
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
            raise CommandError(NO_SUCH_WEEK.format(value=_quote(value)), "week") from exc
        if not MIN_YEAR <= year <= MAX_YEAR:
            raise CommandError(DATE_RANGE.format(value=_quote(value)), "week")
        return Week(year, number)
    if match := _BARE_WEEK_RE.match(value):
        return _week_number(value, int(match.group(1)), today)
    day = parse_day(value, "week", today)
    if day is None:
        raise CommandError(NOT_A_WEEK.format(value=_quote(value)), "week")
    return week_containing(day)
