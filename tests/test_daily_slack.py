"""Daily digest mode for real: `subscribe … daily` over signed HTTP, real polls of a feed on
loopback, the daily job run at moments a controllable clock picks, the Slack fake, SQLite
and PostgreSQL — across the end of summer time in Europe/Berlin (25 Oct 2026)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.delivery.deliverer import Deliverer
from bot.jobs.daily import DAILY_JOB_ID, daily_job, post_daily
from bot.jobs.pipeline import run_once
from config.settings import ShowConfig
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.schema import subscriptions
from tests.feedserver import FeedServer
from tests.fixtures.app import CHANNEL, assert_valid_message, make_settings
from tests.fixtures.control import Clock, Rig, app_with_clock
from tests.fixtures.delivery import copies, keys_in, rss, rss_item, slack_outbox
from tests.slackfake import SlackFake

SUBSCRIBED = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, minute, tzinfo=UTC)


def backdate(store: Store, when: datetime = SUBSCRIBED) -> None:
    """The channel's subscriptions as if made at ``when`` (the store stamps the real time)."""
    with store.engine.begin() as conn:
        conn.execute(sa.update(subscriptions).values(created_at=when))


@pytest.fixture
def berlin(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> Iterator[Rig]:
    url = feed_server.route("/feed.xml", rss(rss_item(1)))
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        timezone="Europe/Berlin",
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        thread_replies=False,
    )
    clock = Clock(SUBSCRIBED)
    with app_with_clock(settings, store, slack_fake, clock) as sender:
        yield Rig(settings, store, slack_fake, sender, clock, feed_server, http, deliverer)


async def daily(rig: Rig, at: datetime) -> None:
    rig.clock.now = at
    await post_daily(rig.settings, rig.store, rig.deliverer, Renderer.of(rig.settings), at)


async def test_one_message_a_day_at_17_00_berlin_across_the_dst_change(berlin: Rig) -> None:
    rig = berlin
    reply = rig.slash("subscribe PyTorch daily 17:00")
    assert reply[1] == (
        "Now: *PyTorch* · every episode · weekly recap on · daily at 17:00 (Europe/Berlin)"
    )
    backdate(rig.store)
    assert rig.slash("list")[1] == "• *PyTorch* — daily at 17:00 (Europe/Berlin)"

    # Sat 24 Oct (summer time): 17:00 is 15:00 UTC. Days 22-24 arrive on the first poll.
    rig.serve(22, 23, 24)
    await rig.poll(utc(24, 13, 5))
    assert rig.posted() == []  # no digest per episode
    await daily(rig, utc(24, 14, 59))
    assert rig.posted() == []
    await daily(rig, utc(24, 15, 0))
    await daily(rig, utc(24, 15, 1))  # the job runs every minute: still one
    assert rig.posted() == ["2026-10-24"]
    first = rig.fake.messages(CHANNEL)[-1]
    assert_valid_message(first)
    assert first["blocks"][0]["text"]["text"] == "PyTorch — daily digest, Sat 24 Oct 2026"
    body = str(first["blocks"])
    # Day 22 is two days old: archive. 23 and 24 are news, with their top PRs.
    assert "Daily Briefing 22" not in body
    assert "Daily Briefing 23" in body and "Daily Briefing 24" in body
    assert "2:24" in body and "/pull/199624|#199624>" in body

    # Sun 25 Oct: summer time ends at 03:00; 17:00 is 16:00 UTC now.
    rig.serve(23, 24, 25)
    await rig.poll(utc(25, 13, 5))
    await daily(rig, utc(25, 15, 0))  # 16:00 in Berlin: not yet
    assert rig.posted() == ["2026-10-24"]
    await daily(rig, utc(25, 16, 0))
    assert rig.posted() == ["2026-10-24", "2026-10-25"]
    body = str(rig.fake.messages(CHANNEL)[-1]["blocks"])
    assert "Daily Briefing 25" in body and "Daily Briefing 24" not in body

    # Mon 26 Oct: nothing new, no message.
    await rig.poll(utc(26, 13, 5))
    await daily(rig, utc(26, 16, 0))
    # Tue 27 Oct: the episode is polled at 17:30 Berlin, after the time: Wednesday's.
    rig.serve(25, 27)
    await daily(rig, utc(27, 16, 0))
    await rig.poll(utc(27, 16, 30))
    await daily(rig, utc(27, 16, 31))
    assert rig.posted() == ["2026-10-24", "2026-10-25"]
    assert rig.slash("why 2026-10-27")[0].endswith(
        "it goes in the daily digest due Wed 28 Oct 2026 17:00 Europe/Berlin."
    )
    rig.serve(25, 27, 28)
    await rig.poll(utc(28, 13, 5))
    await daily(rig, utc(28, 16, 0))
    assert rig.posted() == ["2026-10-24", "2026-10-25", "2026-10-28"]
    body = str(rig.fake.messages(CHANNEL)[-1]["blocks"])
    assert "Daily Briefing 27" in body and "Daily Briefing 28" in body
    for day in ("2026-10-24", "2026-10-25", "2026-10-28"):
        assert copies(rig.fake, CHANNEL, day) == 1

    # `why` names the day's digest; `status` the next one.
    assert rig.slash("why 2026-10-27")[0].endswith(
        "This channel gets *PyTorch* in one message a day at 17:00 (Europe/Berlin): it was in "
        "the daily digest of Wed 28 Oct 2026 17:00 Europe/Berlin."
    )
    rig.clock.now = utc(28, 17)
    assert rig.slash("status")[-1] == (
        "*Daily digest here*\n• *PyTorch* at 17:00 (Europe/Berlin) · next 2026-10-29 17:00 "
        "Europe/Berlin"
    )


