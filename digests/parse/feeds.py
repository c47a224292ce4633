"""RSS 2.0 (with the iTunes / content / podcast namespaces) and Atom, read with lxml.

The tree is walked once: each item's children are dispatched by tag through a dict, so the
cost per item is a handful of dict lookups plus the text we keep.
"""

from __future__ import annotations

from lxml import etree

from digests.errors import FeedParseError
from digests.models import ParsedSource, RawEntry
from digests.parse.text import (
    MAX_ENTRIES,
    MAX_TITLE,
    cap,
    element_text,
    squash,
    stable_guid,
    to_text,
)

ATOM_NS = "http://www.w3.org/2005/Atom"
_ATOM = "{" + ATOM_NS + "}"

# Namespace URIs by what they are, compared without scheme, case or trailing slash: feeds
# spell the iTunes one "http://www.itunes.com/DTDs/Podcast-1.0.dtd" and worse.
_NS_KIND = {
    "www.itunes.com/dtds/podcast-1.0.dtd": "itunes",
    "purl.org/rss/1.0/modules/content": "content",
    "podcastindex.org/namespace/1.0": "podcast",
    "github.com/podcastindex-org/podcast-namespace/blob/main/docs/1.0.md": "podcast",
    "purl.org/dc/elements/1.1": "dc",
    "www.w3.org/2005/atom": "atom",
    "search.yahoo.com/mrss": "media",
    # RSS 1.0 puts its plain elements in a namespace; they read like RSS 2.0 ones.
    "purl.org/rss/1.0": "rss",
}

# (namespace kind, local name) → field. `None` kind: no namespace (plain RSS elements).
_RSS_FIELDS: dict[tuple[str | None, str], str] = {
    (None, "title"): "title",
    (None, "link"): "link",
    (None, "guid"): "guid",
    (None, "pubdate"): "published",
    (None, "description"): "description",
    (None, "enclosure"): "enclosure",
    ("content", "encoded"): "content",
    ("podcast", "transcript"): "podcast_transcript",
    ("itunes", "duration"): "duration",
    ("itunes", "summary"): "summary",
    ("itunes", "title"): "itunes_title",
    ("dc", "date"): "dc_date",
    ("atom", "link"): "atom_link",
    ("media", "content"): "media",
}

_ATOM_FIELDS: dict[tuple[str | None, str], str] = {
    ("atom", "title"): "title",
    ("atom", "id"): "guid",
    ("atom", "link"): "atom_link",
    ("atom", "published"): "published",
    ("atom", "updated"): "updated",
    ("atom", "summary"): "description",
    ("atom", "content"): "content",
    ("itunes", "duration"): "duration",
    ("itunes", "summary"): "summary",
    ("podcast", "transcript"): "podcast_transcript",
    ("media", "content"): "media",
}


def _ns_kind(uri: str) -> str | None:
    key = uri.strip().lower()
    for prefix in ("https://", "http://"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    return _NS_KIND.get(key.rstrip("/#"))


class _Fields(dict[object, str | None]):
    """tag → field, learnt per parse: a feed repeats a few dozen distinct tags, so after
    the first item every child costs one dict lookup."""

    def __init__(self, table: dict[tuple[str | None, str], str]) -> None:
        super().__init__()
        self._table = table

    def __missing__(self, tag: object) -> str | None:
        field: str | None = None
        if isinstance(tag, str):
            if tag[0] == "{":
                uri, _, local = tag[1:].partition("}")
                kind = _ns_kind(uri)
                if kind == "rss":
                    field = self._table.get((None, local.lower()))
                elif kind is not None:
                    field = self._table.get((kind, local.lower()))
            else:
                field = self._table.get((None, tag.lower()))
        self[tag] = field
        return field


def _text(el: etree._Element) -> str:
    # An unresolved entity splits .text; itertext keeps the rest (and the reference, inert).
    if len(el):
        return "".join(el.itertext())
    return el.text or ""


def _atom_text(el: etree._Element) -> str:
    """An Atom text construct as plain text (type text, html or xhtml)."""
    kind = (el.get("type") or "text").lower()
    if kind == "xhtml" or (len(el) and kind not in ("text", "html")):
        return element_text(el)
    return to_text(_text(el))


def _audio(el: etree._Element) -> str | None:
    url = (el.get("url") or el.get("href") or "").strip()
    kind = (el.get("type") or "").lower()
    if url and (not kind or kind.startswith(("audio/", "video/"))):
        return url
    return None


def parse_rss(root: etree._Element, source: str) -> ParsedSource:
    channel = None
    for child in root:
        if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1].lower() == "channel":
            channel = child
            break
    if channel is None:
        raise FeedParseError(source, "RSS document has no <channel>")
    fields = _Fields(_RSS_FIELDS)
    show_title: str | None = None
    entries: list[RawEntry] = []
    # Items normally sit in <channel>; RSS 0.9x/1.0-style feeds put them beside it.
    containers = [channel, root]
    for container in containers:
        for el in container:
            tag = el.tag
            if not isinstance(tag, str):
                continue
            local = tag.rsplit("}", 1)[-1].lower()
            if local == "item":
                if len(entries) >= MAX_ENTRIES:
                    break
                try:
                    entry = _rss_item(el, fields)
                except ValueError:
                    # One item we cannot read must not cost the reader the whole feed.
                    entry = None
                if entry is not None:
                    entries.append(entry)
            elif local == "title" and container is channel and show_title is None:
                show_title = squash(_text(el))[:MAX_TITLE] or None
    return _source("rss", show_title, entries)


