"""A bad character costs the character, not the feed; a broken structure still costs the feed."""

from __future__ import annotations

import pytest
from lxml import etree

from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes

DECL = b'<?xml version="1.0" encoding="UTF-8"?>\n'
HEAD = (
    b'<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
    b"<channel><title>PyTorch</title>\n"
)


def item(n: int, title: bytes, description: bytes = b"Fine.") -> bytes:
    return (
        b"<item><title>" + title + b"</title><guid>g" + str(n).encode() + b"</guid>"
        b"<pubDate>Mon, 0" + str(n).encode() + b" Oct 2026 13:00:40 GMT</pubDate>"
        b"<description>" + description + b"</description></item>\n"
    )


def feed(*items: bytes, decl: bytes = DECL) -> bytes:
    return decl + HEAD + b"".join(items) + b"</channel></rss>\n"


LATIN1_IN_UTF8 = feed(
    item(1, "PyTorch: Café ☕".encode()),  # proper UTF-8
    item(2, b"PyTorch: Caf\xe9 Latin-1", b"R\xe9sum\xe9: PR 77 lands."),  # one bad item
    item(3, b"PyTorch: Third"),
)


def test_latin1_byte_in_a_utf8_feed_is_read_as_windows_1252() -> None:
    parsed = parse_bytes(LATIN1_IN_UTF8, "feed.xml")
    assert parsed.show_title == "PyTorch"
    assert [e.title for e in parsed.entries] == [
        "PyTorch: Café ☕",
        "PyTorch: Café Latin-1",
        "PyTorch: Third",
    ]
    assert parsed.entries[1].description == "Résumé: PR 77 lands."
    assert parsed.lenient == ("bytes invalid in UTF-8, read as Windows-1252",)
    episodes = build_episodes(parsed, "PyTorch", "pytorch/pytorch")
    assert [e.guid for e in episodes] == ["g3", "g2", "g1"]
    assert [r.number for r in episodes[1].pull_requests] == [77]


def test_the_qa_file_shape_without_a_declaration_too() -> None:
    data = feed(item(1, b"PyTorch: Caf\xe9 na\xefve \xbd"), decl=b"")
    (entry,) = parse_bytes(data, "feed.xml").entries
    assert entry.title == "PyTorch: Café naïve ½"


@pytest.mark.parametrize(
    "data",
    [
        # in an attribute, in CDATA, in a comment, in the channel head
        feed(item(1, b"T"), b'<item><title>U</title><guid x="\xe9">g2</guid></item>'),
        feed(item(1, b"<![CDATA[Caf\xe9]]>")),
        feed(b"<!-- caf\xe9 -->", item(1, b"T")),
        DECL + HEAD.replace(b"PyTorch", b"PyTorch \xe9") + item(1, b"T") + b"</channel></rss>",
    ],
)
def test_bad_bytes_anywhere_are_replaced(data: bytes) -> None:
    assert parse_bytes(data, "feed.xml").entries


def test_a_control_character_is_deleted() -> None:
    # As html.unescape reads a reference to one (tests/test_feeds_controls.py): a form
    # feed, whitespace in HTML, reads as a space.
    (entry,) = parse_bytes(feed(item(1, b"PyTorch: A\x01B\x1bC\x0cD")), "feed.xml").entries
    assert entry.title == "PyTorch: ABC D"


def test_an_encoding_nobody_knows_is_read_as_utf8() -> None:
    data = feed(item(1, "PyTorch: Café".encode()), decl=b'<?xml version="1.0" encoding="x-nope"?>')
    (entry,) = parse_bytes(data, "feed.xml").entries
    assert entry.title == "PyTorch: Café"


def test_declared_windows_1252_with_an_undefined_byte() -> None:
    data = feed(
        item(1, b"PyTorch: \x93quoted\x94 \x81"),
        decl=b'<?xml version="1.0" encoding="windows-1252"?>',
    )
    (entry,) = parse_bytes(data, "feed.xml").entries
    assert entry.title == "PyTorch: \u201cquoted\u201d \ufffd"


def test_atom_with_a_bad_byte() -> None:
    data = (
        DECL + b'<feed xmlns="http://www.w3.org/2005/Atom"><title>PyTorch</title>'
        b"<entry><id>a1</id><title>PyTorch: Caf\xe9</title>"
        b"<updated>2026-10-05T13:00:40Z</updated></entry></feed>"
    )
    (entry,) = parse_bytes(data, "feed.xml").entries
    assert entry.title == "PyTorch: Café"


@pytest.mark.parametrize(
    "data",
    [
        feed(item(1, b"T"))[: len(DECL + HEAD) + 30],  # cut before any item ended
        LATIN1_IN_UTF8.replace(b"</title><guid>g3", b"</titel><guid>g3"),  # mismatched tags
        LATIN1_IN_UTF8 + b"<rss>",  # junk after the root
    ],
)
def test_structural_errors_still_fail_the_feed(data: bytes) -> None:
    with pytest.raises(FeedParseError) as info:
        parse_bytes(data, "feed.xml")
    assert info.value.reason.startswith("malformed XML: ")
    assert "\n" not in str(info.value)
    assert isinstance(info.value.__cause__, etree.XMLSyntaxError)


def test_repair_keeps_entities_unexpanded() -> None:
    data = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<!DOCTYPE rss [<!ENTITY x SYSTEM "file:///etc/passwd"><!ENTITY a "AAAA">]>\n'
        + HEAD
        + item(1, b"PyTorch: &x;&a; caf\xe9")
        + b"</channel></rss>"
    )
    (entry,) = parse_bytes(data, "feed.xml").entries
    assert "root:" not in entry.title and "AAAA" not in entry.title
    assert "café" in entry.title


@pytest.mark.parametrize(
    "data",
    [
        LATIN1_IN_UTF8[:-40],  # truncated, with a bad byte before the cut
        LATIN1_IN_UTF8[:-40].replace(b"\xe9", b"e"),  # truncated, clean
    ],
)
def test_a_cut_off_document_gives_the_items_before_the_cut(data: bytes) -> None:
    parsed = parse_bytes(data, "feed.xml")
    assert [e.guid for e in parsed.entries] == ["g1", "g2"]
    assert "cut off mid-document" in parsed.lenient
