"""A keyword channel gets every matching episode that arrives after it subscribed, however
the feed dates it and however many arrive in one poll (SQLite, PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.slackfake import SlackFake

TEAM = "T1"


def test_archive_seen_at_is_when_the_show_was_first_read(store: Store) -> None:
    assert store.archive_seen_at("PyTorch") is None


async def test_two_matching_episodes_dated_before_the_subscription_both_arrive(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(2), rss_item(1)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        thread_replies=False,
    )
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    deliverer = Deliverer(store, slack_outbox(slack_fake), per_channel_interval=0.0)
    archive_read = datetime.now(UTC) - timedelta(hours=1)
    try:
        # The show's archive is read before anyone subscribes.
        await run_once(settings, store, deliverer.outbox, http, archive_read, deliverer=deliverer)
        assert store.archive_seen_at("PyTorch") == archive_read
        store.subscribe(TEAM, "C1", "PyTorch", keywords=["inductor"])
        assert slack_fake.messages("C1") == []

        # Two matching episodes (and one that does not match) arrive in one poll, dated by
        # the feed days before the subscription was made.
        feed_server.route(
            "/feed.xml",
            rss(
                rss_item(5, headline="Inductor fusion"),
                rss_item(4, headline="Autograd notes"),
                rss_item(3, headline="Inductor guards"),
                rss_item(2),
                rss_item(1),
            ),
        )
        later = datetime.now(UTC) + timedelta(minutes=20)
        await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)
        assert keys_in(slack_fake.messages("C1")) == [
            "PyTorch:pytorch-2026-10-03",
            "PyTorch:pytorch-2026-10-05",
        ]
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()
