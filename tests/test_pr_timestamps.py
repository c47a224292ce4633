"""Where in the episode a PR is named: a timed transcript (WebVTT, SubRip, the namespace's
JSON) gives each Key PR line the time it is first named, linked to the audio at that time;
without timings nothing changes. End to end: a feed and its transcripts on loopback, a real
poll posting to the Slack fake, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.extract.timings import format_offset, pr_times
from digests.models import Cue, PrTime
from digests.parse.cues import transcript_cues
from digests.store import Store
from tests.feedserver import FeedServer
from tests.slackfake import SlackFake
from tests.test_delivery_edits import CHANNEL, NOW, TEAM

REPO = "pytorch/pytorch"
AUDIO = "https://cdn.example.test/pytorch/2026-10-05.mp3"
PR = "https://github.com/pytorch/pytorch/pull/"

VTT = """WEBVTT

00:00:02.000 --> 00:00:05.000
<v Host>Welcome back. Today: the autotune cache.

00:01:23.400 --> 00:01:30.000
<v Host>PRs 199720,

00:01:30.000 --> 00:01:36.000
199721 and 199726 move the all-gather layout.

00:03:05.000 --> 00:03:09.000
<v Guest>And PR 199720 again, with the benchmark.
"""

SRT = """1
00:00:02,000 --> 00:00:05,000
Welcome back. Today: the autotune cache.

2
00:01:23,400 --> 00:01:30,000
PRs 199720,

3
00:01:30,000 --> 00:01:36,000
199721 and 199726 move the all-gather layout.
"""

JSON_TRANSCRIPT = json.dumps(
    {
        "version": "1.0.0",
        "segments": [
            {"speaker": "Host", "startTime": 2.0, "endTime": 5.0, "body": "Welcome back."},
            {"speaker": "Host", "startTime": 83.4, "endTime": 90.0, "body": "PRs 199720,"},
            {
                "speaker": "Host",
                "startTime": 90.0,
                "endTime": 96.0,
                "body": "199721 and 199726 move the all-gather layout.",
            },
        ],
    }
)
PLAIN = "Welcome back. PRs 199720, 199721 and 199726 move the all-gather layout."
TYPES = {"text/vtt": VTT, "application/x-subrip": SRT, "application/json": JSON_TRANSCRIPT}


def test_cues_of_each_timed_form_and_none_of_plain_text() -> None:
    for kind, body in TYPES.items():
        cues = transcript_cues(body, kind)
        assert cues[0].start == 2.0 and cues[0].text.startswith("Welcome back.")
        assert [int(c.start) for c in cues][:3] == [2, 83, 90]
        assert cues[1] == Cue(cues[1].start, "PRs 199720,")  # voice tags and line ends out
    assert transcript_cues(PLAIN, "text/plain") == ()
    assert transcript_cues("WEBVTT\n\nnot a cue", "text/vtt") == ()
    assert transcript_cues('{"segments": "nope"}', "application/json") == ()


def test_each_pr_is_timed_by_the_cue_it_is_first_named_in() -> None:
    times = pr_times(transcript_cues(VTT, "text/vtt"), REPO)
    # The list starts in one cue and goes on in the next: each number in the cue it is in.
    assert times == (
        PrTime(PR + "199720", 83),
        PrTime(PR + "199721", 90),
        PrTime(PR + "199726", 90),
    )
    assert pr_times((), REPO) == ()
    assert [format_offset(s) for s in (0, 83, 600, 3723)] == ["0:00", "1:23", "10:00", "1:02:03"]


def feed(transcript_type: str) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0">
  <channel><title>PyTorch</title>
    <item>
      <title>PyTorch: All-Gather Layout</title>
      <guid isPermaLink="false">pytorch-2026-10-05</guid>
      <link>https://example.test/pytorch/2026-10-05</link>
      <pubDate>Mon, 05 Oct 2026 13:00:00 GMT</pubDate>
      <enclosure url="{AUDIO}" type="audio/mpeg" length="1000"/>
      <description>PRs 199720, 199721 and 199726 move the all-gather layout.</description>
      <podcast:transcript url="/t" type="{transcript_type}"/>
    </item>
  </channel>
</rss>""".encode()


