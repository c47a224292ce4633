"""RSS 2.0 (with the iTunes / content / podcast namespaces) and Atom, read with lxml.

The tree is walked once: each item's children are dispatched by tag through a dict, so the
cost per item is a handful of dict lookups plus the text we keep.
"""

from __future__ import annotations

import base64
import dataclasses
import io

from lxml import etree

from digests.errors import FeedParseError
from digests.models import Chapter, ParsedSource, RawEntry, TranscriptLink
from digests.parse.chapters import psc_chapters
from digests.parse.item_hashes import ItemHasher, ItemHashes
from digests.parse.lenient import TooBroken, repair, truncated
from digests.parse.links import feed_base, resolve
from digests.parse.text import (
    MAX_ENTRIES,
    MAX_TITLE,
    cap,
    element_text,
    notes_texts,
    paragraphs,
    squash,
    stable_guid,
    to_text,
)

ATOM_NS = "http://www.w3.org/2005/Atom"
_ATOM = "{" + ATOM_NS + "}"
# Atom 0.3 (2003-2005): what Atom 1.0 became; read with its few different names.
ATOM03_NS = "http://purl.org/atom/ns#"
_ATOM03 = "{" + ATOM03_NS + "}"
# A <feed> in no namespace (its xmlns forgotten) is read as Atom too, as feedparser does.
_ATOM_FEEDS = frozenset({_ATOM + "feed", _ATOM03 + "feed", "feed"})

# Namespace URIs by what they are, compared without scheme, case or trailing slash: feeds
# spell the iTunes one "http://www.itunes.com/DTDs/Podcast-1.0.dtd" and worse.
_NS_KIND = {
    "www.itunes.com/dtds/podcast-1.0.dtd": "itunes",
    "purl.org/rss/1.0/modules/content": "content",
    "podcastindex.org/namespace/1.0": "podcast",
    "github.com/podcastindex-org/podcast-namespace/blob/main/docs/1.0.md": "podcast",
    "purl.org/dc/elements/1.1": "dc",
    "www.w3.org/2005/atom": "atom",
    "purl.org/atom/ns": "atom",
    "search.yahoo.com/mrss": "media",
    # RSS 1.0 puts its plain elements in a namespace; they read like RSS 2.0 ones.
    "purl.org/rss/1.0": "rss",
    "my.netscape.com/rdf/simple/0.9": "rss",
    # Userland's short-lived RSS 2.0 namespace (2002).
    "backend.userland.com/rss2": "rss",
    "podlove.org/simple-chapters": "psc",
}

# (namespace kind, local name) → field. `None` kind: no namespace (plain RSS elements).
_RSS_FIELDS: dict[tuple[str | None, str], str] = {
    (None, "title"): "title",
    ("media", "title"): "media_title",
    ("dc", "title"): "dc_title",
    (None, "link"): "link",
    (None, "guid"): "guid",
    (None, "pubdate"): "published",
    (None, "description"): "description",
    (None, "enclosure"): "enclosure",
    ("content", "encoded"): "content",
    ("podcast", "transcript"): "podcast_transcript",
    ("podcast", "chapters"): "podcast_chapters",
    ("psc", "chapters"): "psc_chapters",
    ("itunes", "duration"): "duration",
    ("itunes", "summary"): "summary",
    ("itunes", "title"): "itunes_title",
    ("dc", "date"): "dc_date",
    ("atom", "link"): "atom_link",
    ("media", "content"): "media",
}

_ATOM_FIELDS: dict[tuple[str | None, str], str] = {
    ("atom", "title"): "title",
    ("media", "title"): "media_title",
    ("dc", "title"): "dc_title",
    ("atom", "id"): "guid",
    ("atom", "link"): "atom_link",
    ("atom", "published"): "published",
    ("atom", "updated"): "updated",
    ("atom", "issued"): "published",
    ("atom", "modified"): "updated",
    ("atom", "created"): "created",
    ("atom", "summary"): "description",
    ("atom", "content"): "content",
    ("itunes", "duration"): "duration",
    ("itunes", "summary"): "summary",
    ("podcast", "transcript"): "podcast_transcript",
    ("podcast", "chapters"): "podcast_chapters",
    ("psc", "chapters"): "psc_chapters",
    ("media", "content"): "media",
}

