"""JSON Feed 1.0 and 1.1 (jsonfeed.org, ``application/feed+json``), read like RSS.

Detected by content: a JSON object whose ``version`` names jsonfeed.org. The limits are
the XML reader's: no deeper than libxml2 lets XML nest, at most ``MAX_ENTRIES`` items,
every text capped as the XML fields are. Fields of the wrong type are treated as absent,
and extensions (``_itunes``, any key starting with ``_``) are never read.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from digests.errors import FeedParseError
from digests.models import ParsedSource, RawEntry
from digests.parse.links import feed_base, resolve
from digests.parse.text import (
    MAX_ENTRIES,
    MAX_TITLE,
    cap,
    paragraphs,
    squash,
    stable_guid,
    to_text,
)

__all__ = ["MAX_DEPTH", "looks_json_feed", "read_json_feed", "too_deep"]

# libxml2's nesting limit without XML_PARSE_HUGE (which the XML reader never sets).
MAX_DEPTH = 256

_VERSION = "jsonfeed.org/version/"
# The characters that can change nesting or string state; everything else is skipped in C.
_STRUCTURE = re.compile(r'[\[\]{}"\\]')
# What a JSON escape can spell but no text should hold: a lone surrogate (``"\ud800"``;
# a pair is joined by the decoder) cannot be encoded, so it would fail where the text is
# stored or printed; and the control characters the XML reader refuses. Each becomes
# U+FFFD here, once, as the XML reader's repair does.
_UNFIT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def looks_json_feed(head: str) -> bool:
    """The document's opening names the JSON Feed version (it is the first key of nearly
    every feed, and must be there in any)."""
    return head.startswith("{") and _VERSION in head.lower()


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text`` nests arrays/objects deeper than ``limit``: one linear pass, so
    a 50,000-deep document is refused before ``json`` recurses into it."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    in_string = False
    skip_to = -1
    for m in _STRUCTURE.finditer(text):
        i = m.start()
        if i < skip_to:
            continue  # the character after a backslash: escaped
        c = m.group()
        if in_string:
            if c == "\\":
                skip_to = i + 2
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth -= 1
    return False


def read_json_feed(text: str, source: str, *, claimed: bool) -> ParsedSource | None:
    """A JSON Feed from ``text``; None when it is no JSON Feed and not ``claimed`` (the
    opening did not name one), so the caller reads it another way."""
    if too_deep(text):
        if not claimed:
            return None
        raise FeedParseError(source, f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        # ValueError: malformed, or a number too long for int(); RecursionError cannot
        # happen under the depth check, but must not escape if it does.
        if not claimed:
            return None
        reason = " ".join(str(err).split())[:200]
        raise FeedParseError(source, f"malformed JSON Feed: {reason}") from err
    if not isinstance(data, dict) or _VERSION not in _str(data, "version").lower():
        if not claimed:
            return None
        raise FeedParseError(source, "JSON but not a JSON Feed (no jsonfeed.org version)")
    items = data.get("items")
    if not isinstance(items, list):
        raise FeedParseError(source, "JSON Feed without an items list")
    base = feed_base(source)
    entries: list[RawEntry] = []
    for item in items:
        if len(entries) >= MAX_ENTRIES:
            break
        entry = _item(item, base) if isinstance(item, dict) else None
        if entry is not None:
            entries.append(entry)
    return ParsedSource(
        kind="json-feed",
        show_title=squash(_str(data, "title"))[:MAX_TITLE] or None,
        entries=tuple(entries),
        link=_link(_str(data, "home_page_url"), base),
    )


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return _fit(value) if isinstance(value, str) else ""


def _fit(text: str) -> str:
    return text if text.isascii() and text.isprintable() else _UNFIT.sub("\ufffd", text)


def _link(value: str, base: str | None) -> str | None:
    found = resolve(value[: MAX_TITLE * 2], base)
    return found[:MAX_TITLE] if found else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _item(item: dict[str, Any], base: str | None) -> RawEntry | None:
    raw_id = item.get("id")
    # 1.0 feeds sometimes give a number; the spec says string. A bool is neither.
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    guid = squash(_fit(raw_id))[:MAX_TITLE] if isinstance(raw_id, str) else ""
    title = squash(_str(item, "title"))[:MAX_TITLE]
    html = _str(item, "content_html")
    plain = _str(item, "content_text")
    if not title and not guid and not (html or plain):
        return None
    raw_link = _str(item, "url").strip() or _str(item, "external_url").strip() or None
    link = _link(raw_link, base) if raw_link else None
    published = squash(_str(item, "date_published") or _str(item, "date_modified"))[:200] or None
    audio, duration = _attachment(item.get("attachments"), base)
    return RawEntry(
        guid=guid or stable_guid(raw_link, title, published),
        title=title,
        description=cap(paragraphs(_str(item, "summary"))),
        transcript=to_text(html) if html else cap(paragraphs(plain)),
        published=published,
        duration=duration,
        link=link,
        audio_url=audio,
    )


def _attachment(value: object, base: str | None) -> tuple[str | None, str | None]:
    """The first audio (or video, or untyped) attachment: its URL and duration."""
    if not isinstance(value, list):
        return None, None
    for att in value[:MAX_ENTRIES]:
        if not isinstance(att, dict):
            continue
        kind = _str(att, "mime_type").lower()
        if kind and not kind.startswith(("audio/", "video/")):
            continue
        url = _link(_str(att, "url"), base)
        if url is None:
            continue
        seconds = _number(att.get("duration_in_seconds"))
        finite = seconds is not None and math.isfinite(seconds)
        return url, f"{seconds:.0f}" if finite else None
    return None, None
