"""Relative links resolved as readers resolve them: RSS against the feed's own URL, Atom
under ``xml:base`` (nested too); script and data links refused; guids unchanged."""

from __future__ import annotations

import pytest

from digests.extract.episodes import build_episodes
from digests.models import Episode
from digests.parse import parse_bytes
from digests.parse.links import feed_base, resolve

FEED_URL = "https://briefings.example/shows/pytorch/feed.xml"
PODCAST_NS = "https://podcastindex.org/namespace/1.0"


def rss(items: str, channel: str = "") -> bytes:
    return (
        '<?xml version="1.0"?><rss version="2.0" '
        'xmlns:atom="http://www.w3.org/2005/Atom" '
        f'xmlns:podcast="{PODCAST_NS}">'
        f"<channel><title>PyTorch</title>{channel}{items}</channel></rss>"
    ).encode()


def atom(body: str, base: str = "") -> bytes:
    at = f' xml:base="{base}"' if base else ""
    return (
        f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"{at}>'
        f"<title>PyTorch</title>{body}</feed>"
    ).encode()


def only(data: bytes, source: str = FEED_URL) -> Episode:
    (episode,) = build_episodes(parse_bytes(data, source), "PyTorch", "pytorch/pytorch")
    return episode


def test_rss_item_link_enclosure_and_channel_link_resolve_against_the_feed_url() -> None:
    data = rss(
        "<item><guid>g1</guid><title>One</title><link>blog/post/1</link>"
        '<enclosure url="/audio/ep1.mp3" type="audio/mpeg" length="1"/></item>',
        channel="<link>../../</link>",
    )
    parsed = parse_bytes(data, FEED_URL)
    (entry,) = parsed.entries
    assert entry.link == "https://briefings.example/shows/pytorch/blog/post/1"
    assert entry.audio_url == "https://briefings.example/audio/ep1.mp3"
    assert parsed.link == "https://briefings.example/"


def test_rss_atom_link_in_an_item_resolves_too() -> None:
    data = rss('<item><guid>g</guid><title>T</title><atom:link href="ep/2"/></item>')
    assert only(data).url == "https://briefings.example/shows/pytorch/ep/2"


def test_resolution_never_carries_the_feed_urls_credentials_or_token() -> None:
    data = rss("<item><guid>g</guid><title>T</title><link>#ep3</link></item>")
    url = only(data, "https://me:secret@host.example/feed?auth=TOKEN123").url
    assert url == "https://host.example/feed#ep3"


def test_absolute_links_are_left_alone() -> None:
    data = rss(
        "<item><guid>g</guid><title>T</title><link>https://other.example/x?a=1</link></item>"
    )
    assert only(data).url == "https://other.example/x?a=1"


def test_a_local_file_keeps_relative_links_as_written() -> None:
    data = rss("<item><guid>g</guid><title>T</title><link>blog/post/1</link></item>")
    assert only(data, "/tmp/feed.xml").url == "blog/post/1"


@pytest.mark.parametrize(
    "href",
    ["javascript:alert(1)", " JavaScript:alert(1)", "VBSCRIPT:x", "data:text/html,x"],
)
def test_script_and_data_links_are_refused(href: str) -> None:
    data = rss(
        f"<item><guid>g</guid><title>T</title><link>{href}</link>"
        f'<enclosure url="{href}" type="audio/mpeg"/></item>'
    )
    episode = only(data)
    assert episode.url is None
    assert episode.audio_url is None


def test_a_relative_link_under_a_script_base_is_not_made_a_script() -> None:
    data = atom(
        '<entry xml:base="javascript:alert(1)//"><id>e</id><title>T</title>'
        '<link href="post/1"/></entry>'
    )
    assert only(data).url == "https://briefings.example/shows/pytorch/post/1"