_MAX_TRANSCRIPT_LINKS = 8


def _feed_entry(
    guid: str,
    title: str,
    description: str,
    transcript: str,
    published: str | None,
    duration: str | None,
    link: str | None,
    audio_url: str | None,
    transcripts: tuple[TranscriptLink, ...],
    chapters_url: str | None,
    raw_hash: str | None,
    chapters: tuple[Chapter, ...] = (),
) -> RawEntry:
    """``RawEntry(...)`` of a feed item (no nearby titles, no show, text normalised)."""
    return RawEntry(
        guid=guid,
        title=title,
        description=description,
        transcript=transcript,
        published=published,
        duration=duration,
        link=link,
        audio_url=audio_url,
        transcripts=transcripts,
        chapters_url=chapters_url,
        chapters=chapters,
        raw_hash=raw_hash,
        normalised=True,
    )


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

    def __init__(self, table: dict[tuple[str | None, str], str], bare: str | None = None) -> None:
        super().__init__()
        self._table = table
        self._bare = bare  # the kind of tags in no namespace (an Atom feed without xmlns)

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
                field = self._table.get((self._bare, tag.lower()))
        self[tag] = field
        return field


def _text(el: etree._Element) -> str:
    # An unresolved entity splits .text; itertext keeps the rest (and the reference, inert).
    if len(el):
        return "".join(el.itertext())
    return el.text or ""


def _atom_text(el: etree._Element) -> str:
    """An Atom text construct as plain text (type text, html or xhtml; Atom 0.3's media
    types, and its ``mode="escaped"`` or ``"base64"``)."""
    kind = (el.get("type") or "text").strip().lower()
    mode = (el.get("mode") or "").strip().lower()
    if mode == "base64" or ("/" in kind and not kind.startswith("text/") and "xml" not in kind):
        # Atom 1.0: a media type neither text nor XML is base64 (Atom 0.3 said mode=).
        return _base64_text(_text(el), kind)
    if mode == "escaped" and "html" in kind:
        return to_text(_text(el))
    if kind == "xhtml" or (len(el) and kind not in ("text", "html")):
        return element_text(el)
    if "html" in kind:  # "html", or (Atom 0.3 style) a media type like "text/html"
        return to_text(_text(el))
    # Plain text (the default): "std::vector<int>" is words, not markup; and the entities
    # are decoded by the XML parser already, so "&amp;lt;" is meant as "&lt;".
    return cap(paragraphs(_text(el)))


def _base64_text(value: str, kind: str) -> str:
    try:
        text = base64.b64decode("".join(value.split()), validate=False).decode("utf-8", "replace")
    except ValueError:
        return ""
    return to_text(text) if "html" in kind else cap(paragraphs(text))


def _href(value: str, el: etree._Element, base: str | None) -> str | None:
    """``value`` (a link in ``el``) resolved against the ``xml:base`` in force there, then
    the feed's own URL; lxml computes ``.base`` only for the rare relative link."""
    value = value.strip()
    if value.startswith(("http://", "https://")):
        return value
    return resolve(value, base, el.base)


def _audio(el: etree._Element, base: str | None) -> str | None:
    url = (el.get("url") or el.get("href") or "").strip()
    kind = (el.get("type") or "").lower()
    if url and (not kind or kind.startswith(("audio/", "video/"))):
        return _href(url, el, base)
    return None


def _transcript_link(el: etree._Element, base: str | None) -> TranscriptLink | None:
    """A ``<podcast:transcript url type>`` as a link, its type lower-cased without
    parameters (``text/html; charset=utf-8`` is ``text/html``)."""
    url = _href(el.get("url") or "", el, base)
    if url is None:
        return None
    kind = (el.get("type") or "").split(";", 1)[0].strip().lower()[:100]
    language = (el.get("language") or "").strip()[:35] or None
    return TranscriptLink(url=url[:MAX_TITLE], type=kind, language=language)


