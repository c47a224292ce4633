"""Parsing feeds and episode pages: formats, layouts, detection by content, hostile input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lxml import etree

from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.models import Episode, ParsedSource
from digests.parse import parse_bytes
from digests.parse.text import MAX_ENTRIES, MAX_TEXT

DATA = Path(__file__).parent / "data"
SAMPLES = Path(__file__).resolve().parents[1] / ".." / "shared" / "samples"
REPO = "pytorch/pytorch"


def parse_file(name: str, source: str | None = None) -> ParsedSource:
    return parse_bytes((DATA / name).read_bytes(), source or name)


def episodes_of(parsed: ParsedSource) -> list[Episode]:
    return build_episodes(parsed, "PyTorch", REPO)


def numbers(episode: Episode) -> list[int]:
    return [r.number for r in episode.pull_requests]


def rss(items: str, ns: str = "http://www.itunes.com/dtds/podcast-1.0.dtd") -> bytes:
    return (
        '<?xml version="1.0"?><rss version="2.0" '
        f'xmlns:itunes="{ns}" xmlns:content="http://purl.org/rss/1.0/modules/content/">'
        f"<channel><title>PyTorch</title>{items}</channel></rss>"
    ).encode()


# ---------------------------------------------------------------- RSS


def test_rss_feed() -> None:
    parsed = parse_file("feed-rss.xml")
    assert parsed.kind == "rss"
    assert parsed.show_title == "PyTorch"
    # Five items, one with neither title nor guid: skipped, the rest kept.
    assert len(parsed.entries) == 4
    episodes = episodes_of(parsed)
    assert [e.headline for e in episodes] == [
        "All-Gather Showdown and Stack-Aware Merges",
        "Compiler Parity Push",
        "Distributed Hang Fixes and Compiler Hardening",
        "Memory Optimization Revolution",
    ]
    newest, parity, hangs, memory = episodes
    assert newest.guid == "pt-2026-10-05"
    assert newest.duration_seconds == 151
    assert newest.audio_url == "https://briefings.example/audio/2026-10-05.mp3"
    # Inline podcast:transcript counts as the transcript; a link to another repo keeps it.
    assert [(r.number, r.url) for r in newest.pull_requests] == [
        (199720, "https://github.com/pytorch/pytorch/pull/199720"),
        (199721, "https://github.com/pytorch/pytorch/pull/199721"),
        (199726, "https://github.com/pytorch/pytorch/pull/199726"),
        (199734, "https://github.com/pytorch/pytorch/pull/199734"),
        (8812, "https://github.com/pytorch/vision/pull/8812"),
    ]
    # HTML description → plain text; +0200 offset → UTC; "3:02" → 182 s.
    assert (
        parity.summary
        == "The compiler narrows the gap with eager mode. Windows tests & flaky guards get fixed."
    )
    assert parity.published_at == datetime(2026, 10, 2, 13, 2, 11, tzinfo=UTC)
    assert parity.duration_seconds == 182
    assert parity.transcript.split("\n\n") == [
        "With 23 commits in, parity is the word. PR 199601 keeps strides identical to eager mode.",
        "And PR #199610 stops a guard from recompiling on every call.",
    ]
    assert numbers(parity) == [199601, 199610]
    # No guid: the link stands in. No guid and no link: a stable hash.
    assert hangs.guid == "https://briefings.example/pytorch/2026-10-01"
    assert hangs.duration_seconds == 251
    assert numbers(hangs) == [199512]
    assert memory.guid.startswith("sha1:")
    assert memory.guid == episodes_of(parse_file("feed-rss.xml"))[3].guid
    assert memory.published_at == datetime(2026, 9, 30, 13, 1, tzinfo=UTC)


def test_bundled_example_feed_parses() -> None:
    example = Path(__file__).resolve().parents[1] / "config" / "example-feed.xml"
    episodes = episodes_of(parse_bytes(example.read_bytes(), str(example)))
    assert len(episodes) == 4
    assert [e.duration_seconds for e in episodes] == [151, 182, 251, 251]
    assert numbers(episodes[0]) == [199720, 199721, 199726, 199714, 199716, 199715, 199687]
    assert numbers(episodes[2]) == [199512, 199530]


@pytest.mark.parametrize(
    "ns",
    [
        "http://www.itunes.com/dtds/podcast-1.0.dtd",
        "http://www.itunes.com/DTDs/Podcast-1.0.dtd",
        "https://www.itunes.com/dtds/podcast-1.0.dtd",
        "HTTP://WWW.ITUNES.COM/DTDS/PODCAST-1.0.DTD",
    ],
)
def test_itunes_namespace_is_matched_case_insensitively(ns: str) -> None:
    item = (
        "<item><title>PyTorch: A</title><guid>a</guid>"
        "<itunes:duration>4:11</itunes:duration></item>"
    )
    (episode,) = episodes_of(parse_bytes(rss(item, ns), "feed"))
    assert episode.duration_seconds == 251


def test_foreign_namespace_duration_is_not_itunes() -> None:
    item = "<item><title>A</title><guid>a</guid><itunes:duration>4:11</itunes:duration></item>"
    (episode,) = episodes_of(parse_bytes(rss(item, "http://example.invalid/other"), "feed"))
    assert episode.duration_seconds is None


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("<p>One.</p><p>Two &amp; three.</p>", "One. Two & three."),
        ("&lt;p&gt;Escaped &lt;b&gt;markup&lt;/b&gt;&lt;/p&gt;", "Escaped markup"),
        ("Line<br>break<br/><br/>para", "Line break para"),
        ("<ul><li>first</li><li>second</li></ul>", "- first - second"),
        ("<script>alert(1)</script><style>p{}</style>Visible<!-- hidden -->", "Visible"),
        ("a < b and c > d", "a < b and c > d"),
        # Entity-encoded HTML is markup; doubly encoded text stays text (render escapes it).
        ("&lt;b&gt;bold&lt;/b&gt; &amp;lt;!channel&amp;gt;", "bold <!channel>"),
        # Slack's own syntax typed by the writer is words, in HTML or not (render escapes it).
        (
            "Ping <@U0ADMIN> and <https://evil.example|free GPUs> and <!here>.",
            "Ping <@U0ADMIN> and <https://evil.example|free GPUs> and <!here>.",
        ),
        (
            "<p>Hi <!channel>, see <#C0123|general></p><p>Next.</p>",
            "Hi <!channel>, see <#C0123|general> Next.",
        ),
        ("&lt;p&gt;Hi &lt;!everyone&gt;&lt;/p&gt;", "Hi <!everyone>"),
        ("<!-- a comment --><p>Only this</p>", "Only this"),
    ],
)
def test_html_in_descriptions_becomes_text(description: str, expected: str) -> None:
    item = (
        "<item><title>T</title><guid>g</guid>"
        f"<description><![CDATA[{description}]]></description></item>"
    )
    (episode,) = episodes_of(parse_bytes(rss(item), "feed"))
    assert episode.summary == expected


def test_content_encoded_paragraphs_and_linked_pr_numbers() -> None:
    content = (
        '<p>Fixed by <a href="https://github.com/pytorch/pytorch/pull/4242">#4242</a>.</p>'
        "<p>Second paragraph.</p>"
    )
    item = (
        "<item><title>T</title><guid>g</guid>"
        f"<content:encoded><![CDATA[{content}]]></content:encoded></item>"
    )
    (episode,) = episodes_of(parse_bytes(rss(item), "feed"))
    assert episode.transcript == (
        "Fixed by #4242 (https://github.com/pytorch/pytorch/pull/4242).\n\nSecond paragraph."
    )
    assert numbers(episode) == [4242]


def test_bad_items_are_skipped_not_fatal() -> None:
    items = (
        "<item/>"
        "<item><description>no title, no guid</description></item>"
        "<item><guid>only-guid</guid></item>"
        "<item><title>Nested <b>markup</b> in title</title><enclosure/><pubDate>junk</pubDate>"
        "<itunes:duration>forever</itunes:duration></item>"
        "<item><title>Good</title><guid>good</guid></item>"
    )
    parsed = parse_bytes(rss(items), "feed")
    assert parsed.entries[0].guid == "only-guid"
    assert [e.title for e in parsed.entries] == ["", "Nested markup in title", "Good"]
    episodes = episodes_of(parsed)
    assert len(episodes) == 3
    nested = next(e for e in episodes if e.title == "Nested markup in title")
    assert nested.duration_seconds is None
    assert nested.audio_url is None


def test_items_without_guid_get_stable_distinct_ids() -> None:
    items = (
        "<item><title>A</title><pubDate>Mon, 05 Oct 2026 13:00:40 GMT</pubDate></item>"
        "<item><title>A</title><pubDate>Tue, 06 Oct 2026 13:00:40 GMT</pubDate></item>"
        "<item><title>B</title><link>https://briefings.example/b</link></item>"
    )
    first = [e.guid for e in parse_bytes(rss(items), "feed").entries]
    second = [e.guid for e in parse_bytes(rss(items), "feed").entries]
    assert first == second
    assert len(set(first)) == 3
    assert first[2] == "https://briefings.example/b"


def test_text_fields_and_entry_count_are_capped() -> None:
    huge = "word " * (MAX_TEXT // 2)
    item = f"<item><title>T</title><guid>g</guid><description>{huge}</description></item>"
    (entry,) = parse_bytes(rss(item), "feed").entries
    assert len(entry.description) <= MAX_TEXT
    many = "".join(f"<item><guid>{i}</guid></item>" for i in range(MAX_ENTRIES + 25))
    assert len(parse_bytes(rss(many), "feed").entries) == MAX_ENTRIES


def test_rss_10_rdf_items_beside_the_channel() -> None:
    data = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
  <channel><title>PyTorch</title></channel>
  <item><title>PyTorch: Old format</title><link>https://briefings.example/rdf</link>
  <description>PR 5 lands.</description></item>
</rdf:RDF>"""
    parsed = parse_bytes(data, "feed")
    assert parsed.kind == "rss"
    (episode,) = episodes_of(parsed)
    assert episode.headline == "Old format"
    assert episode.guid == "https://briefings.example/rdf"
    assert numbers(episode) == [5]