def test_atom_link_resolves_under_xml_base_nested() -> None:
    data = atom(
        '<link href="/home"/>'
        '<entry xml:base="posts/"><id>e1</id><title>One</title>'
        '<link rel="alternate" href="1.html"/>'
        '<link rel="enclosure" type="audio/mpeg" href="../audio/1.mp3"/></entry>'
        '<entry><id>e2</id><title>Two</title><link xml:base="/x/" href="2.html"/></entry>',
        base="https://site.example/blog/",
    )
    parsed = parse_bytes(data, FEED_URL)
    first, second = parsed.entries
    assert first.link == "https://site.example/blog/posts/1.html"
    assert first.audio_url == "https://site.example/blog/audio/1.mp3"
    assert second.link == "https://site.example/x/2.html"
    assert parsed.link == "https://site.example/home"


def test_a_relative_xml_base_resolves_against_the_feed_url() -> None:
    data = atom(
        '<entry xml:base="sub/"><id>e</id><title>T</title><link href="p"/></entry>',
        base="/root/",
    )
    assert only(data).url == "https://briefings.example/root/sub/p"


def test_rss_honours_xml_base_as_well() -> None:
    data = (
        b'<rss version="2.0" xml:base="https://cdn.example/pod/"><channel><title>S</title>'
        b"<item><guid>g</guid><title>T</title><link>ep/1</link></item></channel></rss>"
    )
    assert only(data).url == "https://cdn.example/pod/ep/1"


def test_guids_made_from_links_stay_what_they_were() -> None:
    # An item without a guid is keyed by its link as written: resolving it must not make
    # every such episode new again (a repost in every channel).
    data = rss("<item><title>T</title><link>blog/post/1</link></item>")
    from_url = parse_bytes(data, FEED_URL).entries[0]
    from_file = parse_bytes(data, "feed.xml").entries[0]
    assert from_url.guid == from_file.guid
    assert from_url.link != from_file.link


def test_transcript_and_chapters_links_are_resolved_into_the_entry() -> None:
    data = rss(
        "<item><guid>g</guid><title>T</title>"
        '<podcast:transcript url="t/ep.vtt" type="text/vtt" language="en"/>'
        '<podcast:transcript url="https://x.example/ep.srt" type="application/x-subrip"/>'
        '<podcast:transcript url="javascript:x" type="text/plain"/>'
        '<podcast:chapters url="c/ep.json" type="application/json+chapters"/></item>'
    )
    episode = only(data)
    assert [(t.url, t.type, t.language) for t in episode.transcript_links] == [
        ("https://briefings.example/shows/pytorch/t/ep.vtt", "text/vtt", "en"),
        ("https://x.example/ep.srt", "application/x-subrip", None),
    ]
    assert episode.chapters_url == "https://briefings.example/shows/pytorch/c/ep.json"


def test_new_link_fields_do_not_make_a_posted_digest_stale() -> None:
    plain = rss("<item><guid>g</guid><title>T</title></item>")
    linked = rss(
        '<item><guid>g</guid><title>T</title><podcast:transcript url="t.vtt" type="text/vtt"/>'
        '<podcast:chapters url="c.json"/></item>'
    )
    assert only(plain).content_hash() == only(linked).content_hash()


@pytest.mark.parametrize(
    ("href", "base", "xml_base", "expected"),
    [
        ("a", "https://h.example/d/f", None, "https://h.example/d/a"),
        ("//cdn.example/a", "https://h.example/", None, "https://cdn.example/a"),
        ("a", None, "https://b.example/x/", "https://b.example/x/a"),
        ("a", None, None, "a"),
        ("", "https://h.example/", None, None),
        ("mailto:a@b.example", "https://h.example/", None, "mailto:a@b.example"),
        ("vbscript:x", "https://h.example/", None, None),
        ("java\tscript:alert(1)", "https://h.example/", None, None),
        ("\x01javascript:alert(1)", "https://h.example/", None, None),
        ("a", "https://[::1/", None, None),
    ],
)
def test_resolve_table(href: str, base: str | None, xml_base: str | None, expected: str) -> None:
    assert resolve(href, base, xml_base) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("https://u:p@h.example/f.xml?k=v#x", "https://h.example/f.xml"),
        ("http://h.example", "http://h.example"),
        ("feed.xml", None),
        ("file:///tmp/feed.xml", None),
    ],
)
def test_feed_base(source: str, expected: str | None) -> None:
    assert feed_base(source) == expected
