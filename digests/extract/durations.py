"""An episode's duration in seconds, from whatever a feed writes: seconds, clock, ISO 8601, words.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

import isodate

MAX_DURATION = 7 * 24 * 3600


_SIMPLE_ISO = re.compile(r"PT(?:(\d{1,3})H)?(?:(\d{1,4})M)?(?:(\d{1,6}(?:\.\d{1,6})?)S)?")


_CLOCK = re.compile(r"(?:(\d{1,3}):)?(\d{1,4}):(\d{1,2}(?:\.\d{1,6})?)")


_NUMBER = re.compile(r"\d{1,9}(?:\.\d{1,6})?")


_WORDS = re.compile(
    r"(?=\d)(?:(\d{1,3})\s*h(?:ours?|rs?)?\s*)?(?:(\d{1,4})\s*m(?:in(?:ute)?s?)?\s*)?"
    r"(?:(\d{1,6})\s*s(?:ec(?:ond)?s?)?)?",
    re.I,
)


def duration_seconds(text: str | None) -> int | None:
    """Seconds from ``PT4M11S``, ``4:11``, ``00:04:11``, ``251``, ``251.0``, ``4m 11s``."""
    if not text:
        return None
    value = text.strip()
    if not value or len(value) > 64:
        return None
    seconds: float | None = None
    if (m := _SIMPLE_ISO.fullmatch(value)) is not None and any(m.groups()):
        # The common "PT4M11S" without isodate's general machinery; same result.
        h, mi, sec = m.groups()
        seconds = int(h or 0) * 3600 + int(mi or 0) * 60 + float(sec or 0)
    elif value[0] in "Pp":
        if not any(c.isdigit() for c in value):
            return None  # isodate reads a bare "PT" as zero
        try:
            parsed = isodate.parse_duration(value.upper())
        except (isodate.ISO8601Error, ValueError, OverflowError):
            return None
        if not isinstance(parsed, timedelta):
            # Years and months have no fixed length: not a duration for audio.
            return None
        seconds = parsed.total_seconds()
    elif (m := _CLOCK.fullmatch(value)) is not None:
        hours, minutes, secs = m.group(1), int(m.group(2)), float(m.group(3))
        if secs >= 60 or (hours is not None and minutes >= 60):
            return None
        seconds = (int(hours) * 3600 if hours else 0) + minutes * 60 + secs
    elif _NUMBER.fullmatch(value):
        seconds = float(value)
    elif (m := _WORDS.fullmatch(value)) is not None and any(m.groups()):
        h, mi, s = (int(g) if g else 0 for g in m.groups())
        seconds = h * 3600 + mi * 60 + s
    if seconds is None or math.isnan(seconds) or seconds < 0 or seconds > MAX_DURATION:
        return None
    return int(seconds + 0.5)