# Feeds are read entry by entry as lxml parses them, and each entry is dropped once read;
# these pin what that streaming must still see as a whole-tree reading would.


def test_streamed_feed_keeps_a_show_title_written_after_the_items() -> None:
    data = (
        b'<?xml version="1.0"?><rss version="2.0"><channel>'
        b"<item><title>PyTorch: One</title><guid>g1</guid></item>"
        b"<item><title>PyTorch: Two</title><guid>g2</guid></item>"
        b"<title>PyTorch Late Title</title></channel></rss>"
    )
    parsed = parse_bytes(data, "feed")
    assert parsed.show_title == "PyTorch Late Title"
    assert [e.guid for e in parsed.entries] == ["g1", "g2"]


def test_streamed_feed_reads_only_items_of_the_channel_or_the_root() -> None:
    data = rss(
        "<item><title>PyTorch: Real</title><guid>real</guid>"
        '<media:group xmlns:media="http://search.yahoo.com/mrss/">'
        "<item><title>Nested, not an episode</title><guid>nested</guid></item>"
        "</media:group></item>"
        '<extra xmlns="urn:x"><item><guid>elsewhere</guid></item></extra>'
        "<item><title>PyTorch: Also real</title><guid>also</guid></item>"
    )
    parsed = parse_bytes(data, "feed")
    assert parsed.show_title == "PyTorch"
    assert [e.guid for e in parsed.entries] == ["real", "also"]


