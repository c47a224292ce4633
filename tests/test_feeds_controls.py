"""C0 control characters in a feed's text (issue 25): the item is read as a podcast app
reads it, each control deleted — a form feed, whitespace in HTML, read as a space — and
everything else as the same feed without them. In the strict path (a well-formed feed whose
show notes refer to controls: lxml's HTML path, the tag-by-tag and simple paths) and in the
lenient reader (controls raw or referred to in the XML itself), RSS and Atom, on the command
line (``main(argv, stdout)``) and through a real poll.

Deleted, not replaced by a space, because that is what ``html.unescape`` (HTML's reading of
a reference to a control) already gives on the paths that read most show notes without
lxml: every path now gives the same text for the same markup.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from digests.extract.episodes import build_episodes
from digests.models import Episode
from digests.parse import parse_bytes
from digests.parse import text as t
from tests.fixtures.cli import parsed_json
from tests.fixtures.control import CHANNEL, START, Rig

_NS = (
    'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" '
    'xmlns:content="http://purl.org/rss/1.0/modules/content/"'
)
_PR = "https://github.com/pytorch/pytorch/pull/"


def _rss(items: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" {_NS}><channel>'
        f"<title>PyTorch</title><link>https://pod.test/</link>{items}</channel></rss>\n"
    )


def _atom(entries: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        '<title>PyTorch</title><link href="https://pod.test/"/>'
        f"{entries}</feed>\n"
    )


# Each feed with placeholders: {X} a control (deleted), {F} a form feed (a space); written
# as the flawed feed spells them and as the clean feed reads.
STRICT_RSS = _rss(
    "<item><title>PyTorch: Fusion week</title><guid>s-1</guid>"
    "<link>https://pod.test/ep/s-1</link><pubDate>Thu, 01 Oct 2026 09:30:00 GMT</pubDate>"
    "<itunes:duration>31:05</itunes:duration>"
    f'<description><![CDATA[<p>Fused{{X}} kernels{{F}}land in <a href="{_PR}201001">the '
    "fusion PR</a>.</p><ul><li>Guards{X} stay</li></ul>]]></description>"
    f'<content:encoded>&lt;p&gt;Then{{XE}} PR 201002 &lt;a href="{_PR}201003"&gt;rewrites'
    "&lt;/a&gt; the{FE}planner.&lt;/p&gt;&lt;table&gt;&lt;tr&gt;&lt;td&gt;Cell{XE} one"
    "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;</content:encoded></item>"
    "<item><title>PyTorch: Plain notes</title><guid>s-2</guid>"
    "<link>https://pod.test/ep/s-2</link><pubDate>Wed, 30 Sep 2026 09:30:00 GMT</pubDate>"
    "<description><![CDATA[<p>Plain{X} notes: PR 201004{F}lands.</p>]]></description></item>"
)
LENIENT_RSS = _rss(
    "<item><title>PyTorch: Graph{R} breaks{RF}fixed{X}</title><guid>l-1</guid>"
    "<link>https://pod.test/ep/l-1</link><pubDate>Thu, 01 Oct 2026 09:30:00 GMT</pubDate>"
    "<itunes:duration>12:00</itunes:duration>"
    "<description>Dynamo{X}s guards{F}and PR 201005{R}.</description>"
    f'<content:encoded><![CDATA[<p>Raw{{R}} notes link <a href="{_PR}201006">a PR</a>'
    "{RF}too.</p>]]></content:encoded></item>"
    "<item><title>PyTorch: Next</title><guid>l-2</guid><link>https://pod.test/ep/l-2</link>"
    "<pubDate>Wed, 30 Sep 2026 09:30:00 GMT</pubDate>"
    "<description>Untouched: PR 201007.</description></item>"
)
STRICT_ATOM = _atom(
    "<entry><title>PyTorch: Atom notes</title><id>tag:pod.test,2026:a-1</id>"
    '<link href="https://pod.test/ep/a-1"/><updated>2026-10-01T09:30:00Z</updated>'
    f'<content type="html">&lt;p&gt;Fused{{XE}} kernels{{FE}}land in &lt;a href="{_PR}201008"'
    "&gt;the PR&lt;/a&gt;.&lt;/p&gt;</content></entry>"
)
LENIENT_ATOM = _atom(
    "<entry><title>PyTorch: Atom{X} raw{R}</title><id>tag:pod.test,2026:a-2</id>"
    '<link href="https://pod.test/ep/a-2"/><updated>2026-10-01T09:30:00Z</updated>'
    "<summary>Raw{R} text{RF}and PR 201009{X}.</summary></entry>"
    "<entry><title>PyTorch: Atom next</title><id>tag:pod.test,2026:a-3</id>"
    '<link href="https://pod.test/ep/a-3"/><updated>2026-09-30T09:30:00Z</updated>'
    "<summary>Untouched: PR 201010.</summary></entry>"
)

# {X}: a reference to a control in the XML (or, in CDATA, in the markup); {XE}: one in
# escaped markup; {R}: the control raw; {F}, {FE}, {RF}: a form feed so.
FLAWED = {
    "{X}": "&#1;",
    "{XE}": "&amp;#x2;",
    "{R}": "\x01\x08\x0b\x1b\x1f",
    "{F}": "&#12;",
    "{FE}": "&amp;#xC;",
    "{RF}": "\x0c",
}
CLEAN = {"{X}": "", "{XE}": "", "{R}": "", "{F}": " ", "{FE}": " ", "{RF}": " "}


def _spelled(feed: str, table: dict[str, str]) -> bytes:
    for mark, value in table.items():
        feed = feed.replace(mark, value)
    return feed.encode()


FEEDS = {
    "rss, strict": (STRICT_RSS, 2, ()),
    "rss, lenient": (LENIENT_RSS, 2, ("invalid character reference &#1;", "control characters")),
    "atom, strict": (STRICT_ATOM, 1, ()),
    "atom, lenient": (LENIENT_ATOM, 2, ("invalid character reference &#1;", "control characters")),
}


@pytest.mark.parametrize("name", list(FEEDS))
def test_each_item_reads_as_without_its_controls_on_the_command_line(
    name: str, tmp_path: Path
) -> None:
    feed, count, notes = FEEDS[name]
    flawed = parsed_json(_spelled(feed, FLAWED), tmp_path / "flawed.xml")
    clean = parsed_json(_spelled(feed, CLEAN), tmp_path / "clean.xml")
    assert len(flawed) == count
    assert flawed == clean
    parsed = parse_bytes(_spelled(feed, FLAWED), "feed.xml")
    assert all(note in parsed.lenient for note in notes)
    assert parse_bytes(_spelled(feed, CLEAN), "feed.xml").lenient == ()


def test_the_text_is_read_right() -> None:
    episodes = _episodes(STRICT_RSS)
    assert episodes["s-1"].summary.startswith(
        f"Fused kernels land in the fusion PR ({_PR}201001). - Guards stay"
    )
    assert [pr.number for pr in episodes["s-1"].pull_requests] == [201001, 201002, 201003]
    assert "Then PR 201002 rewrites" in episodes["s-1"].transcript
    assert "Cell one" in episodes["s-1"].transcript
    episodes = _episodes(LENIENT_RSS)
    assert episodes["l-1"].title == "PyTorch: Graph breaks fixed"
    assert episodes["l-1"].summary.startswith("Dynamos guards and PR 201005.")
    assert [pr.number for pr in episodes["l-1"].pull_requests] == [201005, 201006]


def _episodes(feed: str) -> dict[str, Episode]:
    parsed = parse_bytes(_spelled(feed, FLAWED), "feed.xml")
    return {e.guid: e for e in build_episodes(parsed, "PyTorch", "pytorch/pytorch")}


_MARKUP = [
    f'<p>Fused{{c}} kernels <a href="{_PR}7">x</a></p>',  # lxml's path: a PR link
    f'<p>a{{c}}b</p><ul><li>c{{c}}d</li></ul><a href="{_PR}7">#7</a>',
    "<table><tr><td>a{c}b</td></tr></table>",  # lxml's path, a text it leaves as it is
    "<p>a{c}b</p><script>x</script>",  # lxml's path, no link
    "<p>a{c}b</p>",  # the simple path
    "a{c}b &amp; c",  # plain text with a reference
]


@pytest.mark.parametrize("markup", _MARKUP)
@pytest.mark.parametrize(
    ("control", "clean"),
    [("&#1;", ""), ("&#x1F;", ""), ("&#11;", ""), ("&#12;", " "), ("\x01", ""), ("\x0b", "")],
)
def test_markup_reads_as_without_its_controls(markup: str, control: str, clean: str) -> None:
    if control.startswith("&"):
        # (Raw, a control reaches the paths without lxml only from a JSON feed or a page:
        # no XML parser gives one.)
        expected = t.to_text(markup.replace("{c}", clean))
        assert t.to_text(markup.replace("{c}", control)) == expected
    assert t._lxml_html_to_text(markup.replace("{c}", control)) == t._lxml_html_to_text(
        markup.replace("{c}", clean)
    )


async def test_an_item_with_controls_is_posted(rig: Rig) -> None:
    rig.feed.route("/feed.xml", _spelled(STRICT_RSS, FLAWED))
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    assert rig.posted() == ["PyTorch:s-1"]
    shown = json.dumps(rig.fake.messages(CHANNEL), ensure_ascii=False)
    assert "#201001" in shown and "#201003" in shown
    assert "\\u0001" not in shown and "\\u0002" not in shown
