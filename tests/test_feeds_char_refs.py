"""A reference in a feed's XML to a code point XML forbids (issue 25): a surrogate
(``&#xD800;``), U+FFFE or U+FFFF, one above U+10FFFF (``&#x110000;``, ``&#99999999;``), NUL
(``&#0;``). Such a feed is not well-formed; a podcast app reads it, and so does the lenient
reader: each such reference deleted, as a reference to a control character is
(tests/test_feeds_controls.py), in RSS and Atom, in text and in attributes, everything else
as the same feed without them — on the command line (``main(argv, stdout)``) and through a
real poll.

U+FDD0..U+FDEF and the other noncharacters but U+FFFE/U+FFFF are characters XML allows:
a reference to one is well-formed and read as before (the strict reader, nothing repaired).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from digests.parse import lenient, parse_bytes
from tests.fixtures.cli import parsed_json
from tests.fixtures.control import CHANNEL, START, Rig

_NS = (
    'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" '
    'xmlns:content="http://purl.org/rss/1.0/modules/content/"'
)
_PR = "https://github.com/pytorch/pytorch/pull/"

# {X}: where the reference goes (in text, in attributes, before and inside escaped markup).
RSS = (
    f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" {_NS}><channel>'
    "<title>PyTorch{X}</title><link>https://pod.test/</link>"
    "<item><title>PyTorch: Fusion{X} week</title><guid>r-1{X}</guid>"
    "<link>https://pod.test/ep/r-1{X}</link><pubDate>Thu, 01 Oct 2026 09:30:00 GMT</pubDate>"
    '<enclosure url="https://pod.test/r-1{X}.mp3" type="audio/mpeg" length="5"/>'
    "<itunes:duration>31:05</itunes:duration>"
    f'<description>&lt;p&gt;Fused{{X}} kernels land in &lt;a href="{_PR}201201{{X}}"&gt;the '
    "fusion PR&lt;/a&gt;.&lt;/p&gt;&lt;ul&gt;&lt;li&gt;Guards{X} stay&lt;/li&gt;&lt;/ul&gt;"
    "</description>"
    "<content:encoded><![CDATA[<p>Then PR 201202 rewrites the planner.</p>]]>"
    "</content:encoded></item>"
    "<item><title>PyTorch: Next</title><guid>r-2</guid><link>https://pod.test/ep/r-2</link>"
    "<pubDate>Wed, 30 Sep 2026 09:30:00 GMT</pubDate>"
    "<description>Untouched: PR 201203.</description></item></channel></rss>\n"
)
ATOM = (
    '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
    '<title>PyTorch</title><link href="https://pod.test/{X}"/>'
    "<entry><title>PyTorch: Atom{X} notes</title><id>tag:pod.test,2026:a-1{X}</id>"
    '<link href="https://pod.test/ep/a-1{X}"/><updated>2026-10-01T09:30:00Z</updated>'
    f'<content type="html">&lt;p&gt;Fused{{X}} kernels&lt;/p&gt; &lt;a href="{_PR}201204"'
    "&gt;the PR&lt;/a&gt;{X}.</content></entry>"
    "<entry><title>PyTorch: Atom next</title><id>tag:pod.test,2026:a-2</id>"
    '<link href="https://pod.test/ep/a-2"/><updated>2026-09-30T09:30:00Z</updated>'
    "<summary>Raw text and PR 201205{X}.</summary></entry></feed>\n"
)
FEEDS = {"rss": (RSS, 2), "atom": (ATOM, 2)}

# Every kind XML forbids, spelled as feeds spell them.
FORBIDDEN = [
    "&#xD800;",
    "&#xdfff;",
    "&#55296;",
    "&#x00DBFF;",
    "&#xFFFE;",
    "&#65535;",
    "&#x110000;",
    "&#1114112;",
    "&#99999999;",
    "&#xFFFFFFFF;",
    "&#0;",
    "&#x0;",
]


def _spelled(feed: str, reference: str) -> bytes:
    return feed.replace("{X}", reference).encode()


@pytest.mark.parametrize("name", list(FEEDS))
@pytest.mark.parametrize("reference", FORBIDDEN)
def test_a_feed_reads_as_without_its_references_on_the_command_line(
    name: str, reference: str, tmp_path: Path
) -> None:
    feed, count = FEEDS[name]
    flawed = parsed_json(_spelled(feed, reference), tmp_path / "flawed.xml")
    clean = parsed_json(_spelled(feed, ""), tmp_path / "clean.xml")
    assert len(flawed) == count
    assert flawed == clean
    parsed = parse_bytes(_spelled(feed, reference), "feed.xml")
    assert f"invalid character reference {reference}" in parsed.lenient
    assert parse_bytes(_spelled(feed, ""), "feed.xml").lenient == ()


def test_the_text_and_attributes_are_read_right(tmp_path: Path) -> None:
    (first, _) = parsed_json(_spelled(RSS, "&#xD800;"), tmp_path / "feed.xml")
    assert first["title"] == "PyTorch: Fusion week"
    assert first["guid"] == "r-1"
    assert first["url"] == "https://pod.test/ep/r-1"
    assert first["audio_url"] == "https://pod.test/r-1.mp3"
    assert str(first["summary"]).startswith(
        f"Fused kernels land in the fusion PR ({_PR}201201). - Guards stay"
    )
    assert [pr["number"] for pr in first["pull_requests"]] == [201201, 201202]  # type: ignore[attr-defined]
    assert "\ufffd" not in json.dumps(first, ensure_ascii=False)


def test_a_reference_among_the_flaws_the_reader_repairs() -> None:
    feed = RSS.replace("Fusion{X} week", "Fusion&nbsp;week &#xFFFF;R&D&#1;s")
    parsed = parse_bytes(_spelled(feed, "&#x110000;"), "feed.xml")
    assert parsed.entries[0].title == "PyTorch: Fusion week R&Ds"
    assert "undeclared entity &nbsp;" in parsed.lenient and "bare & in text" in parsed.lenient


@pytest.mark.parametrize("reference", ["&#xFDD0;", "&#xFDEF;", "&#x1FFFE;", "&#x10FFFF;"])
def test_a_noncharacter_xml_allows_is_read_as_before(reference: str) -> None:
    parsed = parse_bytes(_spelled(RSS, reference), "feed.xml")
    assert parsed.lenient == ()  # well-formed: the strict reader's, nothing repaired
    character = chr(int(reference[3:-1], 16))
    assert parsed.entries[0].title == f"PyTorch: Fusion{character} week"


def test_the_reader_passes_exactly_the_references_xml_reads() -> None:
    """Every code point to U+110010, in decimal and in hex (either case, with leading
    zeros): the references the repair leaves for XML to read are those it reads."""
    codes = range(0x110011)
    for spell in ("&#{:d};", "&#x{:x};", "&#x{:X};", "&#x{:06x};"):
        text = "".join(spell.format(code) for code in codes).encode()
        kept = {m.start() for m in lenient._FIX_REF.finditer(text)}
        at, passed = 0, []
        for code in codes:
            if at not in kept:
                passed.append(code)
            at += len(spell.format(code))
        allowed = [
            c for c in codes if c in (9, 10, 13) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD
            or 0x10000 <= c <= 0x10FFFF
        ]  # fmt: skip
        assert passed == allowed, spell


@pytest.mark.parametrize("reference", FORBIDDEN)
def test_the_repair_deletes_the_reference(reference: str) -> None:
    repaired = lenient.repair(f"<rss><a>x{reference}y</a><b c='x{reference}y'/></rss>".encode())
    assert repaired.data == b"<rss><a>xy</a><b c='xy'/></rss>"
    assert repaired.notes == (f"invalid character reference {reference}",)


async def test_an_item_with_such_references_is_posted(rig: Rig) -> None:
    rig.feed.route("/feed.xml", _spelled(RSS, "&#xD800;&#x110000;"))
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    assert rig.posted() == ["PyTorch:r-1"]
    shown = json.dumps(rig.fake.messages(CHANNEL), ensure_ascii=False)
    assert "Fusion week" in shown and "#201201" in shown
    assert "\ufffd" not in shown