def test_streamed_atom_feed_ignores_rss_items_and_rss_ignores_atom_entries() -> None:
    atom = b"""<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">
  <title>PyTorch</title><item><title>stray</title></item>
  <entry><title>PyTorch: A</title><id>a</id><updated>2026-10-01T00:00:00Z</updated></entry>
</feed>"""
    parsed = parse_bytes(atom, "feed")
    assert (parsed.kind, [e.guid for e in parsed.entries]) == ("atom", ["a"])
    mixed = rss(
        '<entry xmlns="http://www.w3.org/2005/Atom"><id>atom-entry</id></entry>'
        "<item><title>PyTorch: R</title><guid>r</guid></item>"
    )
    assert [e.guid for e in parse_bytes(mixed, "feed").entries] == ["r"]


def test_odd_case_items_are_still_read() -> None:
    # Not valid RSS, but seen: the streaming reader matches tags exactly, so a feed whose
    # items it cannot see is read from the whole tree instead.
    data = (
        b'<?xml version="1.0"?><RSS version="2.0"><Channel><Title>PyTorch</Title>'
        b"<Item><Title>PyTorch: Shouting</Title><GUID>loud</GUID></Item></Channel></RSS>"
    )
    parsed = parse_bytes(data, "feed")
    assert parsed.show_title == "PyTorch"
    assert [e.guid for e in parsed.entries] == ["loud"]


def test_items_without_a_channel_are_refused_like_before() -> None:
    data = b'<rss version="2.0"><item><title>PyTorch: Lost</title><guid>x</guid></item></rss>'
    with pytest.raises(FeedParseError, match="no <channel>"):
        parse_bytes(data, "feed")


