"""A feed that is not well-formed XML, repaired the way feedparser and podcast apps read it.

``repair(data)`` rewrites the document's text so the one strict reader (``feeds.read_feed``)
reads it: every rule of that reader, and its safety settings, apply unchanged. Repairing
the text rather than falling back to a liberal parser keeps one set of reading rules for
every feed, costs one linear pass (regular expressions with no backtracking across the
document, ``str.find`` scans), and never builds a second kind of tree.

What is repaired, each noted in ``Repaired.notes`` (what the show's status says):

- bytes invalid in the declared encoding (UTF-8 unless declared): read as Windows-1252;
- anything before the XML declaration (or the first ``<``): skipped;
- a ``<!DOCTYPE …>``: dropped, never processed — no DTD is loaded, no entity it declares
  is expanded (the XXE and entity-bomb documents read their references as text); the HTML
  entities Netscape's RSS 0.91 DTD declares are read as HTML's;
- HTML named entities (``&nbsp;``, ``&rsquo;``): the characters they name; an unknown one,
  and a bare ``&``, read as text;
- prefixes used without their ``xmlns`` declaration: the well-known ones bound to their
  namespaces, any other to a placeholder so the element still reads;
- C0 control characters, raw or referred to (``&#1;``): deleted, a form feed read as a
  space (as ``html.unescape`` reads a reference to one in show notes); a reference to any
  other code point XML forbids (a surrogate, U+FFFE, U+FFFF, one above U+10FFFF, NUL):
  deleted too.

A document cut off is not repaired here: ``feeds.read_feed`` keeps the items that ended
before the cut (``truncated``).
"""

from __future__ import annotations

import codecs
import itertools
import re
from dataclasses import dataclass
from html.entities import html5

__all__ = [
    "KNOWN_PREFIXES",
    "Repaired",
    "TooBroken",
    "has_html_entities",
    "repair",
    "summary",
    "truncated",
]

# The namespaces feeds use by prefix without declaring them (the prefixes as podcast apps
# and feedparser bind them).
KNOWN_PREFIXES = {
    "itunes": "http://www.itunes.com/dtds/podcast-1.0.dtd",
    "podcast": "https://podcastindex.org/namespace/1.0",
    "content": "http://purl.org/rss/1.0/modules/content/",
    "media": "http://search.yahoo.com/mrss/",
    "googleplay": "http://www.google.com/schemas/play-podcasts/1.0",
    "atom": "http://www.w3.org/2005/Atom",
    "dc": "http://purl.org/dc/elements/1.1/",
    "dcterms": "http://purl.org/dc/terms/",
    "psc": "http://podlove.org/simple-chapters",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "sy": "http://purl.org/rss/1.0/modules/syndication/",
    "slash": "http://purl.org/rss/1.0/modules/slash/",
    "wfw": "http://wellformedweb.org/CommentAPI/",
    "fh": "http://purl.org/syndication/history/1.0",
    "spotify": "http://www.spotify.com/ns/rss",
    "rawvoice": "http://www.rawvoice.com/rawvoiceRssModule/",
    "feedburner": "http://rssnamespace.org/feedburner/ext/1.0",
}
_UNKNOWN_PREFIX = "urn:x-digestbot:undeclared:"

