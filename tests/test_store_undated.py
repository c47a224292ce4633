"""Episodes whose feed gives no usable date: dated when first seen, stably (SQLite, PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import sqlalchemy as sa

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import UNKNOWN_DATE, Episode
from digests.store import Store
from digests.store.schema import episodes
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.fixtures.store import SAMPLE_NOW
from tests.slackfake import SlackFake

LATER = SAMPLE_NOW + timedelta(hours=5)
TEAM = "T1"


def undated(guid: str = "pytorch-undated", **changes: object) -> Episode:
    values: dict[str, object] = {
        "guid": guid,
        "show": "PyTorch",
        "title": "PyTorch: No Date Given",
        "headline": "No Date Given",
        "summary": "The feed forgot the pubDate.",
        "published_at": UNKNOWN_DATE,
    }
    values.update(changes)
    return Episode(**values)  # type: ignore[arg-type]


def test_undated_episode_is_dated_when_first_seen_and_keeps_it(
    filled_store: Store, sample_episodes: list[Episode]
) -> None:
    first = filled_store.upsert_episodes([*sample_episodes, undated()], SAMPLE_NOW)
    assert first[-1].status == "new"
    assert first[-1].episode.published_at == SAMPLE_NOW  # what the poll decides and renders
    assert filled_store.episode("PyTorch", "pytorch-undated") == first[-1].episode

    second = filled_store.upsert_episodes([*sample_episodes, undated()], LATER)
    assert [r.status for r in second] == ["unchanged"] * (len(sample_episodes) + 1)
    assert second[-1].episode.published_at == SAMPLE_NOW
    stored = filled_store.episode("PyTorch", "pytorch-undated")
    assert stored is not None and stored.published_at == SAMPLE_NOW

    assert filled_store.recent(1, ["PyTorch"])[0].guid == "pytorch-undated"
    week = filled_store.between(SAMPLE_NOW - timedelta(hours=12), SAMPLE_NOW + timedelta(hours=1))
    assert [e.guid for e in week] == ["pytorch-undated"]


def test_an_edited_undated_episode_keeps_its_first_seen_date(store: Store) -> None:
    store.upsert_episodes([undated()], SAMPLE_NOW)
    edited = store.upsert_episodes([undated(summary="Now with a better summary.")], LATER)
    assert edited[0].status == "changed"
    assert edited[0].episode.published_at == SAMPLE_NOW
    stored = store.episode("PyTorch", "pytorch-undated")
    assert stored is not None and stored.summary == "Now with a better summary."
    assert stored.published_at == SAMPLE_NOW


def test_a_date_that_appears_later_replaces_the_first_seen_one(store: Store) -> None:
    store.upsert_episodes([undated()], SAMPLE_NOW)
    real = datetime(2026, 10, 4, 13, 0, tzinfo=UTC)
    dated = store.upsert_episodes([undated(published_at=real)], LATER)
    assert dated[0].status == "changed" and dated[0].episode.published_at == real
    stored = store.episode("PyTorch", "pytorch-undated")
    assert stored is not None and stored.published_at == real


def test_a_row_stored_as_1970_gets_its_first_seen_date(store: Store) -> None:
    store.upsert_episodes([undated()], SAMPLE_NOW)
    # As an older digestbot stored it: the sentinel itself.
    with store.engine.begin() as conn:
        conn.execute(sa.update(episodes).values(published_at=UNKNOWN_DATE))
    again = store.upsert_episodes([undated()], LATER)
    assert again[0].status == "unchanged" and again[0].episode.published_at == SAMPLE_NOW
    assert [e.guid for e in store.recent(5)] == ["pytorch-undated"]
    stored = store.episode("PyTorch", "pytorch-undated")
    assert stored is not None and stored.published_at == SAMPLE_NOW


# -- through a poll --------------------------------------------------------------------------

UNDATED_ITEM = """
    <item>
      <title>PyTorch: Briefing Without a Date</title>
      <guid isPermaLink="false">pytorch-undated</guid>
      <link>https://example.test/pytorch/undated</link>
      <pubDate>sometime soon</pubDate>
      <description>The feed gave this one no usable date.</description>
    </item>"""


async def test_poll_posts_an_undated_episode_with_its_first_seen_date_once(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(UNDATED_ITEM, rss_item(3), rss_item(2)))
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
        first = await run_once(
            settings, store, deliverer.outbox, http, SAMPLE_NOW, deliverer=deliverer
        )
        (poll,) = first.polls
        assert poll.new == 3
        by_guid = {e.guid: e for e in poll.episodes}
        assert by_guid["pytorch-undated"].published_at == SAMPLE_NOW
        # Dated when first seen, it is the newest: the one the first poll posts.
        (posted,) = slack_fake.messages("C1")
        assert keys_in([posted]) == ["PyTorch:pytorch-undated"]
        assert "1970" not in str(posted["blocks"]) and "Oct 2026" in str(posted["blocks"])

        second = await run_once(settings, store, deliverer.outbox, http, LATER, deliverer=deliverer)
        (poll,) = second.polls
        assert poll.status == "ok" and poll.new == 0 and poll.changed == ()
        assert {e.guid: e for e in poll.episodes}["pytorch-undated"].published_at == SAMPLE_NOW
        assert not second.delivery.posted and not second.delivery.updated
        assert len(slack_fake.calls_to("chat.postMessage")) == 1
        assert [e.guid for e in store.recent(2, ["PyTorch"])] == [
            "pytorch-undated",
            "pytorch-2026-10-03",
        ]
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()


def test_a_feed_without_any_dates_keeps_its_order_newest_first(store: Store) -> None:
    # Feeds list the newest item first; dated a microsecond apart in that order, the
    # first poll's backfill takes the newest, not all of them at one tied date.
    results = store.upsert_episodes([undated(f"g{i}") for i in range(4)], SAMPLE_NOW)
    dates = [r.episode.published_at for r in results]
    assert dates[0] == SAMPLE_NOW
    assert dates == sorted(dates, reverse=True) and len(set(dates)) == 4
    assert [e.guid for e in store.recent(2, ["PyTorch"])] == ["g0", "g1"]
    again = store.upsert_episodes([undated(f"g{i}") for i in range(4)], LATER)
    assert [r.episode.published_at for r in again] == dates