def test_malformed_xml_after_good_items_fails_the_feed() -> None:
    # Streaming has read items by then; a truncated feed must still not pass as complete.
    data = rss("<item><title>PyTorch: Fine</title><guid>ok</guid></item>")[:-20]
    with pytest.raises(FeedParseError, match="malformed XML"):
        parse_bytes(data, "feed")


def test_utf16_feed_with_bom() -> None:
    text = rss("<item><title>Café ☕</title><guid>u</guid></item>").decode()
    data = text.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    (entry,) = parse_bytes(data.encode("utf-16"), "feed").entries
    assert entry.title == "Café ☕"


# ---------------------------------------------------------------- Atom


def test_atom_feed() -> None:
    parsed = parse_file("feed-atom.xml")
    assert parsed.kind == "atom"
    assert parsed.show_title == "PyTorch"
    newest, parity = episodes_of(parsed)
    assert newest.guid == "urn:example:pt:2026-10-05"
    assert newest.url == "https://briefings.example/pytorch/2026-10-05"
    assert newest.published_at == datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)
    assert numbers(newest) == [199720, 199721, 199726]
    assert parity.published_at == datetime(2026, 10, 2, 13, 2, 11, tzinfo=UTC)
    assert parity.summary == "Parity with eager mode, finally."
    assert (
        parity.transcript == "PR 199601 keeps strides as eager does.\n\nPR #199610 fixes a guard."
    )
    assert parity.audio_url == "https://briefings.example/audio/2026-10-02.mp3"
    assert parity.duration_seconds == 182
    assert numbers(parity) == [199601, 199610]


def atom(entry: str, feed_title: str = "<title>PyTorch</title>") -> bytes:
    return (
        f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">{feed_title}'
        f"<entry><id>urn:a1</id><updated>2026-10-06T09:00:00Z</updated>{entry}</entry></feed>"
    ).encode()


@pytest.mark.parametrize(
    ("markup", "text"),
    [
        # type="text" is the default: what looks like a tag is words
        (
            "<title>PyTorch: Faster std::vector&lt;int&gt;</title>",
            "PyTorch: Faster std::vector<int>",
        ),
        ('<title type="text">a &lt; b &lt;em&gt;c&lt;/em&gt;</title>', "a < b <em>c</em>"),
        ("<title>Tom &amp;amp; Jerry</title>", "Tom &amp; Jerry"),  # decoded once, by XML
        ("<title>  spread\n  over\tlines </title>", "spread over lines"),
        ('<title type="TEXT">List&lt;T&gt;</title>', "List<T>"),
        # type="html": markup, converted to text
        ('<title type="html">HTML &lt;em&gt;title&lt;/em&gt;</title>', "HTML title"),
        ('<title type="html">a &amp;lt; b</title>', "a < b"),
        # type="xhtml": elements, as before
        (
            '<title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">X <b>bold</b></div>'
            "</title>",
            "X bold",
        ),
    ],
)
def test_atom_title_types(markup: str, text: str) -> None:
    (entry,) = parse_bytes(atom(markup), "feed.xml").entries
    assert entry.title == text


def test_atom_summary_and_content_of_type_text_are_plain_text() -> None:
    parsed = parse_bytes(
        atom(
            "<title>T</title>"
            "<summary>Templates like Optional&lt;Tensor&gt; compile;  PR 42.</summary>"
            "<content>First &lt;p&gt; paragraph.\n\nSecond: Vec&lt;u8&gt; and PR 43.</content>",
            feed_title="<title>Show &lt;C++&gt;</title>",
        ),
        "feed.xml",
    )
    assert parsed.show_title == "Show <C++>"
    (entry,) = parsed.entries
    assert entry.description == "Templates like Optional<Tensor> compile; PR 42."
    # Paragraphs kept, whitespace normalised, nothing read as markup.
    assert entry.transcript == "First <p> paragraph.\n\nSecond: Vec<u8> and PR 43."
    (episode,) = episodes_of(parsed)
    assert numbers(episode) == [42, 43]


def test_atom_summary_and_content_of_type_html_keep_the_html_path() -> None:
    (entry,) = parse_bytes(
        atom(
            '<title>T</title><summary type="html">&lt;p&gt;One&lt;/p&gt;&lt;p&gt;Two&lt;/p&gt;'
            '</summary><content type="html">&lt;ul&gt;&lt;li&gt;PR 5&lt;/li&gt;&lt;/ul&gt;'
            "</content>"
        ),
        "feed.xml",
    ).entries
    assert entry.description == "One\n\nTwo"
    assert entry.transcript == "- PR 5"


