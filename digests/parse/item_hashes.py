"""Raw item hashes: an item whose bytes hash as on the last poll is not read again.

A feed answered 200 without validators is usually the same document as last time, and
the text work for each item (HTML to text, sentences, PR mentions, the record) is most
of a parse. Each RSS item or Atom entry is hashed from its own bytes as they stand in the
document, salted with everything outside those bytes that its episode depends on (the
caller's show and repo, the feed's location, the show's title, the declarations in scope
on its container and the document's encoding, and ``VERSION``). The store keeps the hash
with the episode; on the next read an item whose hash is known is skipped before any of
that work, so a re-read costs lxml's tokenising plus hashing.

The spans come from one regular-expression pass over the bytes, paired start to end and
listed in the order the end tags come — the order lxml reports the elements. The pass
sees the names only as written (``<item``, ``<entry``, no prefix); anything it cannot
line up with what lxml reports — a prefixed or self-closing item, an ``<item>`` inside
CDATA or a comment, an encoding that is not ASCII-compatible — is caught by the count or
the pairing, and the feed is then read as if no hash were known (see ``ItemHasher``).
Pure: bytes and mappings in, strings out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

# Bump when parsing or extraction changes what an unchanged item becomes: every stored
# hash then misses once, and each item is read (and, if it now reads differently, stored)
# again.
VERSION = "1"

_SPANS = {
    "item": re.compile(rb"<(/?)item[\s/>]"),
    "entry": re.compile(rb"<(/?)entry[\s/>]"),
}


@dataclass(frozen=True)
class ItemHashes:
    """What a parse needs to hash items: ``salt`` (what the caller's extraction depends
    on: show, repo) and ``known``, the hashes stored with the show's episodes (hash →
    guid)."""

    salt: str
    known: Mapping[str, str] = field(default_factory=dict)


def item_spans(data: bytes, name: str, limit: int) -> list[tuple[int, int]] | None:
    """Byte spans of the elements written ``<name …>…</name>``, in end-tag order; None when
    the tags do not pair up or there are ``limit`` or more (the parse stops early there,
    and an early stop could not check the count)."""
    spans: list[tuple[int, int]] = []
    starts: list[int] = []
    for m in _SPANS[name].finditer(data):
        if m.group(1):
            if not starts:
                return None
            spans.append((starts.pop(), m.end()))
        else:
            starts.append(m.start())
    if starts or len(spans) >= limit:
        return None  # a self-closing one (or a stray start tag): nothing lines up
    return spans


def _context(el: etree._Element) -> bytes:
    """What an element's children mean besides their own bytes: its tag, the namespace
    declarations in scope and its attributes (``xml:base`` among them)."""
    attrs = sorted(el.attrib.items())
    nsmap = sorted((k or "", v) for k, v in el.nsmap.items())
    return repr((el.tag, nsmap, attrs)).encode()


class ItemHasher:
    """One parse's item hashes: each element lxml reports is matched to its span by its
    place among the elements of that name, and hashed once the feed's head is known.

    ``misaligned`` says the spans and lxml's elements did not line up (more elements than
    spans, or fewer at the end): the hashes given may then be of other items' bytes, so
    the caller reads the feed again without hashes.
    """

    def __init__(self, data: bytes, items: ItemHashes, source: str, atom: bool, limit: int):
        self.known = items.known
        self._name = "entry" if atom else "item"
        self._atom_tag = "{http://www.w3.org/2005/Atom}entry"
        self._atom = atom
        self._spans = item_spans(data, self._name, limit)
        self._view = memoryview(data)
        self._seen = 0
        self._base = hashlib.blake2b(digest_size=16)
        self._base.update(f"{VERSION}\x00{items.salt}\x00{source}\x00".encode())
        self._salts: dict[Any, Any] = {}
        self.misaligned = False
        self.active = self._spans is not None

    def place(self, el: etree._Element) -> int | None:
        """The span of ``el`` (every element lxml reports goes through here, in order)."""
        if not self.active:
            return None
        tag = el.tag
        if self._atom:
            if tag != self._atom_tag:
                return None
        elif not isinstance(tag, str) or not (tag == "item" or tag.endswith("}item")):
            return None
        index = self._seen
        self._seen += 1
        assert self._spans is not None
        if index >= len(self._spans):
            self.misaligned = True
            self.active = False
            return None
        return index

    def begin(self, root: etree._Element, show_title: str | None) -> None:
        """The feed's head is read: salt with it. A title only after the entries (rare) is
        not known yet, so nothing is hashed."""
        if show_title is None:
            self.active = False
            return
        encoding = root.getroottree().docinfo.encoding or ""
        self._base.update(repr((show_title, encoding)).encode() + _context(root))

    def digest(self, index: int | None, parent: etree._Element) -> str | None:
        if index is None or not self.active or self._spans is None:
            return None
        salt = self._salts.get(parent)
        if salt is None:
            salt = self._base.copy()
            salt.update(_context(parent))
            self._salts[parent] = salt
        start, end = self._spans[index]
        h = salt.copy()
        h.update(self._view[start:end])
        return h.hexdigest()

    def finish(self) -> None:
        """After the last element: every span must have had its element."""
        if self.active and self._spans is not None and self._seen != len(self._spans):
            self.misaligned = True