def _chapters_link(el: etree._Element, base: str | None) -> str | None:
    url = _href(el.get("url") or "", el, base)
    return url[:MAX_TITLE] if url else None


# Items of every RSS flavour (any namespace) and Atom entries: the elements read as the
# document streams in, so a large feed never holds its whole tree.
_ATOM_ENTRY = _ATOM + "entry"
_ATOM_ENTRIES = frozenset({_ATOM_ENTRY, _ATOM03 + "entry", "entry"})
_ENTRY_TAGS = ("{*}item", _ATOM_ENTRY, _ATOM03 + "entry", "entry")


def read_feed(
    data: bytes,
    source: str,
    options: dict[str, bool],
    *,
    lenient: bool = False,
    items: ItemHashes | None = None,
) -> ParsedSource | None:
    """RSS or Atom, read entry by entry while lxml parses (``options``: the parser's
    safety settings). None when the document is XML whose root is ``<html>``.

    Each entry is read as soon as it ends and then dropped with what came before it, so
    memory stays at one entry plus the records, not the document's tree.

    With ``lenient``, a document that is not well-formed is read as ``lenient.repair``
    makes it (HTML entities, bare ``&``, undeclared prefixes, bad bytes…), and one cut off
    gives the entries that ended before the cut; the result's ``lenient`` says what was
    wrong. What still fails is refused with the original document's first error.

    With ``items``, each entry carries the hash of its bytes, and one whose hash is in
    ``items.known`` is not read: it is listed in ``skipped`` (see ``item_hashes``).
    """
    try:
        return _read_feed(data, source, options, items)
    except etree.XMLSyntaxError as err:
        if not lenient:
            raise FeedParseError(source, f"malformed XML: {xml_reason(err)}") from err
        first = err
    return read_repaired(data, source, options, first)


def read_repaired(
    data: bytes,
    source: str,
    options: dict[str, bool],
    first: etree.XMLSyntaxError | None = None,
) -> ParsedSource | None:
    """``data`` read as ``lenient.repair`` makes it (see ``read_feed``); ``first``: the
    strict reader's error, the one a refusal names."""
    try:
        repaired = repair(data)
    except TooBroken as err:
        reason = xml_reason(first) if first is not None else str(err)
        raise FeedParseError(source, f"malformed XML: {reason}") from err
    cut = truncated(repaired.data)
    try:
        parsed = _stream_feed(repaired.data, repaired.data, source, options, None, cut_ok=cut)
    except etree.XMLSyntaxError as err:
        # The repaired document's line numbers are the original's (nearly): the reason
        # named is the original document's first error.
        reason = xml_reason(first or err)
        raise FeedParseError(source, f"malformed XML: {reason}") from err
    if parsed is None:
        return None
    notes = repaired.notes + (("cut off mid-document",) if cut else ())
    return dataclasses.replace(parsed, lenient=notes) if notes else parsed


def _read_feed(
    data: bytes, source: str, options: dict[str, bool], items: ItemHashes | None = None
) -> ParsedSource | None:
    return _stream_feed(data, data, source, options, items)


def _stream_feed(
    parsed: bytes,
    data: bytes,
    source: str,
    options: dict[str, bool],
    items: ItemHashes | None = None,
    *,
    cut_ok: bool = False,
) -> ParsedSource | None:
    """The feed ``parsed`` holds (``data`` itself, or a repair of it). Items are hashed
    from ``data``, as written. With ``cut_ok`` (the document is cut off), an error ends
    the feed after the entries read before it, when there are any."""
    events = etree.iterparse(io.BytesIO(parsed), events=("end",), tag=_ENTRY_TAGS, **options)
    stream: _Stream | None = None
    try:
        for _, el in events:
            if stream is None:
                stream = _Stream(el.getroottree().getroot(), source, feed_base(source))
                stream.hash_items(data, items)
            if not stream.add(el):
                break
    except (etree.ParserError, ValueError) as err:
        raise FeedParseError(source, f"malformed XML: {err}") from err
    except etree.XMLSyntaxError:
        if not cut_ok or stream is None or not stream.entries:
            raise
        return stream.result()
    if stream is not None and stream.hasher is not None:
        stream.hasher.finish()
        if stream.hasher.misaligned:
            # The spans did not line up with lxml's items: hashes (and skips) may belong
            # to other items, so none are used; read again as without hashes.
            return _read_feed(data, source, options)
    if stream is not None and (stream.entries or stream.skipped):
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
        return parse_rss(root, source, feed_base(source))
    if local == "feed":
        if tag not in _ATOM_FEEDS:
            raise FeedParseError(source, f"unsupported Atom version (root {tag!r})")
        return parse_atom(root, source, feed_base(source))
    if local == "html":
        return None
    raise FeedParseError(source, f"XML but not a feed (root element <{local or '?'}>)")