@pytest.mark.parametrize(
    "data",
    [
        rss(
            "<item><title>PyTorch: Content only</title><guid>c1</guid>"
            "<content:encoded><![CDATA[<p>The real description lives here. PR 1234 lands.</p>"
            "<p>More detail on PR 1234.</p>]]></content:encoded></item>"
        ),
        atom(
            '<title>PyTorch: Content only</title><content type="html">&lt;p&gt;The real '
            "description lives here. PR 1234 lands.&lt;/p&gt;&lt;p&gt;More detail on PR 1234."
            "&lt;/p&gt;</content>"
        ),
    ],
)
def test_content_only_entries_have_a_summary(data: bytes) -> None:
    (episode,) = episodes_of(parse_bytes(data, "feed.xml"))
    assert episode.summary == "The real description lives here. PR 1234 lands."
    assert numbers(episode) == [1234]


def test_an_unknown_atom_namespace_is_refused_clearly() -> None:
    data = b'<feed xmlns="http://example.com/not-atom#"><title>x</title></feed>'
    with pytest.raises(FeedParseError, match="unsupported Atom"):
        parse_bytes(data, "old.xml")


# ---------------------------------------------------------------- pages


@pytest.mark.parametrize("name", ["page-bullets.txt", "page-dashes.txt"])
def test_text_page_layouts(name: str) -> None:
    parsed = parse_file(name)
    assert parsed.kind == "page-text"
    assert parsed.show_title == "PyTorch"
    (episode,) = episodes_of(parsed)
    assert episode.title.startswith("PyTorch: ")
    assert not episode.headline.startswith("PyTorch")
    assert "developer briefing" not in episode.summary
    assert "crawler" not in episode.transcript
    assert episode.summary and "\n" not in episode.summary
    assert len(episode.nearby) == 3
    assert all(not t[0].isdigit() and not t.startswith("-") for t in episode.nearby)


def test_text_page_bullets_layout_fields() -> None:
    (episode,) = episodes_of(parse_file("page-bullets.txt"))
    assert episode.published_at == datetime(2026, 3, 15, 10, 6, 54, tzinfo=UTC)
    assert episode.duration_seconds == 251
    # "March 15th" and "17 commits" are not PRs.
    assert numbers(episode) == [176201, 176188, 176190]
    assert episode.nearby[0] == "Complex Math Gets Smarter & Build Improvements"
    assert episode.transcript.startswith("Welcome in. March 15th")
    assert episode.transcript.count("\n\n") == 3


def test_text_page_dashes_layout_fields() -> None:
    (episode,) = episodes_of(parse_file("page-dashes.txt"))
    assert episode.headline == "All-Gather Showdown and Stack-Aware Merges"
    assert episode.published_at == datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)
    assert episode.duration_seconds == 151
    assert numbers(episode) == [199720, 199721, 199726, 199714, 199716, 199715, 199734, 199687]
    assert episode.pull_requests[6].context == "Together with PR 199734, which comments…"
    assert episode.nearby[0] == "Weekly Recap - FSDP Contracts, MPS Speedups, and Compiler Fidelity"


@pytest.mark.parametrize(
    ("sample", "duration", "prs"),
    [
        ("episode-page-2026-03-15.txt", 251, []),
        (
            "episode-page-2026-10-05.txt",
            151,
            [199720, 199721, 199726, 199714, 199716, 199715, 199734, 199687, 199689, 199710],
        ),
    ],
)
def test_shared_samples(sample: str, duration: int, prs: list[int]) -> None:
    path = SAMPLES / sample
    if not SAMPLES.is_dir():
        pytest.skip("../shared/samples is not present")
    (episode,) = episodes_of(parse_bytes(path.read_bytes(), str(path)))
    assert episode.show == "PyTorch"
    assert episode.duration_seconds == duration
    assert numbers(episode) == prs
    assert len(episode.nearby) == 8
    assert "crawler page" not in episode.transcript