# "&" then (optionally) a reference: numeric, or a name ended by ";". Bounded repeats, so
# each match is constant work.
# A "&" that starts no reference: text. Replaced by a constant, so the scan stays in C.
_BARE_AMP = re.compile(rb"&(?!#?[A-Za-z0-9]{1,41};)")
_AMP = re.compile(rb"&")
# A reference XML does not read as written: any name but its five, a numeric one it may
# refuse (&#0;, &#X41;, one to a code point XML forbids: a control character, &#1;, &#x0B;;
# a surrogate, &#xD800;, &#55296;; U+FFFE, U+FFFF; one above U+10FFFF, &#x110000;,
# &#1114112;). The common ones (&amp;, &#8217;) are not matched at all.
_FIX_REF = re.compile(
    rb"&(?!(?:amp|lt|gt|quot|apos"
    # Decimal: to a control (1-8, 11, 12, 14-31), a surrogate (55296-57343), 65534 or
    # 65535, or above 1114111 (seven digits; eight and more are not let through at all).
    rb"|#(?!(?:[1-8]|1[124-9]|2[0-9]|3[01]"
    rb"|5(?:5(?:29[6-9]|[3-9][0-9]{2})|6[0-9]{3}|7(?:[0-2][0-9]{2}|3(?:[0-3][0-9]|4[0-3])))"
    rb"|6553[45]|[2-9][0-9]{6}"
    rb"|1(?:[2-9][0-9]{5}|1(?:[2-9][0-9]{4}|1(?:[5-9][0-9]{3}|4(?:[2-9][0-9]{2}"
    rb"|1(?:[2-9][0-9]|1[2-9]))))));)[1-9][0-9]{0,6}"
    # Hex, any leading zeros: a control, a surrogate, FFFE or FFFF, or above 10FFFF.
    rb"|#x(?!0*(?:[0-8bBcCeEfF]|1[0-9a-fA-F]|[dD][89a-fA-F][0-9a-fA-F]{2}|[fF]{3}[eEfF]"
    rb"|1[1-9a-fA-F][0-9a-fA-F]{4}|[2-9a-fA-F][0-9a-fA-F]{5});)[0-9a-fA-F]{1,6});)"
    rb"(#?[A-Za-z0-9]{1,41});"
)
_NAMED_REF = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos);)[A-Za-z][A-Za-z0-9]{0,40};")
_XML_DECL = re.compile(rb"<\?xml[^>]{0,400}\?>")
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]{0,400}encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})""")
# A prefix in a tag name, or in an attribute name.
_TAG_PREFIX = re.compile(rb"</?([A-Za-z_][\w.-]{0,40}):[A-Za-z_]")
# An attribute's prefix is looked for back from its ":" (a scan from every whitespace of
# the document for a name and a colon costs more than the rest of the repair).
_ATTR_COLON = re.compile(rb":[\w.-]{1,80}\s*=")
_ATTR_PREFIX = re.compile(rb"\s([A-Za-z_][\w.-]{0,40})\Z")
_PREFIX_DECL = re.compile(rb"""xmlns:([A-Za-z_][\w.-]{0,40})\s*=""")
_ELEMENT = re.compile(rb"<[A-Za-z]")
_START_TAG = re.compile(rb"<([A-Za-z_][\w.:-]{0,100})")
_REPLACEMENT = "\ufffd".encode()
_CONTROLS = bytes(range(0x00, 0x09)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
# A control character is deleted, a form feed read as a space: as text.without_controls
# (HTML's reading of a reference to one), so a feed reads alike whichever way it spells it.
_FORM_FEED_AS_SPACE = bytes.maketrans(b"\x0c", b" ")
_DELETED_CONTROLS = _CONTROLS.replace(b"\x0c", b"")
# The other characters XML 1.0 does not allow, as UTF-8 (surrogates cannot be valid UTF-8):
# U+FFFE and U+FFFF, read as U+FFFD.
_NOT_XML_NONCHARACTER = re.compile(rb"\xef\xbf[\xbe\xbf]")
_UTF8_BOM = codecs.BOM_UTF8
# UTF-8 checked a piece at a time: no str of the whole document is made to validate it.
_CHECK_PIECE = 1 << 20
# A byte UTF-8 could not decode (surrogateescape: U+DC80..U+DCFF) → its Windows-1252
# character; the five bytes Windows-1252 leaves undefined are U+FFFD.
_CP1252 = {
    0xDC00 + b: bytes([b]).decode("cp1252", "strict") if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
    else "\ufffd"
    for b in range(0x80, 0x100)
}  # fmt: skip
_HIGH = bytes(range(0x80, 0x100))
_ROOT_END = re.compile(rb"</(?:[\w.-]{1,40}:)?(?:rss|feed|rdf|RDF)\s*>")


@dataclass(frozen=True)
class Repaired:
    """The repaired document (UTF-8, declared so) and what was wrong with it."""

    data: bytes
    notes: tuple[str, ...]


class _Notes(dict[str, None]):
    """What was repaired, in order, each once; a few dozen at most (a hostile document
    can hold a million different unknown entities)."""

    def append(self, note: str) -> None:
        if len(self) < 24:
            self[note] = None


def summary(notes: tuple[str, ...]) -> str | None:
    """What a lenient read found, short enough for a status line; None for none."""
    if not notes:
        return None
    return ", ".join(notes[:3]) + ("…" if len(notes) > 3 else "")


def has_html_entities(data: bytes) -> bool:
    """Whether ``data`` refers to an HTML entity XML does not predefine (``&eacute;``): a
    document with a DOCTYPE reads those as unexpanded references, not as errors."""
    return _NAMED_REF.search(data) is not None


class TooBroken(ValueError):
    """More to repair than a feed with a few flaws has: junk, not read leniently."""


def repair(data: bytes) -> Repaired:
    """``data`` made well-formed; ``TooBroken`` for junk (see ``_within_budget``). Works on
    UTF-8 bytes throughout: a document's text as ``str`` would be up to four times its size."""
    notes = _Notes()
    text = _utf8(data, notes)
    _within_budget(text)
    text = _skip_prolog_junk(text, notes)
    text = _drop_doctype(text, notes)
    text = _references(text, notes)
    text = _declare_prefixes(text, notes)
    if _has_control_characters(text):
        notes.append("control characters")
        text = _NOT_XML_NONCHARACTER.sub(
            _REPLACEMENT, text.translate(_FORM_FEED_AS_SPACE, _DELETED_CONTROLS)
        )
    return Repaired(text, tuple(notes))


