"""Parsing: bytes of a feed (RSS, Atom, JSON Feed) or page → ``ParsedSource``; detection by
content, not name.

CONTRACT: ``parse_bytes(data: bytes, source: str, content_type: str | None = None, *, items:
ItemHashes | None = None) -> ParsedSource`` raising ``FeedParseError``; then
``digests.extract.episodes.build_episodes(parsed, show, repo)``. ``content_type`` only supplies a
charset: a server's label never overrides what the bytes are. ``items``: hash each RSS item
or Atom entry, and skip those whose hash is known (``digests.parse.item_hashes``).
"""

from __future__ import annotations

import codecs
import re

from lxml import etree

from digests.errors import FeedParseError
from digests.models import ParsedSource
from digests.parse.feeds import read_feed, read_repaired
from digests.parse.item_hashes import ItemHashes
from digests.parse.jsonfeed import looks_json_feed, read_json_feed
from digests.parse.lenient import has_html_entities
from digests.parse.pages import read_html, read_text_layout, text_page_entry
from digests.parse.text import html_parser
from digests.redact import without_userinfo

__all__ = ["ItemHashes", "parse_bytes"]

_SNIFF = 16_384
_LEADING_WS = re.compile(rb"[ \t\r\n]*")
_TAG_NAME = re.compile(r"([A-Za-z_][\w.:-]{0,100})")
_HTML_DOCTYPE = re.compile(r"<!doctype\s+html", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_DOCTYPE = re.compile(rb"<!DOCTYPE", re.I)
_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})""")

_HTML_ROOTS = frozenset({"html", "head", "body", "div", "p", "main", "article", "section"})
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"PK\x03\x04", "a zip archive"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"ID3", "an MP3 file"),
    (b"OggS", "an Ogg file"),
)

# No entity expansion, no DTD, no network, no huge text nodes: no XXE, no bombs. Not
# collect_ids=False: with it libxml2 tries to fetch an external DTD ("failed to load …
# network entity"), which old RSS 0.91 feeds all declare.
_XML_OPTIONS = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "huge_tree": False,
}


def parse_bytes(
    data: bytes,
    source: str,
    content_type: str | None = None,
    *,
    items: ItemHashes | None = None,
) -> ParsedSource:
    """Read a podcast feed (RSS, Atom) or one episode page (HTML, plain text)."""
    blank = _LEADING_WS.match(data)
    if not data or (blank is not None and blank.end() == len(data)):
        raise FeedParseError(source, "the document is empty")
    encoding = _bom_encoding(data)
    if encoding is None:
        _refuse_binary(data, source)
    head = _decode(data[:_SNIFF], encoding or "utf-8", errors="replace").lstrip()
    if head.startswith("<"):
        root_name = _root_name(head)
        if root_name in ("rss", "rdf", "feed"):
            return _parse_feed(data, source, items)
        if root_name in _HTML_ROOTS or _HTML_DOCTYPE.search(head[:2048]):
            return _parse_html(_text(data, encoding, content_type), source)
        try:
            return _parse_feed(data, source, items)
        except FeedParseError as err:
            if "malformed" not in err.reason:
                raise
        # Not well-formed and not a feed root: HTML that skipped <html>, or junk.
        return _parse_html(_text(data, encoding, content_type), source)
    if not head.startswith("{") and _feed_after_junk(head):
        # Text before the XML declaration (a stray line from a CMS): read leniently.
        return _parse_feed(data, source, items)
    if head.startswith("{"):
        text = _text(data, encoding, content_type)
        parsed = read_json_feed(text, source, claimed=looks_json_feed(head))
        if parsed is not None:
            return parsed
        return _parse_text(text, source)
    return _parse_text(_text(data, encoding, content_type), source)


def _feed_after_junk(head: str) -> bool:
    start = head.find("<?xml", 0, 1024)
    if start < 0:
        start = head.find("<", 0, 1024)
    return start > 0 and _root_name(head[start:]) in ("rss", "rdf", "feed")


def _bom_encoding(data: bytes) -> str | None:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    return None


def _refuse_binary(data: bytes, source: str) -> None:
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise FeedParseError(source, f"this is {what}, not a feed or episode page")
    head = data[:1024]
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 13))
    if b"\x00" in head or controls > len(head) // 10:
        raise FeedParseError(source, "binary data, not a feed or episode page")


def _root_name(head: str) -> str:
    """Local name of the first start tag, skipping PIs, comments and a doctype (linear)."""
    i = 0
    while True:
        i = head.find("<", i)
        if i < 0:
            return ""
        if head.startswith("<?", i):
            end = head.find("?>", i)
            i = end + 2 if end >= 0 else -1
        elif head.startswith("<!--", i):
            end = head.find("-->", i)
            i = end + 3 if end >= 0 else -1
        elif head.startswith("<!", i):
            close = head.find(">", i)
            subset = head.find("[", i)
            if 0 <= subset < close:
                # An internal subset holds '>' of its own: skip to "]" first.
                bracket = head.find("]", subset)
                close = head.find(">", bracket) if bracket >= 0 else -1
            i = close + 1 if close >= 0 else -1
        else:
            m = _TAG_NAME.match(head, i + 1)
            return m.group(1).rsplit(":", 1)[-1].lower() if m else ""
        if i < 0:
            return ""


def _decode(data: bytes, encoding: str, errors: str = "strict") -> str:
    return data.decode(encoding, errors)


def _text(data: bytes, bom: str | None, content_type: str | None) -> str:
    """Bytes → str: BOM, then the server's charset, then the document's own, then UTF-8."""
    candidates: list[str] = []
    if bom:
        candidates.append(bom)
    if content_type:
        m = _CHARSET.search(content_type.encode("latin-1", "replace"))
        if m:
            candidates.append(m.group(1).decode("ascii"))
    m = _XML_ENCODING.match(data[:512]) or _CHARSET.search(data[:4096])
    if m:
        candidates.append(m.group(1).decode("ascii"))
    candidates.append("utf-8")
    for name in candidates:
        try:
            return data.decode(name)
        except (LookupError, UnicodeDecodeError):
            continue
    # Windows-1252 is what undeclared non-UTF-8 text on the web almost always is.
    return data.decode("cp1252", "replace")


def _parse_feed(data: bytes, source: str, items: ItemHashes | None = None) -> ParsedSource:
    if _DOCTYPE.search(data[:_SNIFF]) and has_html_entities(data):
        # Well-formed with an external DTD (Netscape's RSS 0.91 one), but never loaded:
        # its HTML entities would stay unexpanded references. Read them as HTML's.
        parsed = read_repaired(data, source, _XML_OPTIONS)
    else:
        parsed = read_feed(data, source, _XML_OPTIONS, lenient=True, items=items)
    if parsed is None:
        # XHTML served as XML: an episode page after all.
        return _parse_html(_text(data, _bom_encoding(data), None), source)
    return parsed


def _page_url(source: str) -> str | None:
    """The page's own URL, the episode link when the page names none: shown in Slack, so
    without the credentials the fetch used."""
    return without_userinfo(source) if source.startswith(("http://", "https://")) else None


def _parse_html(markup: str, source: str) -> ParsedSource:
    markup = _XML_DECL.sub("", markup, count=1)
    try:
        root = etree.fromstring(markup, html_parser())
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as err:
        raise FeedParseError(source, f"unreadable HTML: {err}") from err
    if root is None:
        raise FeedParseError(source, "the HTML document is empty")
    url = _page_url(source)
    show, entry, feed_link = read_html(root, url)
    if entry is None:
        hint = f"; it links the feed {feed_link}" if feed_link else ""
        raise FeedParseError(source, f"HTML page without a podcast episode{hint}")
    return ParsedSource(kind="page-html", show_title=show, entries=(entry,))


def _parse_text(text: str, source: str) -> ParsedSource:
    page = read_text_layout(text)
    if not page.is_episode:
        raise FeedParseError(
            source,
            "not a feed or episode page (no XML or HTML, and no episode title with a "
            "date, duration or transcript)",
        )
    url = _page_url(source)
    show, entry = text_page_entry(page, url)
    return ParsedSource(kind="page-text", show_title=show, entries=(entry,))