def test_html_page_with_json_ld() -> None:
    parsed = parse_file("page-jsonld.html")
    assert parsed.kind == "page-html"
    assert parsed.show_title == "PyTorch"
    (episode,) = episodes_of(parsed)
    assert episode.title == "PyTorch: All-Gather Showdown and Stack-Aware Merges"
    assert (
        episode.summary == "Three all-gather designs compete & the merge bot handles whole stacks."
    )
    assert episode.published_at == datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC)
    assert episode.duration_seconds == 151
    assert episode.url == "https://briefings.example/pytorch/2026-10-05"
    # No guid of its own: the page's URL plus the episode's day.
    assert episode.guid == episode.url + "#2026-10-05"
    assert episode.audio_url == "https://briefings.example/audio/2026-10-05.mp3"
    assert numbers(episode) == [199720, 199721, 199726, 199687]
    assert episode.nearby == (
        "Compiler Parity Push",
        "Distributed Hang Fixes and Compiler Hardening",
    )


def test_html_page_without_json_ld_uses_meta_and_layout() -> None:
    (episode,) = episodes_of(parse_file("page-meta.html"))
    assert episode.headline == "Compiler Parity Push"
    assert (
        episode.summary
        == "The compiler narrows the gap with eager mode, and Windows tests stop flaking."
    )
    assert episode.published_at == datetime(2026, 10, 2, 13, 2, 11, tzinfo=UTC)
    assert episode.duration_seconds == 182
    assert episode.url == "https://briefings.example/pytorch/2026-10-02"
    assert episode.audio_url == "https://briefings.example/audio/2026-10-02.mp3"
    assert numbers(episode) == [199601, 199610]
    assert "document.write" not in episode.transcript
    assert "crawler" not in episode.transcript
    assert episode.nearby == (
        "All-Gather Showdown and Stack-Aware Merges",
        "Memory Optimization Revolution",
    )


def test_html_page_json_ld_variants() -> None:
    page = b"""<html><head><script type="application/ld+json">[
      {"@type": ["PodcastEpisode"], "headline": "PyTorch: Listed",
       "datePublished": "2026-10-05", "duration": "PT1H",
       "associatedMedia": [{"contentUrl": "https://a.example/x.mp3"}],
       "transcript": {"@type": "CreativeWork", "text": "PR 12 lands."}}]
    </script><script type="application/ld+json">{not json</script></head><body></body></html>"""
    (episode,) = episodes_of(parse_bytes(page, "https://site.example/ep"))
    assert episode.headline == "Listed"
    assert episode.duration_seconds == 3600
    assert episode.audio_url == "https://a.example/x.mp3"
    assert episode.url == "https://site.example/ep"
    assert numbers(episode) == [12]


# ---------------------------------------------------------------- detection by content


@pytest.mark.parametrize(
    ("name", "source", "content_type", "kind"),
    [
        ("feed-rss.xml", "episode.html", "text/html", "rss"),
        ("feed-atom.xml", "feed.rss", "application/rss+xml", "atom"),
        ("page-dashes.txt", "feed.xml", "application/xml", "page-text"),
        ("page-jsonld.html", "feed.xml", "text/plain", "page-html"),
        ("page-meta.html", "page.txt", None, "page-html"),
    ],
)
def test_kind_comes_from_content_not_name(
    name: str, source: str, content_type: str | None, kind: str
) -> None:
    parsed = parse_bytes((DATA / name).read_bytes(), source, content_type)
    assert parsed.kind == kind


def test_content_type_charset_decodes_a_text_page() -> None:
    text = (DATA / "page-dashes.txt").read_text().replace("…", "...")
    text = text.replace("Good morning", "Grüße")
    parsed = parse_bytes(text.encode("latin-1"), "p", "text/plain; charset=ISO-8859-1")
    assert "Grüße" in parsed.entries[0].transcript


def test_undeclared_legacy_encoding_falls_back_to_cp1252() -> None:
    text = (
        (DATA / "page-dashes.txt")
        .read_text()
        .replace("Good morning", "Caf\u00e9 \u201cquotes\u201d")
    )
    parsed = parse_bytes(text.encode("cp1252"), "p")
    assert "Café “quotes”" in parsed.entries[0].transcript


