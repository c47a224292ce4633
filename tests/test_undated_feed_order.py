"""An undated item in a feed's archive keeps its place by feed order (SQLite, PostgreSQL).

Only an undated item that appears on a later poll is news, dated when first seen.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.extract.feed_order import feed_order_dates
from digests.models import UNKNOWN_DATE, Episode
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.fixtures.store import SAMPLE_NOW
from tests.slackfake import SlackFake

TEAM = "T1"
US = timedelta(microseconds=1)


def ep(day: int | None) -> Episode:
    when = UNKNOWN_DATE if day is None else datetime(2026, 10, day, 13, 0, tzinfo=UTC)
    return Episode(
        guid=f"g{day}", show="PyTorch", title="t", headline="t", summary="", published_at=when
    )


def d(day: int) -> datetime:
    return datetime(2026, 10, day, 13, 0, tzinfo=UTC)


NOW = datetime(2026, 10, 9, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        # Between two dated neighbours: halfway.
        ([5, 4, None, 2, 1], {2: d(3)}),
        ([5, None, None, 1], {1: d(3), 2: d(3)}),
        # Older than every dated item: just below the oldest.
        ([5, 4, None], {2: d(4) - US}),
        # Newer than every dated item: news, first seen now.
        ([None, 5, 4], {0: NOW}),
        ([None, None, 5], {0: NOW, 1: NOW - US}),
        # A feed listed oldest first: its last items are the newest.
        ([1, 2, None], {2: NOW}),
        ([1, None, 3], {1: d(2)}),
        # No dates at all: nothing to place by.
        ([None, None], {}),
    ],
)
def test_feed_order_dates(days: list[int | None], expected: dict[int, datetime]) -> None:
    assert feed_order_dates([ep(x) for x in days], newest_at=NOW) == expected


UNDATED = """
    <item>
      <title>PyTorch: Backstage Notes</title>
      <guid isPermaLink="false">pytorch-undated</guid>
      <link>https://example.test/pytorch/undated</link>
      <description>An archive item the feed gave no date.</description>
    </item>"""


async def test_first_poll_posts_the_real_newest_not_an_undated_archive_item(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(5), rss_item(4), UNDATED, rss_item(2)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        thread_replies=False,
    )
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, "C1", "PyTorch", source="config")
    deliverer = Deliverer(store, slack_outbox(slack_fake), per_channel_interval=0.0)
    try:
        first = await run_once(
            settings, store, deliverer.outbox, http, SAMPLE_NOW, deliverer=deliverer
        )
        (poll,) = first.polls
        placed = {e.guid: e.published_at for e in poll.episodes}["pytorch-undated"]
        assert (
            datetime(2026, 10, 2, 13, tzinfo=UTC) < placed < datetime(2026, 10, 4, 13, tzinfo=UTC)
        )
        (posted,) = slack_fake.messages("C1")
        assert keys_in([posted]) == ["PyTorch:pytorch-2026-10-05"]
        assert [e.guid for e in store.recent(2, ["PyTorch"])] == [
            "pytorch-2026-10-05",
            "pytorch-2026-10-04",
        ]

        # An undated item that appears later is news: dated when first seen, and posted.
        later = SAMPLE_NOW + timedelta(hours=5)
        fresh = UNDATED.replace("pytorch-undated", "pytorch-undated-2").replace(
            "Backstage Notes", "Late Breaking"
        )
        feed_server.route("/feed.xml", rss(fresh, rss_item(5), rss_item(4), UNDATED, rss_item(2)))
        second = await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)
        (poll,) = second.polls
        assert {e.guid: e.published_at for e in poll.episodes}["pytorch-undated-2"] == later
        assert keys_in(slack_fake.messages("C1")) == [
            "PyTorch:pytorch-2026-10-05",
            "PyTorch:pytorch-undated-2",
        ]
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()