async def test_a_time_in_the_fall_back_overlap_posts_once(berlin: Rig) -> None:
    rig = berlin
    rig.slash("subscribe PyTorch daily 2:30am")
    backdate(rig.store)
    rig.serve(24)
    await rig.poll(utc(24, 13, 5))
    # 02:30 happens twice on 25 Oct: 00:30 UTC (summer time), then 01:30 UTC.
    await daily(rig, utc(25, 0, 29))
    assert rig.posted() == []
    await daily(rig, utc(25, 0, 30))
    await daily(rig, utc(25, 1, 30))
    await daily(rig, utc(25, 1, 31))
    assert rig.posted() == ["2026-10-25"]


async def test_daily_off_goes_back_to_a_digest_per_episode_without_repeats(berlin: Rig) -> None:
    rig = berlin
    rig.slash("subscribe PyTorch daily")
    backdate(rig.store)
    rig.serve(23, 24)
    await rig.poll(utc(24, 13, 5))
    await daily(rig, utc(24, 15, 0))
    assert rig.posted() == ["2026-10-24"]

    rig.clock.now = utc(24, 18, 0)
    reply = rig.slash("subscribe PyTorch daily off")
    assert reply[1] == "Now: *PyTorch* · every episode · weekly recap on"
    assert rig.slash("list")[1] == "• *PyTorch*"
    # What the daily digest had is not posted again one by one; what comes next is.
    await rig.poll(utc(24, 18, 5))
    assert rig.posted() == ["2026-10-24"]
    rig.serve(23, 24, 25)
    await rig.poll(utc(25, 13, 5))
    await daily(rig, utc(25, 16, 0))
    assert rig.posted() == ["2026-10-24", "PyTorch:pytorch-2026-10-25"]


async def test_subscribing_again_keeps_the_mode_and_a_keyword_filter_applies(
    berlin: Rig,
) -> None:
    rig = berlin
    rig.slash("subscribe PyTorch daily 18:00")
    reply = rig.slash("subscribe PyTorch briefing")
    assert reply[1].endswith("· daily at 18:00 (Europe/Berlin)")
    rig.slash("subscribe PyTorch 199625")  # only day 25 names that PR
    backdate(rig.store)
    rig.serve(24, 25)
    await rig.poll(utc(25, 13, 5))
    await daily(rig, utc(25, 17, 0))
    assert rig.posted() == ["2026-10-25"]
    body = str(rig.fake.messages(CHANNEL)[-1]["blocks"])
    assert "Daily Briefing 25" in body and "Daily Briefing 24" not in body


async def test_bad_daily_times_get_one_line_and_the_usage(berlin: Rig) -> None:
    rig = berlin
    for value in ("25:00", "13pm"):
        reply = rig.slash(f"subscribe PyTorch daily {value}")
        assert reply[0].startswith(f":warning: {value} is not a time of day: `daily` takes")
        assert "\n" not in reply[0]
        assert any("subscribe [shows…]" in line for line in reply)
    assert rig.store.subscriptions() == []
    assert rig.slash("subscribe PyTorch daily 5pm")[1].endswith("daily at 17:00 (Europe/Berlin)")