# ---------------------------------------------------------------- refusing junk


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"  \n\t ", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip"),
        (b"ID3\x04\x00\x00\x00\x00\x00", "MP3"),
        (bytes(range(256)) * 4, "binary"),
        (b"<?xml version='1.0'?><rss><channel><item><title>cut", "malformed XML"),
        (b"<rss><channel><title>A &nbsp; B</title><item><title>x</titel></item>", "malformed XML"),
        (b"<?xml version='1.0'?><note><to>you</to></note>", "not a feed"),
        (b"<rss version='2.0'></rss>", "no <channel>"),
        (b'{"episodes": []}', "not a feed or episode page"),
        (b"Just some prose.\nNothing about episodes here.\n", "not a feed or episode page"),
        (b"<html><body><p>A blog post</p></body></html>", "without a podcast episode"),
        (
            b'<html><head><link rel="alternate" type="application/rss+xml" '
            b'href="https://x.example/feed"></head><body>Hi</body></html>',
            "links the feed https://x.example/feed",
        ),
    ],
)
def test_not_a_feed_raises_one_clear_reason(data: bytes, reason: str) -> None:
    with pytest.raises(FeedParseError) as info:
        parse_bytes(data, "https://x.example/source")
    message = str(info.value)
    assert reason in message
    assert message.startswith("cannot parse https://x.example/source: ")
    assert "\n" not in message


def test_malformed_xml_error_chains_the_cause() -> None:
    with pytest.raises(FeedParseError) as info:
        parse_bytes(b"<rss><channel><item></channel></rss>", "bad.xml")
    assert isinstance(info.value.__cause__, etree.XMLSyntaxError)
    assert "line 1" in info.value.reason


def test_empty_rss_channel_is_a_feed_with_no_entries() -> None:
    parsed = parse_bytes(rss(""), "feed")
    assert parsed.kind == "rss"
    assert parsed.entries == ()


