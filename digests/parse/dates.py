"""Publication dates as feeds write them (RFC 822 and its variants, ISO 8601) → a UTC datetime.
"""

from __future__ import annotations

import email.utils
import re
from datetime import UTC, date, datetime, timedelta

import isodate


def published_at(text: str | None) -> datetime | None:
    """A UTC datetime from RFC 822 (``Mon, 05 Oct 2026 13:00:40 GMT``) or ISO 8601."""
    if not text:
        return None
    value = text.strip()
    if not value or len(value) > 100:
        return None
    fast = _rfc822_usual(value)
    if fast is not None:
        return fast
    parsed = _iso(value) if value[:4].isdigit() else None
    if parsed is None:
        parsed = _rfc822(value)
    if parsed is None and not value[:4].isdigit():
        parsed = _iso(value)
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        # Out of range once in UTC, or an offset of a day or more (isodate reads
        # "+24:00", which datetime cannot represent): no date, as if none were given.
        return None


def _iso(value: str) -> datetime | None:
    if value.endswith(("z", "Z")):
        value = value[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    try:
        return isodate.parse_datetime(value)
    except (isodate.ISO8601Error, ValueError, OverflowError):
        pass
    try:
        day = isodate.parse_date(value)
    except (isodate.ISO8601Error, ValueError, OverflowError):
        return None
    if isinstance(day, date):
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    return None


_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}


# "Mon, 05 Oct 2026 13:00:40 GMT" / "+0200": what nearly every feed writes.
_RFC822_FAST = re.compile(
    r"(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{2}):(\d{2})(?::(\d{2}))?"
    r"\s*(?:(GMT|UTC|UT|Z)|([+-])(\d{2})(\d{2}))?"
)


# The same, exactly as nearly every feed writes it (ASCII, two-digit day, seconds, GMT,
# UTC or a numeric zone): read by one fullmatch, which costs less than testing each
# position in Python.
_RFC822_USUAL = re.compile(
    r"[A-Za-z]{3}, ([0-9]{2}) ([A-Za-z]{3}) ([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) "
    r"(?:GMT|UTC|[+-]0000|([+-])([0-9]{2})([0-9]{2}))"
)


def _rfc822_usual(v: str) -> datetime | None:
    """``Mon, 05 Oct 2026 13:00:40 GMT`` / ``+0200``: how nearly every feed dates items.
    Anything else is left to ``_rfc822`` and ``_iso``."""
    m = _RFC822_USUAL.fullmatch(v)
    if m is None:
        return None
    day, mon, year, hh, mm, ss, sign, oh, om = m.groups()
    month = _MONTHS.get(mon.lower())
    if month is None:
        return None
    try:
        parsed = datetime(int(year), month, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
        if sign:
            offset = int(oh) * 60 + int(om)
            return parsed - timedelta(minutes=offset if sign == "+" else -offset)
        return parsed
    except (ValueError, OverflowError):
        return None


def _rfc822(value: str) -> datetime | None:
    m = _RFC822_FAST.fullmatch(value)
    if m is not None:
        day, mon, year, hh, mm, ss, _, sign, oh, om = m.groups()
        month = _MONTHS.get(mon.lower())
        if month is not None:
            try:
                parsed = datetime(int(year), month, int(day), int(hh), int(mm), int(ss or 0))
            except ValueError:
                return None
            if sign:
                offset = timedelta(hours=int(oh), minutes=int(om))
                try:
                    parsed -= offset if sign == "+" else -offset
                except OverflowError:
                    return None  # year 1 or 9999 moved out of range
            return parsed.replace(tzinfo=UTC)
    try:
        return email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
