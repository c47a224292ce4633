"""Feeds as hand-made and CMS feeds are written: each common flaw read right —
title, summary, link, date, duration, PRs — on the command line (``main(argv, stdout)``)
and through a real poll that posts to the Slack fake; the show's ``status`` and ``why`` say
the feed was read leniently. A document cut off mid-item posts its complete items, and the
cut item once, whole, after the feed is repaired.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from bot.jobs.pipeline import poll_show
from config.settings import ShowConfig
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.app import make_settings
from tests.fixtures.cli import run_cli
from tests.fixtures.control import CHANNEL, START, Rig

ITUNES = 'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"'


@dataclass(frozen=True)
class Flawed:
    """A feed with one flaw, and the one episode it must read as."""

    data: bytes
    guid: str
    title: str
    summary: str  # a phrase the summary holds, whitespace squashed
    url: str
    published: str  # as the CLI's JSON says it
    duration: int | None
    prs: tuple[int, ...]
    lenient: str | None  # a phrase of the status line; None: the XML is well-formed


def _rss(item: str, *, head: str = "", attrs: str = ITUNES) -> bytes:
    return (
        f'{head}<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" {attrs}><channel>'
        f"<title>PyTorch</title><link>https://pod.test/</link>{item}</channel></rss>\n"
    ).encode()


FLAWS: dict[str, Flawed] = {
    "html entities": Flawed(
        _rss(
            "<item><title>PyTorch: Caf&eacute; chat&nbsp;&mdash; the compiler&rsquo;s "
            "week&hellip;</title><guid>ent-1</guid><link>https://pod.test/ep/ent-1</link>"
            "<pubDate>Thu, 01 Oct 2026 09:30:00 GMT</pubDate>"
            "<itunes:duration>31:05</itunes:duration>"
            "<description>Inductor&nbsp;fusion lands in PR 200101&nbsp;&ndash; "
            "r&eacute;sum&eacute; at 11.</description></item>"
        ),
        "ent-1",
        "PyTorch: Café chat — the compiler’s week…",
        "Inductor fusion lands in PR 200101 – résumé at 11.",
        "https://pod.test/ep/ent-1",
        "2026-10-01T09:30:00Z",
        1865,
        (200101,),
        "undeclared entity &eacute;",
    ),
    "bare ampersands": Flawed(
        _rss(
            "<item><title>PyTorch: Q&A on autograd & compile</title><guid>amp-1</guid>"
            "<link>https://pod.test/ep?id=2&lang=en</link>"
            "<pubDate>Thu, 01 Oct 2026 09:31:00 GMT</pubDate>"
            "<itunes:duration>12:00</itunes:duration>"
            '<enclosure url="https://cdn.pod.test/a.mp3?id=2&sig=x" type="audio/mpeg"/>'
            "<description>Q&A: PR 200202 & PR 200203 land.</description></item>"
        ),
        "amp-1",
        "PyTorch: Q&A on autograd & compile",
        "PR 200202 & PR 200203 land.",
        "https://pod.test/ep?id=2&lang=en",
        "2026-10-01T09:31:00Z",
        720,
        (200202, 200203),
        "bare & in text",
    ),
    "undeclared prefixes": Flawed(
        _rss(
            "<item><title>PyTorch: Prefixes</title><guid>ns-1</guid>"
            "<link>https://pod.test/ep/ns-1</link>"
            "<pubDate>Thu, 01 Oct 2026 09:32:00 GMT</pubDate>"
            "<itunes:duration>01:02:03</itunes:duration>"
            "<description>Distributed checkpointing, PR 200301.</description>"
            "<content:encoded><![CDATA[<p>Then PR 200302 rewrites the planner.</p>]]>"
            "</content:encoded></item>",
            attrs="",
        ),
        "ns-1",
        "PyTorch: Prefixes",
        "Distributed checkpointing, PR 200301.",
        "https://pod.test/ep/ns-1",
        "2026-10-01T09:32:00Z",
        3723,
        (200301, 200302),
        "undeclared prefix itunes:",
    ),
    "atom 0.3": Flawed(
        b'<?xml version="1.0" encoding="utf-8"?>\n'
        b'<feed version="0.3" xmlns="http://purl.org/atom/ns#" ' + ITUNES.encode() + b">"
        b'<title>PyTorch</title><link rel="alternate" type="text/html" href="https://pod.test/"/>'
        b"<entry><title>PyTorch: Old Atom</title>"
        b'<link rel="alternate" type="text/html" href="https://pod.test/ep/atom03"/>'
        b"<id>tag:pod.test,2026:atom03</id><issued>2026-10-01T09:33:00Z</issued>"
        b"<modified>2026-10-02T10:00:00Z</modified><itunes:duration>600</itunes:duration>"
        b'<content type="text/html" mode="escaped">&lt;p&gt;Escaped HTML: PR 200404 '
        b"&lt;b&gt;lands&lt;/b&gt;.&lt;/p&gt;</content></entry></feed>",
        "tag:pod.test,2026:atom03",
        "PyTorch: Old Atom",
        "Escaped HTML: PR 200404 lands.",
        "https://pod.test/ep/atom03",
        "2026-10-01T09:33:00Z",
        600,
        (200404,),
        None,
    ),
    "windows-1252 bytes": Flawed(
        _rss(
            "<item><title>PyTorch: {q}Graph breaks{p} {d} fixed</title><guid>cp-1</guid>"
            "<link>https://pod.test/ep/cp-1</link>"
            "<pubDate>Thu, 01 Oct 2026 09:34:00 GMT</pubDate>"
            "<itunes:duration>5:00</itunes:duration>"
            "<description>Dynamo{a}s guards: PR 200505.</description></item>"
        )
        .replace(b"{q}", b"\x93")
        .replace(b"{p}", b"\x94")
        .replace(b"{d}", b"\x96")
        .replace(b"{a}", b"\x92"),
        "cp-1",
        "PyTorch: “Graph breaks” – fixed",
        "Dynamo’s guards: PR 200505.",
        "https://pod.test/ep/cp-1",
        "2026-10-01T09:34:00Z",
        300,
        (200505,),
        "read as Windows-1252",
    ),
    "netscape rss 0.91": Flawed(
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        b'<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"\n'
        b' "http://my.netscape.com/publish/formats/rss-0.91.dtd">\n'
        b'<rss version="0.91" ' + ITUNES.encode() + b"><channel><title>PyTorch</title>"
        b"<link>https://pod.test/</link><language>en</language>"
        b"<item><title>PyTorch: R&eacute;sum&eacute; of the week</title>"
        b"<link>https://pod.test/ep/091</link>"
        b"<pubDate>Thu, 01 Oct 2026 09:35:00 GMT</pubDate>"
        b"<itunes:duration>42</itunes:duration>"
        b"<description>Na&iuml;ve kernels go: PR 200606.</description></item>"
        b"</channel></rss>",
        "https://pod.test/ep/091",
        "PyTorch: Résumé of the week",
        "Naïve kernels go: PR 200606.",
        "https://pod.test/ep/091",
        "2026-10-01T09:35:00Z",
        42,
        (200606,),
        "undeclared entity &eacute;",
    ),
    "text before the declaration": Flawed(
        _rss(
            "<item><title>PyTorch: Leading junk</title><guid>ws-1</guid>"
            "<link>https://pod.test/ep/ws-1</link>"
            "<pubDate>Thu, 01 Oct 2026 09:36:00 GMT</pubDate>"
            "<itunes:duration>7:07</itunes:duration>"
            "<description>The CMS warns first; PR 200707 still lands.</description></item>",
            head="\r\n \tWarning: cache miss in feed.php\n",
        ),
        "ws-1",
        "PyTorch: Leading junk",
        "PR 200707 still lands.",
        "https://pod.test/ep/ws-1",
        "2026-10-01T09:36:00Z",
        427,
        (200707,),
        "text before the XML declaration",
    ),
    "no title, no guid": Flawed(
        _rss(
            "<item><link>https://pod.test/episodes/kernel-fusion-deep-dive</link>"
            "<pubDate>Thu, 01 Oct 2026 09:37:00 GMT</pubDate>"
            "<itunes:duration>20:00</itunes:duration>"
            '<enclosure url="https://cdn.pod.test/fusion.mp3" type="audio/mpeg" length="9"/>'
            "<description>Fusion everywhere: PR 200808.</description></item>"
        ),
        "https://cdn.pod.test/fusion.mp3",
        "",
        "Fusion everywhere: PR 200808.",
        "https://pod.test/episodes/kernel-fusion-deep-dive",
        "2026-10-01T09:37:00Z",
        1200,
        (200808,),
        None,
    ),
}


def _headline(flawed: Flawed) -> str:
    # A titleless item's comes from its link.
    return flawed.title.removeprefix("PyTorch: ") or "Kernel fusion deep dive"


def _squashed(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("name", list(FLAWS))
def test_each_flaw_reads_right_on_the_command_line(name: str, tmp_path: Path) -> None:
    flawed = FLAWS[name]
    path = tmp_path / "feed.xml"
    path.write_bytes(flawed.data)
    result = run_cli("parse", str(path), "--json", "--repo", "pytorch/pytorch")
    assert result.returncode == 0, result.stderr
    (episode,) = json.loads(result.stdout)
    assert episode["guid"] == flawed.guid
    assert episode["title"] == flawed.title
    assert flawed.summary in _squashed(episode["summary"])
    assert episode["url"] == flawed.url
    assert episode["published_at"] == flawed.published
    assert episode["duration_seconds"] == flawed.duration
    assert tuple(pr["number"] for pr in episode["pull_requests"]) == flawed.prs
    assert episode["headline"] == _headline(flawed)


@pytest.mark.parametrize("name", list(FLAWS))
async def test_each_flaw_reads_right_through_a_poll(
    name: str, rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    flawed = FLAWS[name]
    rig.feed.route("/feed.xml", flawed.data)
    rig.slash("subscribe PyTorch")
    with caplog.at_level(logging.INFO, logger="bot"):
        await rig.poll(START)
    assert rig.posted() == [f"PyTorch:{flawed.guid}"]
    (posted,) = rig.fake.messages(CHANNEL)
    shown = json.dumps(posted, ensure_ascii=False)
    assert _headline(flawed).replace("&", "&amp;") in shown
    for number in flawed.prs:
        assert f"#{number}" in shown
    assert flawed.url.replace("&", "&amp;") in shown
    stored = rig.store.episode("PyTorch", flawed.guid)
    assert stored is not None
    assert (stored.title, stored.url, stored.duration_seconds) == (
        flawed.title,
        flawed.url,
        flawed.duration,
    )
    assert stored.published_at.isoformat().replace("+00:00", "Z") == flawed.published
    assert flawed.summary in _squashed(stored.summary)

    status = "\n".join(rig.slash("status"))
    why = "\n".join(rig.slash(f"why <{flawed.url}>"))
    said = [r.getMessage() for r in caplog.records if "read leniently" in r.getMessage()]
    if flawed.lenient is None:
        assert "leniently" not in status and "leniently" not in why and said == []
        return
    line = status.replace("&amp;", "&").split("\n")[-1]
    assert line.startswith("Its XML has errors (") and line.endswith("); read leniently")
    assert flawed.lenient in line
    assert "read leniently" in why
    assert len(said) == 1 and flawed.lenient in said[0]
    # Never a notice in the channel: only the digest was posted there.
    assert len(rig.fake.messages(CHANNEL)) == 1


async def test_the_operator_hears_once_and_again_when_it_changes(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.slash("subscribe PyTorch")
    flawed = FLAWS["html entities"].data
    with caplog.at_level(logging.INFO, logger="bot"):
        for n, data in enumerate([flawed, flawed, flawed.replace(b"&nbsp;", b" ")]):
            rig.feed.route("/feed.xml", data + b" " * n)  # a new body each time: not a 304
            await rig.poll(START + timedelta(minutes=20 * n))
        rig.feed.route("/feed.xml", _rss(""))
        await rig.poll(START + timedelta(hours=2))
    said = [r.getMessage() for r in caplog.records if "PyTorch: its XML" in r.getMessage()]
    assert said == [
        "feed PyTorch: its XML has errors (undeclared entity &eacute;, undeclared entity "
        "&nbsp;, undeclared entity &mdash;…); read leniently",
        "feed PyTorch: its XML has errors (undeclared entity &eacute;, undeclared entity "
        "&mdash;, undeclared entity &rsquo;…); read leniently",
        "feed PyTorch: its XML is well-formed again",
    ]
    assert "leniently" not in "\n".join(rig.slash("status"))


CUT_ITEMS = [
    (
        f"<item><title>PyTorch: Part {n}</title><guid>cut-{n}</guid>"
        f"<link>https://pod.test/ep/cut-{n}</link>"
        f"<pubDate>Thu, 01 Oct 2026 {8 + n:02d}:00:00 GMT</pubDate>"
        f"<itunes:duration>10:0{n}</itunes:duration>"
        f"<description>Part {n} lands PR {200900 + n}; then PR {200950 + n}.</description>"
        "</item>"
    )
    for n in (1, 2, 3, 4, 5)  # oldest first, as feeds that append do: the newest is cut
]


async def test_a_cut_off_feed_posts_its_complete_items_and_the_cut_one_once_repaired(
    rig: Rig,
) -> None:
    rig.slash("subscribe PyTorch")
    rig.feed.route("/feed.xml", _rss("".join(CUT_ITEMS[:2])))  # parts 1 and 2
    await rig.poll(START)
    assert rig.posted() == ["PyTorch:cut-2"]  # a first poll posts the newest

    whole = _rss("".join(CUT_ITEMS))
    cut = whole[: whole.index(b"<description>Part 5")]  # mid-item: part 5 has no end
    rig.feed.route("/feed.xml", cut)
    await rig.poll(START + timedelta(minutes=20))
    assert sorted(rig.posted()) == ["PyTorch:cut-2", "PyTorch:cut-3", "PyTorch:cut-4"]
    assert rig.store.episode("PyTorch", "cut-5") is None
    assert "cut off" in "\n".join(rig.slash("status"))

    rig.feed.route("/feed.xml", whole)
    await rig.poll(START + timedelta(minutes=40))
    await rig.poll(START + timedelta(minutes=60))
    posted = rig.posted()
    assert sorted(posted) == [f"PyTorch:cut-{n}" for n in (2, 3, 4, 5)]
    assert posted[-1] == "PyTorch:cut-5"
    last = json.dumps(rig.fake.messages(CHANNEL)[-1])
    assert "#200905" in last and "#200955" in last  # whole: its description's both PRs
    stored = rig.store.episode("PyTorch", "cut-5")
    assert stored is not None and stored.duration_seconds == 605
    assert "leniently" not in "\n".join(rig.slash("status"))


async def test_a_poll_of_a_flawed_feed_says_so_to_the_metrics(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    """digestbot_feed_lenient_reads counts PollResult.lenient: the poll must set it."""
    flawed_url = feed_server.route("/flawed.xml", FLAWS["html entities"].data)
    item = "<item><title>PyTorch: Fine</title><guid>ok-1</guid><link>https://pod.test/ok</link>"
    fine_url = feed_server.route("/fine.xml", _rss(item + "</item>"))
    settings = make_settings("http://127.0.0.1:9/api/")
    flawed = await poll_show(
        settings, store, http, ShowConfig(name="PyTorch", feed=flawed_url), START
    )
    fine = await poll_show(settings, store, http, ShowConfig(name="Other", feed=fine_url), START)
    assert (flawed.status, flawed.lenient) == ("ok", True)
    assert (fine.status, fine.lenient) == ("ok", False)