def _within_budget(text: bytes) -> None:
    """Refuse a document with more references to repair than one in 64 characters (plus
    10,000): every repair costs a Python call, and a document of nothing but "&" would
    cost seconds. Counted with C scans that stop at the limit, so junk is refused fast."""
    limit = len(text) // 64 + 10_000
    for pattern in (_BARE_AMP, _FIX_REF):
        if next(itertools.islice(pattern.finditer(text), limit, None), None) is not None:
            raise TooBroken("too many errors to read leniently")


def truncated(data: bytes) -> bool:
    """Whether the document stops before its root element ends: cut off (junk after a
    complete document is not a cut, and still refused)."""
    return _ROOT_END.search(data) is None


def _utf8(data: bytes, notes: _Notes) -> bytes:
    """``data`` as UTF-8 bytes, without a byte order mark."""
    encoding = "utf-8"
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                      (codecs.BOM_UTF16_BE, "utf-16")):  # fmt: skip
        if data.startswith(bom):
            encoding = name
            break
    else:
        m = _XML_ENCODING.match(data[:512])
        if m:
            encoding = m.group(1).decode("ascii")
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        codec = "utf-8"
    if codec != "utf-8" and codec != "utf-8-sig":
        try:
            return data.decode(codec).lstrip("\ufeff").encode("utf-8")
        except UnicodeDecodeError:
            notes.append(f"bytes invalid in {encoding}, read as Windows-1252")
            return data.decode("cp1252", "replace").encode("utf-8")
    data = data.removeprefix(_UTF8_BOM)
    if _valid_utf8(data):
        return data
    notes.append("bytes invalid in UTF-8, read as Windows-1252")
    if _mostly_not_utf8(data[:_CHECK_PIECE]):
        # A document in another encoding, read as Windows-1252 throughout (as feedparser
        # and browsers do); else UTF-8 with a few strays.
        return data.decode("cp1252", "replace").lstrip("\ufeff").encode("utf-8")
    return data.decode("utf-8", "surrogateescape").translate(_CP1252).encode("utf-8")


def _mostly_not_utf8(sample: bytes) -> bool:
    """Whether most of the high bytes of ``sample`` (the document's first megabyte) are
    not part of a UTF-8 character."""
    # Valid characters encode back to their bytes; the escaped ones are dropped.
    invalid = len(sample) - len(sample.decode("utf-8", "surrogateescape").encode("utf-8", "ignore"))
    return len(sample) - len(sample.translate(None, _HIGH)) - invalid < invalid


def _valid_utf8(data: bytes) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(data), _CHECK_PIECE):
            decoder.decode(data[at : at + _CHECK_PIECE])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _skip_prolog_junk(text: bytes, notes: _Notes) -> bytes:
    start = text.find(b"<?xml", 0, 8192)
    if start < 0 or _ELEMENT.search(text, 0, start):
        start = text.find(b"<")
    if start > 0:
        if text[:start].strip():
            notes.append("text before the XML declaration")
        text = text[start:]
    m = _XML_DECL.match(text)
    if m:
        # The text is UTF-8 now, whatever the document declared.
        text = b'<?xml version="1.0" encoding="UTF-8"?>' + text[m.end() :]
    return text


def _drop_doctype(text: bytes, notes: _Notes) -> bytes:
    """The document without its DOCTYPE (and internal subset): nothing in it is read."""
    i = 0
    while True:
        i = text.find(b"<!", i)
        if i < 0 or text.startswith(b"<!DOCTYPE", i) or text.startswith(b"<!doctype", i):
            break
        if not text.startswith(b"<!--", i):
            return text
        end = text.find(b"-->", i)
        if end < 0:
            return text
        i = end + 3
    if i < 0:
        return text
    close = text.find(b">", i)
    subset = text.find(b"[", i)
    if 0 <= subset < close:
        bracket = text.find(b"]", subset)
        close = text.find(b">", bracket) if bracket >= 0 else -1
    if close < 0:
        return text
    if b"[" in text[i:close]:
        notes.append("a DOCTYPE with declarations, not read")
    return text[:i] + text[close + 1 :]