@pytest.mark.parametrize("kind", sorted(TYPES))
async def test_key_prs_carry_the_time_they_are_named_linked_to_the_audio(
    kind: str,
    feed_server: FeedServer,
    store: Store,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    await _poll(feed_server, store, deliverer, http, kind, TYPES[kind])
    (digest,) = [m for m in slack_fake.messages(CHANNEL) if not m.get("thread_ts")]
    blocks = json.dumps(digest["blocks"], ensure_ascii=False)
    # The three PRs share one sentence (one line); the line is timed by its first PR.
    assert f"<{AUDIO}#t=83|▶ 1:23>" in blocks
    # Stored with the episode: the next poll reads the same times back, nothing is edited.
    (episode,) = store.recent(1, ["PyTorch"])
    assert [(t.url, t.at) for t in episode.pr_times] == [
        (PR + "199720", 83),
        (PR + "199721", 90),
        (PR + "199726", 90),
    ]
    later = NOW + timedelta(minutes=15)
    settings = _settings(feed_server)
    again = await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)
    assert again.delivery.posted == [] and again.delivery.updated == []
    assert slack_fake.calls_to("chat.update") == []


async def test_without_timings_nothing_changes(
    feed_server: FeedServer,
    store: Store,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    await _poll(feed_server, store, deliverer, http, "text/plain", PLAIN)
    messages = json.dumps([m["blocks"] for m in slack_fake.messages(CHANNEL)], ensure_ascii=False)
    assert "199720" in messages and "▶" not in messages and "#t=" not in messages
    (episode,) = store.recent(1, ["PyTorch"])
    assert episode.pr_times == ()


def _settings(feed_server: FeedServer) -> Settings:
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=feed_server.url("/feed.xml"), repo=REPO)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        thread_replies=True,
    )


async def _poll(
    feed_server: FeedServer,
    store: Store,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
    kind: str,
    body: str,
    feed_body: bytes | None = None,
) -> None:
    """The feed (``feed_body``, else ``feed(kind)``) and its transcript served, the show's
    channel subscribed, one poll that posts one digest."""
    feed_server.route("/t", body, content_type=kind)
    feed_server.route("/feed.xml", feed_body or feed(kind))
    store.ensure_show("PyTorch", "", REPO)
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    report = await run_once(
        _settings(feed_server), store, deliverer.outbox, http, NOW, deliverer=deliverer
    )
    assert report.errors == [] and len(report.delivery.posted) == 1


CHAPTERS = json.dumps(
    {
        "version": "1.2.0",
        "chapters": [
            {"startTime": 0, "title": "Intro"},
            {"startTime": 60, "title": "Sponsor", "toc": False},
            {"startTime": 80, "title": "All-gather layout", "url": "https://example.test/ag"},
            {"startTime": 95, "title": "Wrap-up"},
        ],
    }
)


def before_transcript(body: bytes, element: str) -> bytes:
    """``body`` with ``element`` written in the item, before its transcript link."""
    return body.replace(b"<podcast:transcript", element.encode() + b"<podcast:transcript")


def chaptered_feed() -> bytes:
    return before_transcript(
        feed("text/vtt"),
        '<podcast:chapters url="/chapters.json" type="application/json+chapters"/>',
    )


