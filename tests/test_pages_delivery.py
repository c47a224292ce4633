"""A show whose feed is one episode page (``/latest``): when the page moves on to the next
episode, that is a new post, not an edit of the last one. End to end through
``bot.jobs.pipeline.run_once``, the page on loopback and the Slack fake."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in
from tests.slackfake import SlackFake

TEAM = "T1"
CHANNEL = "C1"


def page(day: int, headline: str) -> str:
    """A plain-text episode page in the crawler layout, published 2026-10-<day>."""
    return f"""PyTorch: {headline}
What moved in the repository on day {day}, in a few sentences written for this test.

- Duration: PT2M{day:02d}S
- Published: 2026-10-{day:02d}T13:00:40Z
- Show: PyTorch

Transcript excerpt
PR {199700 + day} lands a fix for day {day}.
"""


async def test_a_page_moving_on_to_the_next_episode_is_a_new_post(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/latest", page(5, "Monday Things"), content_type="text/plain")
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
    )
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")

    first = datetime(2026, 10, 5, 14, 0, tzinfo=UTC)
    await run_once(settings, store, deliverer.outbox, http, first, deliverer=deliverer)
    # Same day, the headline corrected: an edit of the same post.
    feed_server.route("/latest", page(5, "Monday Things, Fixed"), content_type="text/plain")
    await run_once(settings, store, deliverer.outbox, http, first, deliverer=deliverer)
    # The next day the page shows the next episode: a post of its own.
    feed_server.route("/latest", page(6, "Tuesday Things"), content_type="text/plain")
    second = datetime(2026, 10, 6, 14, 0, tzinfo=UTC)
    result = await run_once(settings, store, deliverer.outbox, http, second, deliverer=deliverer)
    assert result.delivery.failed == {}

    assert keys_in(slack_fake.messages(CHANNEL)) == [
        f"PyTorch:{url}#2026-10-05",
        f"PyTorch:{url}#2026-10-06",
    ]
    messages = slack_fake.messages(CHANNEL)
    monday, tuesday = [m for m in messages if m.get("thread_ts") in (None, m["ts"])]
    assert "Monday Things, Fixed" in monday["text"]  # edited in place
    assert "Tuesday Things" in tuesday["text"]
    assert {c.params["ts"] for c in slack_fake.calls_to("chat.update")} <= {
        m["ts"] for m in messages if m.get("thread_ts") in (None, monday["ts"])
    } - {tuesday["ts"]}
    stored = store.recent(10, ["PyTorch"])
    assert [e.headline for e in stored] == ["Tuesday Things", "Monday Things, Fixed"]
