"""CDATA sections written as the character data they stand for, before libxml2 reads them.

libxml2 (2.14, as lxml ships it) reads a CDATA section a character at a time (a decode
and a copy for each, some 70 instructions a byte); character data outside one goes
through its loop over plain runs at a few. A podcast feed's ``content:encoded`` is nearly
always CDATA: in the bench feed that was half of lxml's whole parse. Our parser merges
CDATA into text nodes anyway (iterparse's ``strip_cdata``), so a section written as text
("&" and "<" escaped) gives lxml the same tree.

Only where that is certain; anything else stays as written:

- the bytes are read as UTF-8 (no BOM but UTF-8's, no other encoding declared), so every
  byte below 0x80 is that ASCII character wherever it stands;
- sections are found by a scan in document order that steps over comments, processing
  instructions and a doctype (one with an internal subset: nothing is rewritten), as
  the parser does;
- a section is rewritten only when what comes between the last markup before it and it
  is a whole start or end tag (attribute values quoted, without "<") and then text, or
  when it follows a section so rewritten: element content, never an attribute value or
  the prolog; and only when it holds more than whitespace (the one text allowed outside
  the root).

The caller reads the bytes as written whenever the rewritten ones fail: errors, their
codes and their lines stay the original's. A rewritten document that parses is one whose
original parses to the same tree: each rewritten section sits where the parser reads
content, its characters were checked as character data, and nothing else changed.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["cdata_as_text"]

_OPEN = b"<![CDATA["
_ENCODING = re.compile(
    rb"""[ \t\r\n]*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})"""
)
_UTF8 = frozenset({b"utf-8", b"utf8"})
# A start or end tag without attributes, and nothing after it.
_PLAIN_TAG = re.compile(rb"</?[A-Za-z_][\w:.-]*>")
# A whole start or end tag, then text: the parser is in element content after it.
_TAG_THEN_TEXT = re.compile(
    rb"</?[^\s<>/\"'=!?][^\s<>/\"'=]*"
    rb"(?:\s+[^\s<>/\"'=]+\s*=\s*(?:\"[^\"<]*\"|'[^'<]*'))*\s*/?>[^<]*"
)


def _utf8(data: bytes) -> bool:
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    elif data[:1] not in (b"<", b" ", b"\t", b"\r", b"\n"):
        return False  # another BOM, or bytes libxml2 may take for UTF-16 or EBCDIC
    m = _ENCODING.match(data, 0, 512)
    return m is None or m.group(1).lower() in _UTF8


def cdata_as_text(data: bytes) -> bytes | None:
    """``data`` with its CDATA sections in element content written as text; None when
    there is none, or the document is not one this can be sure of (see the module)."""
    if data.find(_OPEN) < 0 or not _utf8(data):
        return None
    find = data.find
    pieces: list[bytes] = []
    done = 0  # data[:done] is in pieces
    known = 0  # where the last construct the scan knows ends: only tags and text since
    content = False  # that construct is a section in element content
    pi = _find(data, b"<?", 1, 0)
    pos = 0
    while (bang := _find(data, b"<!", 1, pos)) >= 0:
        if 0 <= pi < bang:
            end = find(b"?>", pi + 2)
            if end < 0:
                break
            pos = known = end + 2
            content = False
        elif data[bang : bang + 9] == _OPEN:
            end = _find(data, b"]]>", 0, bang + 9)
            if end < 0:
                break
            content = _in_content(data, known, bang, content)
            body = data[bang + 9 : end]
            if content and body.strip(b" \t\r\n"):
                pieces.append(data[done:bang])
                # (Not `b"&" in body`: bytes' `in` tries the operand as an int first,
                # and the TypeError it formats costs more than the replace.)
                pieces.append(body.replace(b"&", b"&amp;").replace(b"<", b"&lt;"))
                done = end + 3
            pos = known = end + 3
        else:
            pos = _skip(data, bang)
            if pos < 0:
                return None if pos == -2 else _joined(pieces, data, done)
            known = pos
            content = False
        if 0 <= pi < pos:
            pi = _find(data, b"<?", 1, pos)
    return _joined(pieces, data, done)


def _joined(pieces: list[bytes], data: bytes, done: int) -> bytes | None:
    if not pieces:
        return None
    pieces.append(data[done:])
    return b"".join(pieces)


def _skip(data: bytes, bang: int) -> int:
    """Where the comment or doctype at ``bang`` ends; -1 if it does not, -2 for markup
    that is neither, or a doctype with an internal subset (nothing is rewritten then)."""
    if data.startswith(b"<!--", bang):
        end = data.find(b"-->", bang + 4)
        return end + 3 if end >= 0 else -1
    close = data.find(b">", bang)
    if not data.startswith(b"<!DOCTYPE", bang) or close < 0 or data.find(b"[", bang, close) >= 0:
        return -2  # an internal subset, or markup only a DTD holds
    return close + 1


def _find(data: bytes, needle: bytes, rare: int, start: int) -> int:
    """``data.find(needle, start)``, where ``needle[rare]`` is a byte a feed seldom holds
    ("!" of "<!", "]" of "]]>", "?" of "<?"): a search for one byte runs several times
    as fast as one for a string. The first such byte that is not part of the needle
    hands the rest to the string search, so text full of them costs no more than it."""
    at = data.find(needle[rare], start + rare)
    if at < 0:
        return -1
    first = at - rare
    if data[first : first + len(needle)] == needle:
        return first
    return data.find(needle, first + 1)


def _in_content(data: bytes, known: int, at: int, content: bool) -> bool:
    """Whether the section at ``at`` is in element content: after ``known`` (the end of
    the last construct the scan knows, a section in content when ``content``) there are
    only tags and text, the last of them a whole tag followed by text."""
    tag = data.rfind(b"<", known, at)
    if tag < 0:
        return content
    if data[at - 1] == 62 and _PLAIN_TAG.fullmatch(data, tag, at) is not None:
        return True  # "<content:encoded>" right before it: most sections
    return _TAG_THEN_TEXT.fullmatch(data, tag, at) is not None
