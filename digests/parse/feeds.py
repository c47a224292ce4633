"""RSS 2.0 (with the iTunes / content / podcast namespaces) and Atom, read with lxml.

The tree is walked once: each item's children are dispatched by tag through a dict, so the
cost per item is a handful of dict lookups plus the text we keep.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from lxml import etree

from digests.errors import FeedParseError
from digests.models import ParsedSource, RawEntry
from digests.parse.text import (
    MAX_ENTRIES,
    MAX_TITLE,
    cap,
    element_text,
    paragraphs,
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
    kind = (el.get("type") or "text").strip().lower()
    if kind == "xhtml" or (len(el) and kind not in ("text", "html")):
        return element_text(el)
    if "html" in kind:  # "html", or (Atom 0.3 style) a media type like "text/html"
        return to_text(_text(el))
    # Plain text (the default): "std::vector<int>" is words, not markup; and the entities
    # are decoded by the XML parser already, so "&amp;lt;" is meant as "&lt;".
    return cap(paragraphs(_text(el)))


def _audio(el: etree._Element) -> str | None:
    url = (el.get("url") or el.get("href") or "").strip()
    kind = (el.get("type") or "").lower()
    if url and (not kind or kind.startswith(("audio/", "video/"))):
        return url
    return None


# Items of every RSS flavour (any namespace) and Atom entries: the elements read as the
# document streams in, so a large feed never holds its whole tree.
_ENTRY_TAGS = ("{*}item", _ATOM + "entry")


# libxml2 errors about characters, not structure: bytes invalid in the declared encoding
# (XML_ERR_INVALID_ENCODING), an encoding it does not know (UNKNOWN/UNSUPPORTED_ENCODING),
# a character XML forbids (INVALID_CHAR, e.g. a stray control byte).
_CHARACTER_ERRORS = frozenset({9, 31, 32, 81})


def read_feed(
    data: bytes,
    source: str,
    options: dict[str, bool],
    *,
    repair: Callable[[bytes], bytes] | None = None,
) -> ParsedSource | None:
    """RSS or Atom, read entry by entry while lxml parses (``options``: the parser's
    safety settings). None when the document is XML whose root is ``<html>``.

    Each entry is read as soon as it ends and then dropped with what came before it, so
    memory stays at one entry plus the records, not the document's tree.

    A character error (one Latin-1 byte in a UTF-8 feed) is not worth the whole feed: with
    ``repair``, the document is read again from ``repair(data)`` (the bad characters
    replaced). Structural errors — truncation, mismatched tags — still fail, as they do
    in the repaired document.
    """
    try:
        return _read_feed(data, source, options)
    except etree.XMLSyntaxError as err:
        if repair is None or err.code not in _CHARACTER_ERRORS:
            raise FeedParseError(source, f"malformed XML: {xml_reason(err)}") from err
        first = err
    try:
        return _read_feed(repair(data), source, options)
    except etree.XMLSyntaxError as err:
        # The repaired document's line numbers are the original's; its reason is the one
        # left after repair (or the first, if repair changed nothing that mattered).
        reason = xml_reason(first if err.code in _CHARACTER_ERRORS else err)
        raise FeedParseError(source, f"malformed XML: {reason}") from err


def _read_feed(data: bytes, source: str, options: dict[str, bool]) -> ParsedSource | None:
    events = etree.iterparse(io.BytesIO(data), events=("end",), tag=_ENTRY_TAGS, **options)
    stream: _Stream | None = None
    try:
        for _, el in events:
            if stream is None:
                stream = _Stream(el.getroottree().getroot(), source)
            if not stream.add(el):
                break
    except (etree.ParserError, ValueError) as err:
        raise FeedParseError(source, f"malformed XML: {err}") from err
    if stream is not None and stream.entries:
        return stream.result()
    # No entries streamed: the whole tree is still here (nothing was dropped), so the
    # tree readers decide, with their rules for odd feeds and their errors.
    root = events.root
    if root is None:
        raise FeedParseError(source, "malformed XML: no root element")
    return read_tree(root, source)


def read_tree(root: etree._Element, source: str) -> ParsedSource | None:
    """A feed from a parsed tree; None when the root is ``<html>``."""
    tag = root.tag if isinstance(root.tag, str) else ""
    local = tag.rsplit("}", 1)[-1].lower()
    if local in ("rss", "rdf"):
        return parse_rss(root, source)
    if local == "feed":
        if tag != _ATOM + "feed":
            raise FeedParseError(source, f"unsupported Atom version (root {tag!r})")
        return parse_atom(root, source)
    if local == "html":
        return None
    raise FeedParseError(source, f"XML but not a feed (root element <{local or '?'}>)")


def xml_reason(err: etree.XMLSyntaxError) -> str:
    msg = " ".join(str(err.msg or err).split())
    return f"{msg} (line {err.lineno})" if err.lineno else msg


class _Stream:
    """Entries of one feed as they stream in: the same items and rules as ``parse_rss``
    and ``parse_atom`` (RSS items in <channel> or beside it, Atom entries in <feed>)."""

    def __init__(self, root: etree._Element, source: str) -> None:
        self.root = root
        self.source = source
        tag = root.tag if isinstance(root.tag, str) else ""
        local = tag.rsplit("}", 1)[-1].lower()
        self.atom = tag == _ATOM + "feed"
        if local == "feed" and not self.atom:
            raise FeedParseError(source, f"unsupported Atom version (root {tag!r})")
        self.kind = "atom" if self.atom else "rss"
        self.feed = local in ("rss", "rdf") or self.atom
        self.fields = _Fields(_ATOM_FIELDS if self.atom else _RSS_FIELDS)
        self.entries: list[RawEntry] = []
        self.show_title: str | None = None
        self._titled = False

    def add(self, el: etree._Element) -> bool:
        """Read one entry; False once no more are wanted."""
        parent = el.getparent()
        if not self.feed or parent is None or not self._holds_entries(parent, el):
            return True  # an item nested elsewhere, or a root that is no feed: left alone
        if not self._titled:
            # Everything before the first entry is the feed's head: its title is there.
            self._titled = True
            if not self.atom and _channel(self.root) is None:
                raise FeedParseError(self.source, "RSS document has no <channel>")
            self.show_title = self._title(parent)
        try:
            entry = _atom_entry(el, self.fields) if self.atom else _rss_item(el, self.fields)
        except ValueError:
            # One item we cannot read must not cost the reader the whole feed.
            entry = None
        if entry is not None:
            self.entries.append(entry)
        # Drop the entry and what came before it: nothing later refers back.
        el.clear(keep_tail=True)
        while el.getprevious() is not None:
            del parent[0]
        return len(self.entries) < MAX_ENTRIES

    def _holds_entries(self, parent: etree._Element, el: etree._Element) -> bool:
        if self.atom:
            return parent is self.root and el.tag == _ATOM + "entry"
        if el.tag == _ATOM + "entry":
            return False
        if parent is self.root:
            return True
        ptag = parent.tag if isinstance(parent.tag, str) else ""
        return parent.getparent() is self.root and ptag.rsplit("}", 1)[-1].lower() == "channel"

    def _title(self, head: etree._Element) -> str | None:
        if self.atom:
            for el in head:
                if el.tag == _ATOM + "title":
                    return squash(_atom_text(el))[:MAX_TITLE] or None
            return None
        channel = head if head is not self.root else _channel(self.root)
        if channel is None:
            return None
        for el in channel:
            tag = el.tag
            if isinstance(tag, str) and tag.rsplit("}", 1)[-1].lower() == "title":
                return squash(_text(el))[:MAX_TITLE] or None
        return None

    def result(self) -> ParsedSource:
        if self.show_title is None:
            # A title after the entries (rare, but valid) is still in the tree.
            self.show_title = self._title(self.root)
        return _source(self.kind, self.show_title, self.entries)


def _channel(root: etree._Element) -> etree._Element | None:
    for child in root:
        if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1].lower() == "channel":
            return child
    return None


def parse_rss(root: etree._Element, source: str) -> ParsedSource:
    channel = _channel(root)
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