# ---------------------------------------------------------------- hostile XML

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE rss [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title>
<item><title>Bomb &lol9;</title><guid>b</guid><description>&lol9;</description></item>
</channel></rss>"""

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<rss version="2.0"><channel><title>PyTorch</title>
<item><title>Leak &xxe;</title><guid>x</guid><description>before &xxe; after</description></item>
</channel></rss>"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE rss SYSTEM "http://127.0.0.1:9/evil.dtd">
<rss version="2.0"><channel><title>PyTorch</title>
<item><title>Plain</title><guid>d</guid></item></channel></rss>"""


def _all_text(parsed: ParsedSource) -> str:
    return " ".join(
        " ".join([e.title, e.description, e.transcript, parsed.show_title or ""])
        for e in parsed.entries
    )


def test_billion_laughs_does_not_expand() -> None:
    try:
        parsed = parse_bytes(BILLION_LAUGHS, "bomb.xml")
    except FeedParseError:
        return  # refusing is as good as parsing harmlessly
    text = _all_text(parsed)
    assert "lollol" not in text
    assert len(text) < 1000


def test_external_entity_is_not_resolved() -> None:
    try:
        parsed = parse_bytes(XXE, "xxe.xml")
    except FeedParseError:
        return
    text = _all_text(parsed)
    assert "root:" not in text
    (entry,) = parsed.entries
    assert entry.description.startswith("before")
    assert entry.description.endswith("after")


def test_external_dtd_is_not_fetched() -> None:
    parsed = parse_bytes(EXTERNAL_DTD, "dtd.xml")
    assert [e.title for e in parsed.entries] == ["Plain"]


def test_rss_091_public_doctype_parses_without_fetching_it() -> None:
    data = b"""<?xml version="1.0"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"
 "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="0.91"><channel><title>PyTorch</title>
<item><title>Old &amp; fine</title><link>https://briefings.example/091</link></item>
</channel></rss>"""
    (entry,) = parse_bytes(data, "old.rss").entries
    assert entry.title == "Old & fine"
    assert entry.guid == "https://briefings.example/091"


@pytest.mark.parametrize(
    ("guid", "url"),
    [
        ("<guid>https://briefings.example/p</guid>", "https://briefings.example/p"),
        (
            '<guid isPermaLink="true">https://briefings.example/p</guid>',
            "https://briefings.example/p",
        ),
        ('<guid isPermaLink="false">https://briefings.example/p</guid>', None),
        ("<guid>not-a-url</guid>", None),
    ],
)
def test_permalink_guid_stands_in_for_a_missing_link(guid: str, url: str | None) -> None:
    (episode,) = episodes_of(parse_bytes(rss(f"<item><title>T</title>{guid}</item>"), "feed"))
    assert episode.url == url


def test_text_page_from_a_url_is_identified_by_it() -> None:
    data = (DATA / "page-dashes.txt").read_bytes()
    (from_url,) = parse_bytes(data, "https://briefings.example/p/1").entries
    assert from_url.link == "https://briefings.example/p/1"
    assert from_url.guid == "https://briefings.example/p/1#2026-10-05"
    (from_file,) = parse_bytes(data, "/tmp/page.txt").entries
    assert from_file.link is None
    assert from_file.guid is not None and from_file.guid.startswith("sha1:")


def test_a_page_moving_on_to_the_next_episode_gets_a_new_guid() -> None:
    """Same URL, next day's episode: a new guid; same day, corrected title: the same one."""
    data = (DATA / "page-dashes.txt").read_text()
    url = "https://briefings.example/latest"
    (today,) = parse_bytes(data.encode(), url).entries
    retitled = data.replace(data.splitlines()[0], "PyTorch: A Corrected Headline", 1)
    (corrected,) = parse_bytes(retitled.encode(), url).entries
    nextday = data.replace("2026-10-05T13:00:40Z", "2026-10-06T13:00:12Z")
    (tomorrow,) = parse_bytes(nextday.encode(), url).entries
    assert corrected.title != today.title
    assert corrected.guid == today.guid == url + "#2026-10-05"
    assert tomorrow.guid == url + "#2026-10-06"
    undated = "\n".join(line for line in data.splitlines() if not line.startswith("- Published"))
    (first,) = parse_bytes(undated.encode(), url).entries
    (second,) = parse_bytes(undated.replace("PyTorch:", "PyTorch: New", 1).encode(), url).entries
    assert first.guid is not None and first.guid.startswith(url + "#")
    assert second.guid != first.guid


def test_html_page_at_one_url_is_keyed_by_day() -> None:
    def page(day: str, title: str) -> bytes:
        return (
            f"<html><head><title>PyTorch: {title}</title>"
            f'<meta property="article:published_time" content="{day}T13:00:00Z"></head>'
            f"<body><h1>PyTorch: {title}</h1><p>PR 1 lands.</p></body></html>"
        ).encode()

    url = "https://briefings.example/latest"
    (one,) = parse_bytes(page("2026-10-05", "One"), url).entries
    (fixed,) = parse_bytes(page("2026-10-05", "One, fixed"), url).entries
    (two,) = parse_bytes(page("2026-10-06", "Two"), url).entries
    assert one.guid == fixed.guid == url + "#2026-10-05"
    assert two.guid == url + "#2026-10-06"


def test_text_page_url_and_guid_lines_win() -> None:
    text = (
        (DATA / "page-bullets.txt")
        .read_text()
        .replace(
            "  • Show: PyTorch", "  • Show: PyTorch\n  • URL: https://b.example/e\n  • GUID: ep-7"
        )
    )
    (entry,) = parse_bytes(text.encode(), "https://elsewhere.example/x").entries
    assert (entry.guid, entry.link) == ("ep-7", "https://b.example/e")


@pytest.mark.parametrize(
    "data",
    [
        b"<![" * 20_000,
        b"<!DOCTYPE x [" + b"<!ENTITY a 'b'>" * 5_000,
        b"<?xml " * 20_000,
        b"Title\nNearby episodes from " + b" " * 200_000 + b"x\n",
        b"Title\nPublished: 2026-10-05\n" + b"pr" + b" " * 200_000 + b"1\n",
        b"Title\nPublished: 2026-10-05\nTranscript\nPRs 1" + b" for" * 50_000 + b" x\n",
        b"Title\nPublished: 2026-10-05\nTranscript\n" + b"PRs 1, " * 20_000 + b"\n",
        b"<p " + b"a=b " * 50_000,
    ],
)
def test_pathological_input_is_handled(data: bytes) -> None:
    # No timing assertion (the machine is shared): a catastrophic pattern would hang here.
    try:
        parsed = parse_bytes(data, "hostile")
    except FeedParseError as err:
        assert err.reason
        return
    episodes = episodes_of(parsed)
    assert len(episodes) <= 1
    for episode in episodes:
        assert len(episode.pull_requests) <= 200


def test_slack_syntax_kept_as_text_is_escaped_in_the_digest_and_names_its_pr() -> None:
    from digests.render.renderer import Renderer

    description = (
        "<p>Hello <!here>: see <https://github.com/pytorch/pytorch/pull/199960|the fix>.</p>"
    )
    item = (
        "<item><title>PyTorch: T</title><guid>g</guid>"
        f"<description><![CDATA[{description}]]></description></item>"
    )
    (episode,) = episodes_of(parse_bytes(rss(item), "feed"))
    assert numbers(episode) == [199960]
    digest = json.dumps(Renderer().digest(episode))
    assert "&lt;!here&gt;" in digest and "<!here>" not in digest