def xml_reason(err: etree.XMLSyntaxError) -> str:
    msg = " ".join(str(err.msg or err).split())
    return f"{msg} (line {err.lineno})" if err.lineno else msg


class _Stream:
    """Entries of one feed as they stream in: the same items and rules as ``parse_rss``
    and ``parse_atom`` (RSS items in <channel> or beside it, Atom entries in <feed>)."""

    def __init__(self, root: etree._Element, source: str, base: str | None) -> None:
        self.root = root
        self.source = source
        self.base = base
        tag = root.tag if isinstance(root.tag, str) else ""
        local = tag.rsplit("}", 1)[-1].lower()
        self.atom = tag in _ATOM_FEEDS
        if local == "feed" and not self.atom:
            raise FeedParseError(source, f"unsupported Atom version (root {tag!r})")
        self.kind = "atom" if self.atom else "rss"
        self.feed = local in ("rss", "rdf") or self.atom
        self.fields = _atom_fields(tag) if self.atom else _Fields(_RSS_FIELDS)
        self.entries: list[RawEntry] = []
        # Entries not read because their hash is known: (entries before it, stored guid).
        self.skipped: list[tuple[int, str]] = []
        self.hasher: ItemHasher | None = None
        self.show_title: str | None = None
        self.link: str | None = None
        self._titled = False
        # The element found to hold entries: every item has the same parent, whose own
        # checks (its tag, its place) need not be made again for each (lxml gives the
        # same proxy for a node while one is referenced).
        self._container: etree._Element | None = None

    def hash_items(self, data: bytes, items: ItemHashes | None) -> None:
        if items is not None and self.feed:
            self.hasher = ItemHasher(data, items, self.source, self.atom, MAX_ENTRIES)

    def add(self, el: etree._Element) -> bool:
        """Read one entry; False once no more are wanted."""
        hasher = self.hasher
        place = hasher.place(el) if hasher is not None else None
        parent = el.getparent()
        if not self.feed or parent is None or not self._holds_entries(parent, el):
            return True  # an item nested elsewhere, or a root that is no feed: left alone
        if not self._titled:
            # Everything before the first entry is the feed's head: its title is there.
            self._titled = True
            if not self.atom and _channel(self.root) is None:
                raise FeedParseError(self.source, "RSS document has no <channel>")
            self.show_title, self.link = self._head(parent)
            if hasher is not None:
                hasher.begin(self.root, self.show_title)
        digest = hasher.digest(place, parent) if hasher is not None else None
        guid = hasher.known.get(digest) if hasher is not None and digest is not None else None
        if guid is not None:
            self.skipped.append((len(self.entries), guid))
        else:
            self._read(el, digest)
        # Drop the entry and what came before it: nothing later refers back.
        el.clear(keep_tail=True)
        while el.getprevious() is not None:
            del parent[0]
        return len(self.entries) + len(self.skipped) < MAX_ENTRIES

    def _read(self, el: etree._Element, digest: str | None) -> None:
        try:
            entry = (
                _atom_entry(el, self.fields, self.base, digest)
                if self.atom
                else _rss_item(el, self.fields, self.base, digest)
            )
        except ValueError:
            # One item we cannot read must not cost the reader the whole feed.
            entry = None
        if entry is not None:
            self.entries.append(entry)

    def _holds_entries(self, parent: etree._Element, el: etree._Element) -> bool:
        if self.atom:
            return parent is self.root and el.tag in _ATOM_ENTRIES
        if el.tag in _ATOM_ENTRIES:
            return False
        if parent is self._container:
            return True
        if self._parent_holds_entries(parent):
            self._container = parent
            return True
        return False

    def _parent_holds_entries(self, parent: etree._Element) -> bool:
        if parent is self.root:
            return True
        ptag = parent.tag if isinstance(parent.tag, str) else ""
        return parent.getparent() is self.root and ptag.rsplit("}", 1)[-1].lower() == "channel"

    def _head(self, head: etree._Element) -> tuple[str | None, str | None]:
        """The show's title and link from the elements before (or after) the entries."""
        if self.atom:
            return _atom_head(head, self.base)
        channel = head if head is not self.root else _channel(self.root)
        if channel is None:
            return None, None
        return _rss_head(channel, self.base)

    def result(self) -> ParsedSource:
        if self.show_title is None or self.link is None:
            # A title after the entries (rare, but valid) is still in the tree.
            title, link = self._head(self.root)
            self.show_title = self.show_title or title
            self.link = self.link or link
        skipped = tuple(self.skipped)
        return _source(self.kind, self.show_title, self.entries, self.link, skipped)


