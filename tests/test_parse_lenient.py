"""The lenient reader (``digests.parse.lenient``): what it repairs, what it leaves alone, and
hostile documents staying harmless in every path a document can take through the parser."""

from __future__ import annotations

import pytest

from digests.errors import FeedParseError
from digests.models import ParsedSource
from digests.parse import parse_bytes
from digests.parse.lenient import repair, summary
from tests.test_parse import BILLION_LAUGHS, EXTERNAL_DTD, XXE

ITEM = (
    b"<item><title>T {flaw}</title><guid>g</guid><description>before {flaw} after"
    b"</description></item>"
)


def _all_text(parsed: ParsedSource) -> str:
    return " ".join(
        " ".join([e.title, e.description, e.transcript, parsed.show_title or ""])
        for e in parsed.entries
    )


def test_text_around_an_html_entity_is_kept() -> None:
    data = b"<rss><channel><title>S</title>" + ITEM.replace(b"{flaw}", b"Inductor&nbsp;fusion")
    (entry,) = parse_bytes(data + b"</channel></rss>", "f").entries
    assert entry.title == "T Inductor fusion"
    assert entry.description == "before Inductor fusion after"


def test_unknown_entities_and_bare_ampersands_read_as_text() -> None:
    flaw = b"&bogus; R&D &#X41; &#0;"
    data = b"<rss><channel><title>S</title>" + ITEM.replace(b"{flaw}", flaw) + b"</channel></rss>"
    parsed = parse_bytes(data, "f")
    assert parsed.entries[0].title == "T &bogus; R&D A"  # &#0;: deleted (NUL, which XML forbids)
    assert "unknown entity &bogus;" in parsed.lenient and "bare & in text" in parsed.lenient


def test_cdata_is_left_as_written_and_comments_are_dropped() -> None:
    data = (
        b"<rss><channel><title>S</title><!-- a -- b --><item><title><![CDATA[Q&A &nbsp;]]>"
        b"</title><guid>g</guid><description>x&nbsp;y</description></item></channel></rss>"
    )
    (entry,) = parse_bytes(data, "f").entries
    assert entry.title == "Q&A &nbsp;"  # CDATA is text: the reference was never one


def test_an_unknown_undeclared_prefix_still_reads() -> None:
    data = (
        b"<rss><channel><title>S</title><item><title>T</title><guid>g</guid>"
        b"<foo:bar>x</foo:bar><itunes:duration>61</itunes:duration></item></channel></rss>"
    )
    parsed = parse_bytes(data, "f")
    assert parsed.entries[0].duration == "61"
    assert parsed.lenient == ("undeclared prefix foo:", "undeclared prefix itunes:")


def test_a_well_formed_feed_is_not_read_leniently() -> None:
    data = b"<rss><channel><title>S</title>" + ITEM.replace(b"{flaw}", b"&amp;")
    assert parse_bytes(data + b"</channel></rss>", "f").lenient == ()


def test_the_summary_is_short() -> None:
    assert summary(()) is None
    assert summary(("a", "b", "c", "d")) == "a, b, c…"
    notes = repair(b"<rss>" + b"".join(b"&x%d;" % n for n in range(10_000)) + b"</rss>").notes
    assert len(notes) <= 24


def test_mostly_windows_1252_is_read_as_windows_1252_throughout() -> None:
    # Bytes that happen to form a UTF-8 character ("Ã©" is C3 A9) among many that do not.
    data = (
        b"<rss><channel><title>S</title><item><title>\x93Caf\xc3\xa9\x94 \x96 na\xefve</title>"
        b"<guid>g</guid></item></channel></rss>"
    )
    (entry,) = parse_bytes(data, "f").entries
    assert entry.title == "“CafÃ©” – naïve"


# ---------------------------------------------------------------- hostile, every path


def _paths(document: bytes) -> list[bytes]:
    """``document`` as it reaches each path: strict, repaired (an HTML entity; a bare
    ``&``; a cut; text before the declaration; a bad byte), and the DOCTYPE one."""
    body = document.replace(b"</title>", b" &eacute;</title>", 1)
    return [
        document,
        document.replace(b"</title>", b" &nbsp;</title>", 1),
        document.replace(b"</title>", b" Q&A</title>", 1),
        document[: document.rindex(b"</channel>")],
        b"  stray text\n" + document,
        document.replace(b"</title>", b" caf\xe9</title>", 1),
        body,
    ]


@pytest.mark.parametrize("mode", range(7))
def test_billion_laughs_is_never_expanded(mode: int) -> None:
    try:
        parsed = parse_bytes(_paths(BILLION_LAUGHS)[mode], "bomb.xml")
    except FeedParseError:
        return  # refusing is as good as reading harmlessly
    text = _all_text(parsed)
    assert "lollol" not in text
    assert len(text) < 1000


@pytest.mark.parametrize("mode", range(7))
def test_external_entities_are_never_resolved(mode: int) -> None:
    try:
        parsed = parse_bytes(_paths(XXE)[mode], "xxe.xml")
    except FeedParseError:
        return
    assert "root:" not in _all_text(parsed)


@pytest.mark.parametrize("mode", range(7))
def test_an_external_dtd_is_never_fetched(mode: int) -> None:
    # Port 9 on loopback: a fetch would fail the parse, or hang; the title says it read.
    parsed = parse_bytes(_paths(EXTERNAL_DTD)[mode], "dtd.xml")
    assert [e.title.split()[0] for e in parsed.entries] == ["Plain"]


def test_a_doctype_is_dropped_not_read_when_repairing() -> None:
    repaired = repair(BILLION_LAUGHS.replace(b"</title>", b"&nbsp;</title>", 1))
    assert b"<!DOCTYPE" not in repaired.data and b"<!ENTITY" not in repaired.data
    assert b"&amp;lol9;" in repaired.data  # the reference, as text