async def test_chapters_go_in_the_thread_with_the_prs_named_in_each(
    feed_server: FeedServer,
    store: Store,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    feed_server.route("/chapters.json", CHAPTERS, content_type="application/json+chapters")
    await _poll(feed_server, store, deliverer, http, "text/vtt", VTT, chaptered_feed())
    (thread,) = [m for m in slack_fake.messages(CHANNEL) if m.get("thread_ts")]
    lines = json.dumps(thread["blocks"], ensure_ascii=False)
    assert thread["text"].startswith("Chapters and transcript: ")
    assert f"<{AUDIO}#t=0|▶ 0:00> Intro" in lines
    assert "Sponsor" not in lines  # "toc": false
    # 199720 at 1:23 and 199721/199726 at 1:30 fall in the chapter from 1:20 to 1:35.
    assert (
        f"<{AUDIO}#t=80|▶ 1:20> <https://example.test/ag|All-gather layout> — "
        f"<{PR}199720|#199720>, <{PR}199721|#199721>, <{PR}199726|#199726>"
    ) in lines
    assert f"<{AUDIO}#t=95|▶ 1:35> Wrap-up" in lines
    (chapters,) = [b["text"]["text"] for b in thread["blocks"] if "▶ 0:00" in str(b)]
    assert [line[:12] for line in chapters.splitlines()] == ["• <" + AUDIO[:9]] * 3
    (episode,) = store.recent(1, ["PyTorch"])
    assert [c.title for c in episode.chapters] == ["Intro", "All-gather layout", "Wrap-up"]

    # Read back from the store on the next poll: not fetched again, nothing edited.
    later = NOW + timedelta(minutes=15)
    settings = _settings(feed_server)
    again = await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)
    assert again.delivery.updated == [] and slack_fake.calls_to("chat.update") == []
    assert len(feed_server.requests_to("/chapters.json")) == 1


async def test_a_chapters_link_to_a_private_address_is_never_fetched(
    feed_server: FeedServer,
    store: Store,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    with FeedServer() as other:
        other.route("/chapters.json", CHAPTERS, content_type="application/json")
        link = f'<podcast:chapters url="{other.url("/chapters.json")}" type="application/json"/>'
        body = before_transcript(feed("text/plain"), link)
        await _poll(feed_server, store, deliverer, http, "text/plain", PLAIN, body)
        assert other.requests_to("/chapters.json") == []
    messages = json.dumps(slack_fake.messages(CHANNEL), ensure_ascii=False)
    assert "Chapters" not in messages


PSC = (
    '<psc:chapters version="1.2" xmlns:psc="http://podlove.org/simple-chapters">'
    '<psc:chapter start="00:00:00.000" title="Intro"/>'
    '<psc:chapter start="01:20" title="All-gather layout" href="https://example.test/ag"/>'
    '<psc:chapter start="95.5" title="Wrap-up"/>'
    '<psc:chapter start="soon" title="Not a time"/>'
    "</psc:chapters>"
)


def test_podlove_simple_chapters_are_read_from_the_item() -> None:
    from digests.extract.episodes import build_episodes
    from digests.parse import parse_bytes
    from digests.parse.chapters import npt_seconds

    assert [npt_seconds(v) for v in ("01:02:03.500", "02:03", "83", "1:2:3:4", "")] == [
        3723, 123, 83, None, None,
    ]
    body = before_transcript(feed("text/vtt"), PSC)
    (episode,) = build_episodes(parse_bytes(body, "https://example.test/feed.xml"), "PyTorch", REPO)
    assert [(c.start, c.title, c.url) for c in episode.chapters] == [
        (0, "Intro", None),
        (80, "All-gather layout", "https://example.test/ag"),
        (95, "Wrap-up", None),
    ]
    # Undeclared, as podcast apps read it: the lenient reader binds the psc prefix.
    bare = body.replace(b' xmlns:psc="http://podlove.org/simple-chapters"', b"")
    (lenient,) = build_episodes(parse_bytes(bare, "https://example.test/feed.xml"), "PyTorch", REPO)
    assert lenient.chapters == episode.chapters


async def test_podlove_chapters_go_in_the_thread_with_their_prs(
    feed_server: FeedServer,
    store: Store,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    body = before_transcript(feed("text/vtt"), PSC)
    await _poll(feed_server, store, deliverer, http, "text/vtt", VTT, body)
    (thread,) = [m for m in slack_fake.messages(CHANNEL) if m.get("thread_ts")]
    lines = json.dumps(thread["blocks"], ensure_ascii=False)
    assert (
        f"<{AUDIO}#t=80|▶ 1:20> <https://example.test/ag|All-gather layout> — "
        f"<{PR}199720|#199720>, <{PR}199721|#199721>, <{PR}199726|#199726>"
    ) in lines
    assert "Not a time" not in lines