def _rss_head(channel: etree._Element, base: str | None) -> tuple[str | None, str | None]:
    title: str | None = None
    link: str | None = None
    for el in channel:
        tag = el.tag
        if not isinstance(tag, str):
            continue
        local = tag.rsplit("}", 1)[-1].lower()
        if local == "title" and title is None:
            title = squash(_text(el))[:MAX_TITLE] or None
        elif local == "link" and link is None and (tag[0] != "{" or _is_rss_ns(tag)):
            link = _href(squash(_text(el))[:MAX_TITLE], el, base)
    return title, link


def _is_rss_ns(tag: str) -> bool:
    # RSS 1.0 puts <link> in its namespace; an atom:link rel="self" is not the show's page.
    return _ns_kind(tag[1:].partition("}")[0]) == "rss"


def _atom_head(feed: etree._Element, base: str | None) -> tuple[str | None, str | None]:
    title: str | None = None
    link: str | None = None
    ns = feed.tag[: -len("feed")] if isinstance(feed.tag, str) else _ATOM
    for el in feed:
        if el.tag == ns + "title" and title is None:
            title = squash(_atom_text(el))[:MAX_TITLE] or None
        elif (
            el.tag == ns + "link"
            and link is None
            and (el.get("rel") or "alternate").strip().lower() == "alternate"
        ):
            link = _href(el.get("href") or "", el, base)
    return title, link


def _channel(root: etree._Element) -> etree._Element | None:
    for child in root:
        if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1].lower() == "channel":
            return child
    return None


def parse_rss(root: etree._Element, source: str, base: str | None = None) -> ParsedSource:
    channel = _channel(root)
    if channel is None:
        raise FeedParseError(source, "RSS document has no <channel>")
    fields = _Fields(_RSS_FIELDS)
    show_title, link = _rss_head(channel, base)
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
                    entry = _rss_item(el, fields, base)
                except ValueError:
                    # One item we cannot read must not cost the reader the whole feed.
                    entry = None
                if entry is not None:
                    entries.append(entry)
    return _source("rss", show_title, entries, link)


def _source(
    kind: str,
    show_title: str | None,
    entries: list[RawEntry],
    link: str | None = None,
    skipped: tuple[tuple[int, str], ...] = (),
) -> ParsedSource:
    return ParsedSource(
        kind=kind, show_title=show_title, entries=tuple(entries), link=link, skipped=skipped
    )