def _references(text: bytes, notes: _Notes) -> bytes:
    """Entity references outside CDATA sections made XML: HTML's named ones as characters,
    anything else after ``&`` as text. Comments are dropped (one with ``--`` inside is
    an error, and none says anything a reader reads)."""
    out: list[bytes | memoryview] = []
    whole = memoryview(text)  # slices of it copy nothing
    i = 0
    cdata = text.find(b"<![CDATA[")
    comment = text.find(b"<!--")
    while i < len(text):
        if 0 <= cdata < i:
            cdata = text.find(b"<![CDATA[", i)
        if 0 <= comment < i:
            comment = text.find(b"<!--", i)
        starts = [n for n in (cdata, comment) if n >= 0]
        start = min(starts) if starts else len(text)
        out.append(_fix_references(whole[i:start], notes))
        if start == len(text):
            break
        if start == cdata:
            end = text.find(b"]]>", start)
            end = len(text) if end < 0 else end + 3
            out.append(whole[start:end])
        else:
            end = text.find(b"-->", start + 4)
            end = len(text) if end < 0 else end + 3
        i = end
    return b"".join(out)


def _fix_references(chunk: memoryview, notes: _Notes) -> bytes | memoryview:
    if _AMP.search(chunk) is None:
        return chunk
    fixed: bytes | memoryview = chunk
    if _BARE_AMP.search(chunk):
        notes.append("bare & in text")
        fixed = _BARE_AMP.sub(b"&amp;", chunk)
    return _FIX_REF.sub(lambda m: _reference(m, notes), fixed)


def _reference(match: re.Match[bytes], notes: _Notes) -> bytes:
    name = match.group(1).decode("ascii")
    if name[0] == "#":
        try:
            code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
        except ValueError:
            notes.append(f"invalid character reference &{name};")
            return f"&amp;{name};".encode()
        if code in (9, 10, 13) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or (
            0x10000 <= code <= 0x10FFFF
        ):
            return f"&#{code};".encode()
        notes.append(f"invalid character reference &{name};")
        # A code point XML forbids: deleted, as a control character is (_DELETED_CONTROLS).
        return b" " if code == 0x0C else b""
    value = html5.get(name + ";")
    if value is None:
        notes.append(f"unknown entity &{name};")
        return f"&amp;{name};".encode()
    notes.append(f"undeclared entity &{name};")
    return value.replace("&", "&amp;").replace("<", "&lt;").encode()


def _declare_prefixes(text: bytes, notes: _Notes) -> bytes:
    used = {p.decode() for p in _TAG_PREFIX.findall(text)} | _attribute_prefixes(text)
    used.discard("xmlns")
    used.discard("xml")
    missing = sorted(used - {m.group(1).decode() for m in _PREFIX_DECL.finditer(text)})
    if not missing:
        return text
    root = _root_start(text)
    if root is None:
        return text
    for prefix in missing:
        notes.append(f"undeclared prefix {prefix}:")
    declarations = "".join(
        f' xmlns:{p}="{KNOWN_PREFIXES.get(p.lower(), _UNKNOWN_PREFIX + p)}"' for p in missing
    )
    whole = memoryview(text)
    return b"".join((whole[:root], declarations.encode(), whole[root:]))


def _attribute_prefixes(text: bytes) -> set[str]:
    found = set()
    for colon in _ATTR_COLON.finditer(text):
        at = colon.start()
        m = _ATTR_PREFIX.search(text, max(0, at - 42), at)
        if m:
            found.add(m.group(1).decode())
    return found


def _has_control_characters(text: bytes) -> bool:
    """Whether ``text`` holds a character XML 1.0 does not allow (``_CONTROLS``, U+FFFE,
    U+FFFF),
    checked a piece at a time by deleting the C0 controls (faster than a scan for them)."""
    if b"\xef\xbf\xbe" in text or b"\xef\xbf\xbf" in text:
        return True
    for at in range(0, len(text), _CHECK_PIECE):
        piece = text[at : at + _CHECK_PIECE]
        if len(piece.translate(None, _CONTROLS)) != len(piece):
            return True
    return False


def _root_start(text: bytes) -> int | None:
    """Where the root's attributes begin (just after its name)."""
    i = 0
    while True:
        i = text.find(b"<", i)
        if i < 0:
            return None
        if text.startswith(b"<?", i):
            end = text.find(b"?>", i)
            i = end + 2 if end >= 0 else -1
        elif text.startswith(b"<!--", i):
            end = text.find(b"-->", i)
            i = end + 3 if end >= 0 else -1
        elif text.startswith(b"<!", i):
            end = text.find(b">", i)
            i = end + 1 if end >= 0 else -1
        else:
            m = _START_TAG.match(text, i)
            return m.end() if m else None
        if i < 0:
            return None