async def test_a_channel_subscribed_after_the_time_starts_the_next_day(berlin: Rig) -> None:
    rig = berlin
    rig.slash("subscribe PyTorch daily 17:00")
    backdate(rig.store, utc(24, 15, 30))  # 17:30 Berlin, after the day's time
    rig.serve(24)
    await rig.poll(utc(24, 13, 5))
    await daily(rig, utc(24, 15, 31))
    assert rig.posted() == []
    assert "it came out before this channel subscribed" in rig.slash("why 2026-10-24")[0]


async def test_two_clocks_post_the_day_once(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    """Two clocks (each its own store, deliverer and Slack session) run the daily job at the
    same moment on one database: the ledger lets one of them post."""
    url = feed_server.route("/feed.xml", rss(rss_item(24), rss_item(23)))
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        timezone="Europe/Berlin",
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
    )
    stores = [Store.open(db_url), Store.open(db_url)]
    deliverers = [
        Deliverer(s, slack_outbox(slack_fake), per_channel_interval=0.0, backoff=0.01)
        for s in stores
    ]
    try:
        for c in ("C1", "C2"):
            stores[0].subscribe("T1", c, "PyTorch", daily_at="17:00")
        backdate(stores[0])
        await run_once(
            settings, stores[0], deliverers[0].outbox, http, utc(24, 13), deliverer=deliverers[0]
        )
        slack_fake.latency = 0.05  # both clocks are mid-post at the same time
        renderer = Renderer.of(settings)
        reports = await asyncio.gather(
            *(
                post_daily(settings, s, d, renderer, utc(24, 15))
                for s, d in zip(stores, deliverers, strict=True)
            )
        )
    finally:
        for d in deliverers:
            await d.aclose()
            await d.outbox.close()
        for s in stores:
            s.close()
    assert sorted(i[1] for r in reports for i in r.posted) == ["C1", "C2"]
    for channel in ("C1", "C2"):
        assert keys_in(slack_fake.messages(channel)) == ["2026-10-24"]


async def test_the_job_runs_at_start_and_every_minute(store: Store, slack_fake: SlackFake) -> None:
    settings = make_settings(slack_fake.api_url, slack_fake.token, timezone="Europe/Berlin")
    deliverer = Deliverer(store, slack_outbox(slack_fake))
    scheduler = AsyncIOScheduler(timezone=UTC)
    now = utc(24, 15)
    try:
        daily_job(settings, store, deliverer, Renderer.of(settings), clock=lambda: now)(scheduler)
        (job,) = scheduler.get_jobs()
        assert job.id == DAILY_JOB_ID
        assert job.trigger.interval == timedelta(seconds=60)
        assert job.next_run_time == now
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()


async def test_a_channel_has_one_daily_time_and_one_message_for_its_shows(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    torch = feed_server.route("/feed.xml", rss(rss_item(24)))
    jax = feed_server.route(
        "/jax.xml", rss(rss_item(24, headline="Sharding Day")).replace(b"pytorch-", b"jax-")
    )
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        timezone="Europe/Berlin",
        shows=[
            ShowConfig(name="PyTorch", feed=torch, repo="pytorch/pytorch"),
            ShowConfig(name="JAX", feed=jax, repo="jax-ml/jax"),
        ],
        thread_replies=False,
    )
    clock = Clock(SUBSCRIBED)
    with app_with_clock(settings, store, slack_fake, clock) as sender:
        rig = Rig(settings, store, slack_fake, sender, clock, feed_server, http, deliverer)
        rig.slash("subscribe PyTorch daily 17:00")
        reply = rig.slash("subscribe JAX daily 18:00")
        assert reply[0].endswith(
            "This channel's other daily subscriptions move to 18:00 too (one message a day)."
        )
        assert rig.slash("list")[1:] == [
            "• *JAX* — daily at 18:00 (Europe/Berlin)\n• *PyTorch* — daily at 18:00 (Europe/Berlin)"
        ]
        backdate(store)
        await rig.poll(utc(24, 13, 5))
        await daily(rig, utc(24, 15, 0))
        assert rig.posted() == []
        await daily(rig, utc(24, 16, 0))
        assert rig.posted() == ["2026-10-24"]
        (posted,) = slack_fake.messages(CHANNEL)
        assert posted["blocks"][0]["text"]["text"] == "JAX, PyTorch — daily digest, Sat 24 Oct 2026"
        body = "\n".join(b["text"]["text"] for b in posted["blocks"])
        jax_prs = (
            "<https://github.com/jax-ml/jax/pull/199624|#199624>, "
            "<https://github.com/jax-ml/jax/pull/199724|#199724>"
        )
        assert (
            "*JAX* · *<https://example.test/pytorch/2026-10-24|Sharding Day>* · 2:24 · 2 PRs\n"
            f"• {jax_prs} — PR 199624 lands a fix; PR 199724 follows up.\n"
            "*PyTorch* · *<https://example.test/pytorch/2026-10-24|Daily Briefing 24>* · 2:24"
        ) in body