@dataclasses.dataclass
class _ItemParts:
    """What an RSS item's children say, gathered in one pass over them."""

    texts: dict[str, str] = dataclasses.field(default_factory=dict)  # first value of each
    audio: str | None = None
    raw_link: str | None = None  # an <atom:link> href as written
    link_el: etree._Element | None = None
    atom_link: etree._Element | None = None
    transcripts: list[TranscriptLink] = dataclasses.field(default_factory=list)
    chapters: str | None = None
    written_chapters: tuple[Chapter, ...] = ()  # Podlove Simple Chapters in the item
    permalink: bool = False
    guid_el: etree._Element | None = None  # a guid said to be a permalink

    def take(self, child: etree._Element, name: str, base: str | None) -> None:
        if name == "enclosure" or name == "media":
            if self.audio is None:
                self.audio = _audio(child, base)
        elif name == "atom_link":
            if self.raw_link is None and (child.get("rel") or "alternate") == "alternate":
                self.raw_link = (child.get("href") or "").strip() or None
                self.atom_link = child
        elif name == "podcast_transcript" or name == "podcast_chapters":
            self.chapters = _podcast_link(
                child, name, self.transcripts, self.chapters, self.texts, base
            )
        elif name == "link":
            if self.link_el is None:
                self.link_el = child
        elif name == "psc_chapters":
            self.written_chapters = self.written_chapters or psc_chapters(child)
        elif name not in self.texts:
            self.texts[name] = _text(child)
            if name == "guid":
                said = (child.get("isPermaLink") or "").strip().lower()
                self.permalink = said != "false"
                self.guid_el = child if said == "true" else None

    @property
    def somewhere(self) -> bool:
        """Whether the item points anywhere: its audio or a page."""
        return self.audio is not None or self.link_el is not None or self.raw_link is not None

    def title(self) -> str:
        t = self.texts
        found = t.get("title") or t.get("itunes_title") or t.get("media_title") or t.get("dc_title")
        return squash(found or "")[:MAX_TITLE]

    def links(self, guid: str | None, base: str | None) -> tuple[str | None, str | None]:
        """The item's link as written and as resolved against ``base``."""
        raw_link, link = self.raw_link, None
        text_link = _rss_link(self.link_el)
        if text_link and self.link_el is not None:
            raw_link, link = text_link, _href(text_link, self.link_el, base)
        elif raw_link and self.atom_link is not None:
            link = _href(raw_link, self.atom_link, base)
        if raw_link is None and self.permalink and guid:
            # RSS 2.0: a guid that is a permalink is the item's URL when <link> is missing;
            # a relative one only when the feed says so (a bare id is no link).
            if guid.startswith(("http://", "https://")):
                raw_link = link = guid
            elif self.guid_el is not None:
                raw_link, link = guid, _href(guid, self.guid_el, base)
        return raw_link, link


def _rss_item(
    item: etree._Element, fields: _Fields, base: str | None = None, raw_hash: str | None = None
) -> RawEntry | None:
    parts = _ItemParts()
    for child in item:
        name = fields[child.tag]
        if name is not None:
            parts.take(child, name, base)
    texts = parts.texts
    title = parts.title()
    guid = squash(texts.get("guid", ""))[:MAX_TITLE] or None
    if not title and not guid and not parts.somewhere:
        return None
    raw_link, link = parts.links(guid, base)
    published = squash(texts.get("published") or texts.get("dc_date") or "")[:200] or None
    raw_description = texts.get("description") or texts.get("summary")
    raw_transcript = texts.get("content") or texts.get("podcast_transcript")
    # Many hosts write the same show notes in both, or the first part in the description.
    description, transcript = notes_texts(raw_description, raw_transcript)
    if guid is None:
        # From the link as the feed wrote it: resolving it must not renumber the episode.
        guid = _untitled_guid(title, parts.audio, raw_link) or stable_guid(
            raw_link, title, published
        )
    return _feed_entry(
        guid,
        title,
        description,
        transcript,
        published,
        squash(texts.get("duration", ""))[:100] or None,
        link,
        parts.audio[:MAX_TITLE] if parts.audio else None,
        tuple(parts.transcripts),
        parts.chapters,
        raw_hash,
        parts.written_chapters,
    )


def _rss_link(el: etree._Element | None) -> str:
    """An item's ``<link>``: its text, or (written Atom's way) its ``href``."""
    if el is None:
        return ""
    return squash(_text(el) or el.get("href") or "")[:MAX_TITLE]


