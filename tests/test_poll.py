"""The poll pipeline end to end: feeds on loopback, the Slack fake, a real store (both DBs)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from bot.delivery.deliverer import Deliverer
from bot.delivery.outbox import PrintOutbox
from bot.jobs.pipeline import poll_show, run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from digests.store.ledger import Ledger
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.fixtures.store import pause_channel
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def settings_for(url: str, **kw: object) -> Settings:
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        **kw,  # type: ignore[arg-type]
    )


def subscribe(store: Store, *channels: str, keywords: tuple[str, ...] = ()) -> None:
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    for channel in channels:
        store.subscribe(TEAM, channel, "PyTorch", keywords=keywords, source="config")


async def test_first_poll_newest_only_then_nothing_then_the_new_one(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2), rss_item(1)), etag='"v1"')
    settings = settings_for(url)
    subscribe(store, "C1", "C2")
    subscribe(store, "C3", keywords=("metal",))

    first = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert first.polls[0].status == "ok" and first.polls[0].new == 3
    for channel in ("C1", "C2"):
        assert keys_in(slack_fake.messages(channel)) == ["PyTorch:pytorch-2026-10-03"]
        replies = [m for m in slack_fake.messages(channel) if m.get("thread_ts")]
        assert len(replies) == 1 and "199603" in str(replies[0]["blocks"])
    assert slack_fake.messages("C3") == []  # the newest does not mention Metal

    second = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert second.polls[0].status == "not_modified"
    assert second.delivery.posted == [] and len(slack_fake.calls_to("chat.postMessage")) == 4
    assert feed_server.requests_to("/feed.xml")[-1].header("If-None-Match") == '"v1"'

    feed_server.route(
        "/feed.xml",
        rss(
            rss_item(5, headline="Metal Kernels", summary="MPS upsample gets faster."),
            rss_item(4),
            rss_item(3),
            rss_item(2),
            rss_item(1),
        ),
        etag='"v2"',
    )
    third = await run_once(
        settings, store, deliverer.outbox, http, NOW + timedelta(hours=1), deliverer=deliverer
    )
    assert third.polls[0].new == 2
    for channel in ("C1", "C2"):
        assert keys_in(slack_fake.messages(channel)) == [
            "PyTorch:pytorch-2026-10-03",
            "PyTorch:pytorch-2026-10-04",
            "PyTorch:pytorch-2026-10-05",
        ]
    assert keys_in(slack_fake.messages("C3")) == ["PyTorch:pytorch-2026-10-05"]


async def test_edited_episode_updates_in_place(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3)), etag='"v1"')
    settings = settings_for(url, thread_replies=False)
    subscribe(store, "C1")
    await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    feed_server.route(
        "/feed.xml", rss(rss_item(3, headline="Daily Briefing 3, Corrected")), etag='"v2"'
    )
    report = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)

    assert report.polls[0].changed and len(report.delivery.updated) == 1
    messages = slack_fake.messages("C1")
    assert len(messages) == 1 and "Corrected" in str(messages[0]["blocks"])


async def test_failing_feed_backs_off_and_tells_channels_once(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3)), etag='"v1"')
    settings = settings_for(url)
    subscribe(store, "C1")
    await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    feed_server.route("/feed.xml", b"oops", status=500)

    polls = []
    for n in range(4):
        report = await run_once(
            settings, store, deliverer.outbox, http, NOW + timedelta(hours=n), deliverer=deliverer
        )
        polls.append(report.polls[0])
    assert [p.status for p in polls] == ["failed"] * 4
    assert [p.state.failures for p in polls] == [1, 2, 3, 4]
    waits = [
        (p.state.next_poll_at or NOW) - (NOW + timedelta(hours=n)) for n, p in enumerate(polls)
    ]
    assert waits == [timedelta(minutes=m) for m in (30, 60, 120, 240)]
    state = store.fetch_state("PyTorch")
    assert state.last_error and "500" in state.last_error and state.failing_notified

    feed_server.route("/feed.xml", rss(rss_item(3)), etag='"v1"')
    back = await run_once(
        settings, store, deliverer.outbox, http, NOW + timedelta(hours=5), deliverer=deliverer
    )
    assert back.polls[0].ok and not store.fetch_state("PyTorch").failing_notified

    texts = [m["text"] for m in slack_fake.messages("C1")]
    assert sum("is failing" in t for t in texts) == 1
    assert sum("has recovered" in t for t in texts) == 1
    assert len(keys_in(slack_fake.messages("C1"))) == 3  # digest, failing, recovered


async def test_feed_retry_after_and_cache_control_push_the_next_poll(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    url = feed_server.route("/feed.xml", b"busy", status=429, headers={"Retry-After": "7200"})
    settings = settings_for(url)
    limited = await poll_show(settings, store, http, settings.shows[0], NOW)
    assert limited.status == "failed" and limited.state.next_poll_at == NOW + timedelta(hours=2)

    feed_server.route(
        "/feed.xml", rss(rss_item(3)), headers={"Cache-Control": "public, max-age=3600"}
    )
    fresh = await poll_show(settings, store, http, settings.shows[0], NOW)
    assert fresh.status == "ok" and fresh.state.next_poll_at == NOW + timedelta(hours=1)
    assert store.fetch_state("PyTorch").next_poll_at == NOW + timedelta(hours=1)


async def test_a_feed_that_is_not_a_feed_is_a_result_not_an_exception(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    url = feed_server.route("/feed.xml", b"\x00\x01\x02 binary junk", content_type="image/png")
    settings = settings_for(url)
    result = await poll_show(settings, store, http, settings.shows[0], NOW)
    assert result.status == "failed" and result.error
    assert store.fetch_state("PyTorch").failures == 1


async def test_print_outbox_prints_each_digest_once(
    store: Store, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)))
    settings = settings_for(url)
    subscribe(store, "C0EXAMPLE01")
    out = io.StringIO()
    outbox = PrintOutbox(out)
    await run_once(settings, store, outbox, http, NOW)
    await run_once(settings, store, outbox, http, NOW)

    text = out.getvalue()
    assert text.count("would post to #C0EXAMPLE01\n") == 1
    assert "Daily Briefing 3" in text and "Daily Briefing 2" not in text
    assert "199603" in text  # the thread reply is printed too
    rows = Ledger.for_store(store).all_rows()
    assert [(r.channel_id, r.state) for r in rows] == [("C0EXAMPLE01", "posted")]


async def test_a_broken_template_is_an_error_for_that_show_not_a_crash(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    tmp_path: Path,
) -> None:
    (tmp_path / "digest.j2").write_text("{% if %}\n")
    url = feed_server.route("/feed.xml", rss(rss_item(3)))
    broken = settings_for(url, templates_dir=str(tmp_path))
    subscribe(store, "C1")
    report = await run_once(broken, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert [p.status for p in report.polls] == ["error"]
    assert report.errors and "digest.j2" in report.errors[0]
    assert slack_fake.messages("C1") == [] and Ledger.for_store(store).all_rows() == []
    assert store.fetch_state("PyTorch").failures == 0  # not the feed's fault

    fixed = settings_for(url)
    again = await run_once(fixed, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert not again.errors
    assert keys_in(slack_fake.messages("C1")) == ["PyTorch:pytorch-2026-10-03"]


async def test_429_500_and_an_archived_channel_mid_fan_out_lose_and_double_nothing(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    channels = [f"C{n:03d}" for n in range(24)]
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    settings = settings_for(url)
    subscribe(store, *channels)
    slack_fake.fail_next("chat.postMessage", status=429, retry_after=0.1, times=2)
    slack_fake.fail_next("chat.postMessage", status=500, times=2)
    slack_fake.channel_error("C011", "is_archived")
    slack_fake.latency = 0.01

    first = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    feed_server.route("/feed.xml", rss(rss_item(4), rss_item(3), rss_item(2)), etag='"v2"')
    later = NOW + timedelta(minutes=15)  # the next poll, when the new episode appears
    second = await run_once(settings, store, deliverer.outbox, http, later, deliverer=deliverer)

    assert first.delivery.retries == 4 and first.delivery.paused == {(TEAM, "C011"): "is_archived"}
    for channel in channels:
        expected = (
            []
            if channel == "C011"
            else ["PyTorch:pytorch-2026-10-03", "PyTorch:pytorch-2026-10-04"]
        )
        assert keys_in(slack_fake.messages(channel)) == expected, channel
    assert store.subscriptions(channel_id="C011")[0].paused_reason == "is_archived"
    assert not second.delivery.failed and len(second.delivery.posted) == len(channels) - 1


async def test_feed_notices_reach_every_channel_once_even_after_a_failed_post(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
) -> None:
    """Failing: told once per channel, across polls; one channel's lost post is made up."""
    url = feed_server.route("/feed.xml", rss(rss_item(3)), etag='"v1"')
    settings = settings_for(url, thread_replies=False)
    channels = ["C1", "C2", "C3"]
    subscribe(store, *channels)
    subscribe(store, "C4", keywords=("nothing-matches",))  # still told: it follows the show
    subscribe(store, "C5")
    pause_channel(store, TEAM, "C5", "is_archived", NOW)  # paused: told nothing
    # One attempt per post, so a 500 is a lost post for this run, not a retry.
    deliverer = Deliverer(
        store, slack_outbox(slack_fake), per_channel_interval=0.0, backoff=0.01, max_attempts=1
    )

    def texts(channel: str) -> list[str]:
        return [m["text"] for m in slack_fake.messages(channel)]

    try:

        async def poll(hours: int) -> None:
            at = NOW + timedelta(hours=hours)
            await run_once(settings, store, deliverer.outbox, http, at, deliverer=deliverer)

        await poll(0)
        feed_server.route("/feed.xml", b"down", status=503)
        await poll(1)  # one failure is a blip: nobody is told
        assert not any("is failing" in t for c in channels for t in texts(c))
        slack_fake.fail_next("chat.postMessage", status=500)  # one channel misses it
        await poll(2)
        told = [c for c in [*channels, "C4"] if any("is failing" in t for t in texts(c))]
        assert len(told) == 3 and not store.fetch_state("PyTorch").failing_notified
        for hours in (3, 4, 5):
            await poll(hours)
        assert store.fetch_state("PyTorch").failing_notified

        feed_server.route("/feed.xml", rss(rss_item(3)), etag='"v1"')
        await poll(6)
        await poll(7)
        assert not store.fetch_state("PyTorch").failing_notified
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()

    for channel in [*channels, "C4"]:
        failing = [t for t in texts(channel) if "is failing" in t]
        recovered = [t for t in texts(channel) if "has recovered" in t]
        assert len(failing) == 1 and "503" in failing[0], channel
        assert len(recovered) == 1, channel
        assert texts(channel).index(failing[0]) < texts(channel).index(recovered[0])
    assert slack_fake.messages("C5") == []
    assert len(keys_in(slack_fake.messages("C1"))) == 3  # digest, failing, recovered
    c4 = keys_in(slack_fake.messages("C4"))
    assert len(c4) == 2 and all(k.startswith("feed:PyTorch:") for k in c4)


async def test_a_late_episode_dated_below_the_newest_is_posted_once(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    # Day 9 is dated ahead of the rest (a wrong pubDate, or a scheduled one); day 2 is
    # published late, dated before what the channel has: both must still reach it.
    url = feed_server.route("/feed.xml", rss(rss_item(9), rss_item(3), rss_item(1)), etag='"1"')
    settings = settings_for(url, thread_replies=False)
    subscribe(store, "C1")

    async def poll(minutes: int) -> None:
        at = NOW + timedelta(minutes=minutes)
        await run_once(settings, store, deliverer.outbox, http, at, deliverer=deliverer)

    await poll(0)
    assert keys_in(slack_fake.messages("C1")) == ["PyTorch:pytorch-2026-10-09"]
    feed_server.route(
        "/feed.xml",
        rss(rss_item(9), rss_item(4), rss_item(3), rss_item(2), rss_item(1)),
        etag='"2"',
    )
    await poll(15)
    await poll(30)
    assert keys_in(slack_fake.messages("C1")) == [
        "PyTorch:pytorch-2026-10-09",
        "PyTorch:pytorch-2026-10-02",
        "PyTorch:pytorch-2026-10-04",
    ]  # 3 and 1 were the first poll's archive: passed over for good
