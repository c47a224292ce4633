"""Hostile feed items: a date no datetime can hold is no date, text no
encoder can take is replaced where it is parsed, and an item no column can take is skipped
with a logged reason while the rest of the feed is stored (SQLite, PostgreSQL)."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.ingest import storable
from bot.jobs.pipeline import run_once, store_episodes
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.extract.episodes import build_episodes
from digests.models import UNKNOWN_DATE, Episode
from digests.parse import parse_bytes
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.fixtures.store import SAMPLE_NOW
from tests.slackfake import SlackFake

TEAM = "T1"
DAY_AHEAD = "2026-10-02T09:02:11+24:00"


def _rss(date: str) -> bytes:
    return f"""<?xml version="1.0"?><rss version="2.0"><channel><title>S</title>
<item><guid>odd</guid><title>Odd date</title><pubDate>{date}</pubDate></item>
<item><guid>fine</guid><title>Fine date</title><pubDate>2026-10-01T09:00:00Z</pubDate></item>
</channel></rss>""".encode()


def _atom(date: str) -> bytes:
    return f"""<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>S</title>
<entry><id>odd</id><title>Odd date</title><published>{date}</published></entry>
<entry><id>fine</id><title>Fine date</title><published>2026-10-01T09:00:00Z</published></entry>
</feed>""".encode()


def _json_feed(date: str) -> bytes:
    items = [
        {"id": "odd", "title": "Odd date", "content_text": "x", "date_published": date},
        {"id": "fine", "title": "Fine", "content_text": "x", "date_published": "2026-10-01"},
    ]
    return json.dumps({"version": "https://jsonfeed.org/version/1.1", "items": items}).encode()


@pytest.mark.parametrize("document", [_rss, _atom, _json_feed])
@pytest.mark.parametrize(
    "date", [DAY_AHEAD, "2026-10-02T09:02:11-24:00", "2026-10-02T09:02:11+99:59"]
)
def test_a_date_no_datetime_can_hold_is_no_date(document: object, date: str) -> None:
    assert callable(document)
    parsed = parse_bytes(document(date), "https://feeds.example/s")
    by_guid = {e.guid: e for e in build_episodes(parsed, "S", "o/r")}
    assert by_guid["odd"].published_at == UNKNOWN_DATE
    assert by_guid["fine"].published_at.year == 2026


ODD_ITEM = f"""
    <item>
      <title>PyTorch: A Day Ahead</title>
      <guid isPermaLink="false">pytorch-day-ahead</guid>
      <pubDate>{DAY_AHEAD}</pubDate>
      <description>Dated a whole day east of UTC.</description>
    </item>"""


async def test_a_poll_goes_on_past_a_date_no_datetime_can_hold(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(ODD_ITEM, rss_item(3), rss_item(2)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        thread_replies=False,
    )
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, "C1", "PyTorch", source="config")
    deliverer = Deliverer(store, slack_outbox(slack_fake), per_channel_interval=0.0)
    try:
        report = await run_once(
            settings, store, deliverer.outbox, http, SAMPLE_NOW, deliverer=deliverer
        )
        (poll,) = report.polls
        assert poll.status == "ok" and poll.new == 3
        # Undated, it is dated as the undated-item rules say: here, when first seen.
        assert {e.guid: e for e in poll.episodes}["pytorch-day-ahead"].published_at == SAMPLE_NOW
        assert keys_in(slack_fake.messages("C1")) == ["PyTorch:pytorch-day-ahead"]
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()


def test_lone_surrogates_in_a_json_feed_are_replaced_once_and_stored(store: Store) -> None:
    # json.dumps writes "\ud800" as the escape a hostile feed would send.
    items = [
        {"id": "a\ud800b", "title": "Lone \udfff low", "content_text": "x\ud83dy",
         "date_published": "2026-10-01T09:00:00Z"},
        {"id": "pair", "title": "A pair 😀", "content_text": "fine",
         "date_published": "2026-10-01T08:00:00Z"},
    ]  # fmt: skip
    data = json.dumps({"version": "https://jsonfeed.org/version/1.1", "items": items}).encode()
    assert b"\\ud800" in data
    found = build_episodes(parse_bytes(data, "https://feeds.example/s.json"), "S", "o/r")
    assert [e.guid for e in found] == ["a\ufffdb", "pair"]
    assert found[0].title == "Lone \ufffd low" and found[0].transcript == "x\ufffdy"
    assert found[1].title == "A pair 😀"
    store.ensure_show("S", "", "o/r")
    store_episodes(store, found, SAMPLE_NOW)
    stored = store.episode("S", "a\ufffdb")
    assert stored is not None and stored.title == "Lone \ufffd low"


def _episode(guid: str, **changes: object) -> Episode:
    values: dict[str, object] = {
        "guid": guid,
        "show": "S",
        "title": f"Episode {guid}",
        "headline": f"Episode {guid}",
        "published_at": SAMPLE_NOW - timedelta(hours=1),
    }
    return Episode(**{**values, **changes})  # type: ignore[arg-type]


def test_an_item_no_column_can_take_is_skipped_and_the_rest_stored(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Built by hand: the parsers never make one (they replace such text where it enters).
    bad = [
        _episode("a\ud800"),
        _episode("b", summary="x\udfff"),
        _episode("c", duration_seconds=2**40),
    ]
    episodes = [_episode("good-1"), *bad, _episode("good-2")]
    with caplog.at_level(logging.WARNING, logger="bot.jobs.ingest"):
        kept, refused = storable("S", episodes)
    assert refused == 3
    assert [e.guid for e in kept] == ["good-1", "good-2"]
    (line,) = [r.getMessage() for r in caplog.records]
    assert "feed S: 3 items not stored" in line and "summary holds text" in line
    store.ensure_show("S", "", "o/r")
    results = store_episodes(store, kept, SAMPLE_NOW)
    assert [r.status for r in results] == ["new", "new"]
    assert store.episode("S", "good-2") is not None