def _untitled_guid(title: str, audio: str | None, link: str | None) -> str | None:
    """An item with neither title nor guid is the episode its audio is, else its page:
    the same id on every poll, whatever the rest of the item says."""
    if title:
        return None
    return (audio or link or "")[:MAX_TITLE] or None


def _podcast_link(
    el: etree._Element,
    field: str,
    transcripts: list[TranscriptLink],
    chapters: str | None,
    f: dict[str, str],
    base: str | None,
) -> str | None:
    """Collect a ``<podcast:transcript>`` (into ``transcripts``; its text, if any, into
    ``f`` as before) or a ``<podcast:chapters>``; the chapters URL, first one kept."""
    if field == "podcast_chapters":
        return chapters or _chapters_link(el, base)
    if "podcast_transcript" not in f:
        f["podcast_transcript"] = _text(el)
    if len(transcripts) < _MAX_TRANSCRIPT_LINKS:
        found = _transcript_link(el, base)
        if found is not None:
            transcripts.append(found)
    return chapters


def _atom_fields(root_tag: str) -> _Fields:
    return _Fields(_ATOM_FIELDS, "atom" if root_tag == "feed" else None)


def parse_atom(root: etree._Element, source: str, base: str | None = None) -> ParsedSource:
    fields = _atom_fields(root.tag if isinstance(root.tag, str) else "")
    show_title, link = _atom_head(root, base)
    entries: list[RawEntry] = []
    for el in root:
        tag = el.tag
        if tag in _ATOM_ENTRIES:
            if len(entries) >= MAX_ENTRIES:
                break
            try:
                entry = _atom_entry(el, fields, base)
            except ValueError:
                entry = None
            if entry is not None:
                entries.append(entry)
    return _source("atom", show_title, entries, link)


def _atom_entry(
    entry: etree._Element, fields: _Fields, base: str | None = None, raw_hash: str | None = None
) -> RawEntry | None:
    f: dict[str, str] = {}
    audio: str | None = None
    link: str | None = None
    raw_link: str | None = None
    transcripts: list[TranscriptLink] = []
    chapters: str | None = None
    for child in entry:
        field = fields[child.tag]
        if field is None:
            continue
        if field == "atom_link":
            rel = (child.get("rel") or "alternate").lower()
            href = (child.get("href") or "").strip()
            if rel == "enclosure" and audio is None:
                audio = _audio(child, base)
            elif rel == "alternate" and raw_link is None and href:
                raw_link, link = href, _href(href, child, base)
        elif field == "media":
            if audio is None:
                audio = _audio(child, base)
        elif field == "podcast_transcript" or field == "podcast_chapters":
            chapters = _podcast_link(child, field, transcripts, chapters, f, base)
        elif field not in f:
            f[field] = (
                _atom_text(child) if field in ("title", "description", "content") else _text(child)
            )
    title = squash(f.get("title") or f.get("media_title") or f.get("dc_title") or "")[:MAX_TITLE]
    guid = squash(f.get("guid", ""))[:MAX_TITLE] or None
    if raw_link is None and guid and guid[:8].lower().startswith(("http://", "https://")):
        # An id that is a web address is the entry's page when it names no other.
        raw_link = link = guid
    if not title and not guid and audio is None and raw_link is None:
        return None
    published = (
        squash(f.get("published") or f.get("updated") or f.get("created") or "")[:200] or None
    )
    description = f.get("description") or to_text(f.get("summary"))
    transcript = f.get("content") or to_text(f.get("podcast_transcript"))
    if guid is None:
        guid = _untitled_guid(title, audio, raw_link) or stable_guid(raw_link, title, published)
    return _feed_entry(
        guid,
        title,
        cap(description),
        cap(transcript),
        published,
        squash(f.get("duration", ""))[:100] or None,
        link[:MAX_TITLE] if link else None,
        audio[:MAX_TITLE] if audio else None,
        tuple(transcripts),
        chapters,
        raw_hash,
    )