def _source(kind: str, show_title: str | None, entries: list[RawEntry]) -> ParsedSource:
    return ParsedSource(kind=kind, show_title=show_title, entries=tuple(entries))


def _rss_item(item: etree._Element, fields: _Fields) -> RawEntry | None:
    f: dict[str, str] = {}
    audio: str | None = None
    link: str | None = None
    permalink = False
    for child in item:
        field = fields[child.tag]
        if field is None:
            continue
        if field == "enclosure" or field == "media":
            if audio is None:
                audio = _audio(child)
        elif field == "atom_link":
            if link is None and (child.get("rel") or "alternate") == "alternate":
                link = (child.get("href") or "").strip() or None
        elif field not in f:
            f[field] = _text(child)
            if field == "guid" and (child.get("isPermaLink") or "true").lower() != "false":
                permalink = True
    title = squash(f.get("title") or f.get("itunes_title") or "")[:MAX_TITLE]
    guid = squash(f.get("guid", ""))[:MAX_TITLE] or None
    if not title and not guid:
        return None
    link = squash(f.get("link", ""))[:MAX_TITLE] or link
    if link is None and permalink and guid and guid.startswith(("http://", "https://")):
        # RSS 2.0: a guid that is a permalink is the item's URL when <link> is missing.
        link = guid
    published = squash(f.get("published") or f.get("dc_date") or "")[:200] or None
    description = to_text(f.get("description") or f.get("summary"))
    transcript = to_text(f.get("content") or f.get("podcast_transcript"))
    if guid is None:
        guid = stable_guid(link, title, published)
    return RawEntry(
        guid=guid,
        title=title,
        description=description,
        transcript=transcript,
        published=published,
        duration=squash(f.get("duration", ""))[:100] or None,
        link=link,
        audio_url=audio[:MAX_TITLE] if audio else None,
    )


def parse_atom(root: etree._Element, source: str) -> ParsedSource:
    fields = _Fields(_ATOM_FIELDS)
    show_title: str | None = None
    entries: list[RawEntry] = []
    for el in root:
        tag = el.tag
        if tag == _ATOM + "entry":
            if len(entries) >= MAX_ENTRIES:
                break
            try:
                entry = _atom_entry(el, fields)
            except ValueError:
                entry = None
            if entry is not None:
                entries.append(entry)
        elif tag == _ATOM + "title" and show_title is None:
            show_title = squash(_atom_text(el))[:MAX_TITLE] or None
    return _source("atom", show_title, entries)


def _atom_entry(entry: etree._Element, fields: _Fields) -> RawEntry | None:
    f: dict[str, str] = {}
    audio: str | None = None
    link: str | None = None
    for child in entry:
        field = fields[child.tag]
        if field is None:
            continue
        if field == "atom_link":
            rel = (child.get("rel") or "alternate").lower()
            href = (child.get("href") or "").strip()
            if rel == "enclosure" and audio is None:
                audio = _audio(child)
            elif rel == "alternate" and link is None and href:
                link = href
        elif field == "media":
            if audio is None:
                audio = _audio(child)
        elif field not in f:
            f[field] = (
                _atom_text(child) if field in ("title", "description", "content") else _text(child)
            )
    title = squash(f.get("title", ""))[:MAX_TITLE]
    guid = squash(f.get("guid", ""))[:MAX_TITLE] or None
    if not title and not guid:
        return None
    published = squash(f.get("published") or f.get("updated") or "")[:200] or None
    description = f.get("description") or to_text(f.get("summary"))
    transcript = f.get("content") or to_text(f.get("podcast_transcript"))
    if guid is None:
        guid = stable_guid(link, title, published)
    return RawEntry(
        guid=guid,
        title=title,
        description=cap(description),
        transcript=cap(transcript),
        published=published,
        duration=squash(f.get("duration", ""))[:100] or None,
        link=link[:MAX_TITLE] if link else None,
        audio_url=audio[:MAX_TITLE] if audio else None,
    )
