"""One channel following several shows gets their digests oldest first, across shows.

End to end through ``bot.jobs.pipeline.run_once``: two feeds on loopback, the Slack fake, a real
store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 20, 8, 0, tzinfo=UTC)


def jax_item(day: int) -> str:
    """An item of a second show, "JAX", published 2026-10-<day> 13:00 UTC like PyTorch's."""
    return rss_item(day).replace("PyTorch: ", "JAX: ").replace("pytorch-2026", "jax-2026")


def top_level_posts(fake: SlackFake, channel: str) -> list[str]:
    """The keys of the digests posted to ``channel``, in the order chat.postMessage got them."""
    out = []
    for call in fake.calls_to("chat.postMessage"):
        if call.ok and call.params.get("channel") == channel and not call.params.get("thread_ts"):
            out.append(str(call.params["metadata"]["event_payload"]["key"]))
    return out


async def test_two_shows_on_one_channel_are_posted_oldest_first(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    torch = feed_server.route("/pytorch.xml", rss(rss_item(8), rss_item(5), rss_item(2)))
    jax = feed_server.route("/jax.xml", rss(jax_item(10), jax_item(4), jax_item(3)))
    settings = Settings(
        shows=[
            ShowConfig(name="PyTorch", feed=torch, repo="pytorch/pytorch"),
            ShowConfig(name="JAX", feed=jax, repo="jax-ml/jax"),
        ],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        thread_replies=True,
        backfill=3,
    )
    for show, repo in (("PyTorch", "pytorch/pytorch"), ("JAX", "jax-ml/jax")):
        store.ensure_show(show, "", repo)
        store.subscribe(TEAM, "C1", show, source="config")
    store.subscribe(TEAM, "C2", "PyTorch", source="config")

    first = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)

    assert first.delivery.failed == {}
    expected = [
        "PyTorch:pytorch-2026-10-02",
        "JAX:jax-2026-10-03",
        "JAX:jax-2026-10-04",
        "PyTorch:pytorch-2026-10-05",
        "PyTorch:pytorch-2026-10-08",
        "JAX:jax-2026-10-10",
    ]
    assert top_level_posts(slack_fake, "C1") == expected
    assert keys_in(slack_fake.messages("C1")) == expected
    assert top_level_posts(slack_fake, "C2") == [k for k in expected if k.startswith("PyTorch")]

    # Next cycle: one new episode of each, the same day and hour; JAX sorts before PyTorch.
    feed_server.route("/pytorch.xml", rss(rss_item(12), rss_item(8), rss_item(5), rss_item(2)))
    feed_server.route(
        "/jax.xml", rss(jax_item(12), jax_item(11), jax_item(10), jax_item(4), jax_item(3))
    )
    later = NOW + timedelta(hours=1)
    second = await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)

    assert second.delivery.failed == {}
    assert top_level_posts(slack_fake, "C1") == [
        *expected,
        "JAX:jax-2026-10-11",
        "JAX:jax-2026-10-12",
        "PyTorch:pytorch-2026-10-12",
    ]
    third = await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)
    assert third.delivery.posted == [] and len(top_level_posts(slack_fake, "C1")) == 9
