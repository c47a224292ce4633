"""Single episode pages: plain text laid out like a crawler's capture, and HTML (JSON-LD
``PodcastEpisode``, else og:/meta tags, ``<title>``, ``<h1>`` and the same text layout)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from digests.models import RawEntry
from digests.parse.dates import published_at
from digests.parse.text import (
    MAX_NEARBY,
    MAX_TITLE,
    cap,
    element_text,
    html_parser,
    paragraphs,
    squash,
    stable_guid,
    to_text,
)

# "  • Show: PyTorch", "- Published: …", "1. Some title", "2) Other title".
_BULLET = re.compile(r"^(?:[-*•·‣◦▪–]|\d{1,3}[.)])\s+")
_META = re.compile(
    r"^(audio duration|duration|length|published|date|show|podcast|series|audio|"
    r"audio url|episode url|url|link|guid|id)\s*:\s*(\S.*)$",
    re.I,
)
_NEARBY = re.compile(
    r"^(?:nearby|more|other|recent|related|previous) episodes"
    r"(?:\s+(?:from|of)\s+(.{1,200}?))?\s*:?$",
    re.I,
)
_MAX_HEADING = 300
_TRANSCRIPT = re.compile(r"^(?:transcript(?: excerpt)?|episode transcript)\s*:?$", re.I)
_OVERVIEW = re.compile(r"^(?:episode overview|overview|about this episode)\s*:?$", re.I)

_META_FIELD = {
    "audio duration": "audio_duration",
    "duration": "duration",
    "length": "duration",
    "published": "published",
    "date": "published",
    "show": "show",
    "podcast": "show",
    "series": "show",
    "audio": "audio",
    "audio url": "audio",
    "episode url": "link",
    "url": "link",
    "link": "link",
    "guid": "guid",
    "id": "guid",
}


@dataclass
class TextPage:
    """What the crawler-style layout yields; every part optional."""

    title: str = ""
    description: str = ""
    transcript: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    nearby: list[str] = field(default_factory=list)
    nearby_show: str | None = None
    has_transcript: bool = False

    @property
    def is_episode(self) -> bool:
        """A title plus some sign of an episode; random prose is not one."""
        signals = ("published", "duration", "audio_duration", "audio")
        return bool(self.title) and (any(self.meta.get(k) for k in signals) or self.has_transcript)


def read_text_layout(text: str) -> TextPage:
    """Parse the two known layouts (blank-line separated, or one line per paragraph)."""
    lines = [line.strip() for line in text.splitlines()]
    # With blank lines between paragraphs, adjacent lines are one wrapped paragraph;
    # without any, every line is its own paragraph.
    reader = _LayoutReader(blank_separated=any(not line for line in _trim(lines)))
    for raw in lines:
        reader.line(raw)
    return reader.finish()


class _LayoutReader:
    """The text layout read a line at a time: title, description, meta lines, a nearby
    list, a transcript; the state says which part a line belongs to."""

    def __init__(self, *, blank_separated: bool) -> None:
        self.page = TextPage()
        self.blank_separated = blank_separated
        self.state = "start"
        self.desc: list[list[str]] = []
        self.body: list[list[str]] = []
        self.new_para = True

    def finish(self) -> TextPage:
        self.page.description = cap(paragraphs("\n\n".join(" ".join(p) for p in self.desc)))
        self.page.transcript = cap(paragraphs("\n\n".join(" ".join(p) for p in self.body)))
        return self.page

    def add(self, line: str) -> None:
        """Prose of the part being read ("overview" prose and anything after the list are
        crawler boilerplate, dropped)."""
        target = {"desc": self.desc, "transcript": self.body}.get(self.state)
        if target is None:
            return
        if self.new_para or not self.blank_separated or not target:
            target.append([line])
        else:
            target[-1].append(line)
        self.new_para = False

    def line(self, raw: str) -> None:
        if not raw:
            self.new_para = True
        elif self.state == "start":
            self.page.title = raw[:MAX_TITLE]
            self.state = "desc"
            self.new_para = True
        elif self.state == "nearby":
            self.nearby_item(raw)
        elif self.state == "end":
            pass
        elif len(raw) > _MAX_HEADING:
            # Only prose is this long; keeps the heading patterns off megabyte lines.
            self.add(raw)
        elif not self.heading(raw):
            self.add(raw)

    def nearby_item(self, raw: str) -> None:
        item = _BULLET.sub("", raw, count=1)
        if item == raw and self.page.nearby:
            self.state = "end"  # the list ended; what follows is page furniture
        elif len(self.page.nearby) < MAX_NEARBY:
            self.page.nearby.append(item[:MAX_TITLE])

    def heading(self, raw: str) -> bool:
        """Whether ``raw`` is a meta line or a heading (and the state it starts taken)."""
        if self.state != "transcript":
            m = _META.match(_BULLET.sub("", raw, count=1))
            if m:
                key = _META_FIELD[m.group(1).lower()]
                self.page.meta.setdefault(key, m.group(2).strip()[:MAX_TITLE])
                if self.state == "desc":
                    self.state = "meta"
                self.new_para = True
                return True
        nearby = _NEARBY.match(raw)
        if nearby:
            self.state = "nearby"
            self.page.nearby_show = (nearby.group(1) or "").strip()[:MAX_TITLE] or None
            return True
        if _TRANSCRIPT.match(raw):
            self.state = "transcript"
            self.page.has_transcript = True
            self.new_para = True
            return True
        if self.state != "transcript" and _OVERVIEW.match(raw):
            self.state = "overview"
            return True
        return False


def _trim(lines: list[str]) -> list[str]:
    start = 0
    end = len(lines)
    while start < end and not lines[start]:
        start += 1
    while end > start and not lines[end - 1]:
        end -= 1
    return lines[start:end]


def page_guid(link: str | None, title: str, published: str | None) -> str:
    """An episode page's id when it names none: its URL plus the episode's day.

    A page such as ``/latest`` moves on to the next episode at the same URL, so the URL
    alone would turn every new episode into an edit of the last one. The day (else the
    title) tells episodes apart, while a title corrected on the same day stays an edit.
    """
    if not link:
        return stable_guid(None, title, published)
    when = published_at(published)
    if when is not None:
        return f"{link}#{when.date().isoformat()}"
    digest = hashlib.sha1(squash(title).encode(), usedforsecurity=False).hexdigest()
    return f"{link}#{digest[:16]}"


def text_page_entry(page: TextPage, link: str | None = None) -> tuple[str | None, RawEntry]:
    meta = page.meta
    published = meta.get("published")
    link = meta.get("link") or link
    entry = RawEntry(
        guid=meta.get("guid") or page_guid(link, page.title, published),
        title=page.title,
        description=page.description,
        transcript=page.transcript,
        published=published,
        duration=meta.get("duration") or meta.get("audio_duration"),
        link=link,
        audio_url=meta.get("audio"),
        nearby=tuple(page.nearby),
        show=meta.get("show") or page.nearby_show,
    )
    return entry.show, entry


# ---------------------------------------------------------------- HTML


def _episode_type(obj: dict[str, Any]) -> bool:
    kind = obj.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return any(isinstance(k, str) and k.rsplit("/", 1)[-1].endswith("Episode") for k in kinds)


def _find_episode(data: Any, depth: int = 0) -> dict[str, Any] | None:
    if depth > 6:
        return None
    if isinstance(data, list):
        for item in data[:200]:
            found = _find_episode(item, depth + 1)
            if found is not None:
                return found
    elif isinstance(data, dict):
        if _episode_type(data):
            return data
        for key in ("@graph", "mainEntity", "hasPart", "episode"):
            if key in data:
                found = _find_episode(data[key], depth + 1)
                if found is not None:
                    return found
    return None


def _str(value: Any, *keys: str) -> str | None:
    """A string out of JSON-LD, which may nest it in objects or lists."""
    for _ in range(4):
        if isinstance(value, list):
            value = value[0] if value else None
        elif isinstance(value, dict):
            for key in keys:
                if key in value:
                    value = value[key]
                    break
            else:
                return None
        else:
            break
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = squash(str(value))
        return text or None
    return None


@dataclass
class _Html:
    jsonld: dict[str, Any] | None = None
    meta: dict[str, str] = field(default_factory=dict)
    title: str | None = None
    h1: str | None = None
    canonical: str | None = None
    feed_link: str | None = None


def _scan_head(root: etree._Element) -> _Html:
    found = _Html()
    for el in root.iter("script", "meta", "link", "title", "h1"):
        tag = el.tag
        if tag == "script":
            if (el.get("type") or "").strip().lower() != "application/ld+json":
                continue
            if found.jsonld is None and el.text:
                try:
                    found.jsonld = _find_episode(json.loads(el.text))
                except (ValueError, RecursionError):
                    continue
        elif tag == "meta":
            key = (el.get("property") or el.get("name") or el.get("itemprop") or "").lower()
            content = el.get("content")
            if key and content and key not in found.meta:
                found.meta[key] = squash(content)[:MAX_TITLE]
        elif tag == "link":
            rel = (el.get("rel") or "").lower().split()
            href = (el.get("href") or "").strip()
            if "canonical" in rel and href and found.canonical is None:
                found.canonical = href
            kind = (el.get("type") or "").lower()
            if "alternate" in rel and kind in ("application/rss+xml", "application/atom+xml"):
                found.feed_link = found.feed_link or href or None
        elif tag == "title" and found.title is None:
            found.title = squash("".join(el.itertext()))[:MAX_TITLE] or None
        elif tag == "h1" and found.h1 is None:
            found.h1 = squash("".join(el.itertext()))[:MAX_TITLE] or None
    return found


def read_html(
    root: etree._Element, source_url: str | None
) -> tuple[str | None, RawEntry | None, str | None]:
    """(show, entry or None, feed link the page advertises)."""
    head = _scan_head(root)
    body = root.find("body")
    text = element_text(body if body is not None else root)
    if head.h1:
        # Site navigation before the heading would otherwise pass for the title.
        at = text.find(head.h1)
        if at > 0:
            text = text[at:]
    layout = read_text_layout(text)
    ld = head.jsonld or {}
    meta = head.meta
    title = (
        _str(ld.get("name"))
        or _str(ld.get("headline"))
        or meta.get("og:title")
        or head.h1
        or head.title
        or layout.title
        or ""
    )[:MAX_TITLE]
    description = to_text(_str(ld.get("description")) or meta.get("og:description"))
    if not description:
        description = layout.description or to_text(meta.get("description"))
    ld_transcript = ld.get("transcript")
    transcript = to_text(_str(ld_transcript, "text", "articleBody")) or layout.transcript
    published, duration, link, audio, show = _page_facts(ld, meta, head, layout, source_url)
    is_episode = bool(head.jsonld) or (
        bool(title) and bool(published or duration or audio or layout.has_transcript)
    )
    if not is_episode:
        return show, None, head.feed_link
    entry = RawEntry(
        guid=layout.meta.get("guid") or page_guid(link, title, published),
        title=title,
        description=description,
        transcript=transcript,
        published=published,
        duration=duration,
        link=link,
        audio_url=audio,
        nearby=tuple(layout.nearby),
        show=show,
    )
    return show, entry, head.feed_link


def _page_facts(
    ld: dict[str, Any],
    meta: dict[str, str],
    head: _Html,
    layout: TextPage,
    source_url: str | None,
) -> tuple[str | None, str | None, str | None, str | None, str | None]:
    """(published, duration, link, audio, show): JSON-LD first, then meta tags and the
    page's own text layout."""
    published = (
        _str(ld.get("datePublished"))
        or _str(ld.get("uploadDate"))
        or meta.get("article:published_time")
        or layout.meta.get("published")
    )
    duration = (
        _str(ld.get("timeRequired"))
        or _str(ld.get("duration"))
        or _str(ld.get("associatedMedia"), "duration")
        or layout.meta.get("duration")
        or layout.meta.get("audio_duration")
        or meta.get("music:duration")
    )
    link = (
        _str(ld.get("url"))
        or meta.get("og:url")
        or head.canonical
        or layout.meta.get("link")
        or source_url
    )
    audio = (
        _str(ld.get("associatedMedia"), "contentUrl", "url")
        or meta.get("og:audio:secure_url")
        or meta.get("og:audio:url")
        or meta.get("og:audio")
        or layout.meta.get("audio")
    )
    show = (
        _str(ld.get("partOfSeries"), "name")
        or layout.meta.get("show")
        or layout.nearby_show
        or meta.get("og:site_name")
    )
    return published, duration, link, audio, show


def parse_html_tree(markup: str | bytes) -> etree._Element | None:
    return etree.fromstring(markup, html_parser())