async def test_why_names_the_daily_archive_rule(berlin: Rig) -> None:
    """An episode first seen after the subscribe but dated more than a day before the day's
    window is left out of the daily digest as archive; `why` says so (not "passed over")."""
    rig = berlin
    rig.slash("subscribe PyTorch daily 17:00")
    backdate(rig.store)
    rig.serve(22, 23, 24)
    await rig.poll(utc(24, 13, 5))
    await daily(rig, utc(24, 15, 0))
    assert rig.posted() == ["2026-10-24"]
    reason = rig.slash("why 2026-10-22")[0]
    assert "older than what this channel already had" not in reason
    assert reason.endswith(
        "Not posted: this channel gets *PyTorch* in one message a day at 17:00 (Europe/Berlin), "
        "and the digest covering it (from Fri 23 Oct 2026 17:00 Europe/Berlin) leaves out "
        "episodes dated more than a day before that: the archive, not news."
    )


def test_the_subscribe_reply_says_daily_in_its_first_line(berlin: Rig) -> None:
    """Wording: the first line of a `subscribe … daily` reply says "once a day"
    (only the "Now:" line under it did), after the filter with a comma."""
    rig = berlin
    reply = rig.slash("subscribe PyTorch daily 17:00")
    assert reply[0] == (
        "This channel now gets new *PyTorch* episodes once a day at 17:00 (Europe/Berlin)."
    )
    reply = rig.slash("subscribe PyTorch fsdp daily 5pm")
    assert reply[0] == (
        "This channel now gets new *PyTorch* episodes that mention “fsdp”, once a day at "
        "17:00 (Europe/Berlin). It replaces the earlier subscription to every *PyTorch* episode."
    )
    assert rig.slash("subscribe PyTorch fsdp daily 17:00")[0] == (
        "Nothing changed: this channel already gets new *PyTorch* episodes that mention "
        "“fsdp”, once a day at 17:00 (Europe/Berlin)."
    )
    # Without `daily …` the line says nothing of the mode; `daily off` ends it.
    assert "once a day" not in rig.slash("subscribe PyTorch fsdp")[0]
    assert "once a day" not in rig.slash("subscribe PyTorch fsdp daily off")[0]


async def test_a_new_daily_keyword_subscription_says_its_episodes_go_in_the_daily_digest(
    berlin: Rig,
) -> None:
    # The reply said "posted here at the next poll", as for a digest per episode; in daily
    # mode nothing is posted at a poll: what matches goes in the next daily message.
    rig = berlin
    rig.feed.route("/feed.xml", rss(rss_item(20, headline="Inductor Fusion"), rss_item(19)))
    await rig.poll(utc(20, 13, 5))
    rig.clock.now = utc(20, 13, 30)
    reply = rig.slash("subscribe PyTorch inductor daily 17:00")
    assert not any("next poll" in line for line in reply)
    assert reply[-2] == (
        "Matching already, and in the daily digest here at 2026-10-20 17:00 Europe/Berlin: "
        "Tue 20 Oct 2026 · <https://example.test/pytorch/2026-10-20|Inductor Fusion> · 2:20 · "
        "2 PRs."
    ), reply
    backdate(rig.store, utc(20, 13, 30))
    await rig.poll(utc(20, 14, 0))
    assert rig.posted() == []  # not at the next poll
    await daily(rig, utc(20, 15, 0))
    assert rig.posted() == ["2026-10-20"]
    assert "Inductor Fusion" in str(rig.fake.messages(CHANNEL)[-1]["blocks"])

    # Nothing in the next daily message's window matches: said so, in the daily words.
    rig.slash("unsubscribe PyTorch")
    rig.clock.now = utc(20, 16, 0)
    reply = rig.slash("subscribe PyTorch zebra daily 17:00")
    assert reply[-2] == (
        "Nothing new matches yet — the next matching episode goes in the daily digest here "
        "at 2026-10-21 17:00 Europe/Berlin."
    ), reply
