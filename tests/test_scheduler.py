"""bot.jobs.scheduler: the jobs it builds, and the clock running for real against the fakes."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.delivery.deliverer import Deliverer
from bot.jobs.cycle import RunReport
from bot.jobs.scheduler import Clock, run_clock
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.errors import SlackError
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def settings_for(*feeds: tuple[str, str], jitter: int = 0, **kw: object) -> Settings:
    return Settings(
        shows=[ShowConfig(name=name, feed=url) for name, url in feeds],
        schedule=ScheduleConfig(poll_minutes=15, jitter_seconds=jitter),
        team_id=TEAM,
        **kw,  # type: ignore[arg-type]
    )


async def test_one_poll_job_per_show_with_stable_ids(
    store: Store, slack_fake: SlackFake, http: httpx.AsyncClient
) -> None:
    settings = settings_for(("PyTorch", "http://x/a"), ("Rust", "http://x/b"), jitter=30)
    for show in settings.shows:
        store.ensure_show(show.name, show.feed, show.repo)
    backoff_until = NOW + timedelta(hours=3)
    store.save_fetch_state(
        "Rust", replace(store.fetch_state("Rust"), failures=3, next_poll_at=backoff_until)
    )
    added: list[AsyncIOScheduler] = []
    clock = Clock(
        settings, store, slack_outbox(slack_fake), http, now=NOW, extra_jobs=[added.append]
    )
    scheduler = clock.scheduler
    try:
        jobs = {job.id: job for job in scheduler.get_jobs()}
        assert sorted(jobs) == ["poll:PyTorch", "poll:Rust", "sweep"]
        sweep = jobs.pop("sweep")
        assert sweep.coalesce is True and sweep.max_instances == 1
        assert sweep.trigger.interval == timedelta(seconds=30) and sweep.next_run_time == NOW
        for job in jobs.values():
            assert job.coalesce is True and job.max_instances == 1
            assert isinstance(job.trigger, IntervalTrigger)
            assert job.trigger.interval == timedelta(minutes=15) and job.trigger.jitter == 30
        assert jobs["poll:PyTorch"].next_run_time == NOW
        assert jobs["poll:Rust"].next_run_time == backoff_until  # restart honours the backoff
        assert added == [scheduler]
        assert isinstance(clock.deliverer, Deliverer)
        assert not scheduler.running
    finally:
        await clock.deliverer.aclose()


async def test_running_clock_posts_and_moves_the_next_run(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    good = feed_server.route("/good.xml", rss(rss_item(3), rss_item(2)))
    bad = feed_server.route("/bad.xml", b"nope", status=503, headers={"Retry-After": "5400"})
    settings = settings_for(("PyTorch", good), ("Broken", bad))
    for show in settings.shows:
        store.ensure_show(show.name, show.feed, show.repo)
        store.subscribe(TEAM, "C1", show.name, source="config")
    outbox = slack_outbox(slack_fake)
    deliverer = Deliverer(store, outbox, per_channel_interval=0.0)
    reports: list[RunReport] = []
    scheduler = Clock(
        settings, store, outbox, http, deliverer=deliverer, on_report=reports.append
    ).scheduler
    scheduler.start()
    try:
        for _ in range(200):
            if len(reports) == 2:
                break
            await asyncio.sleep(0.05)
        assert len(reports) == 2
        assert keys_in(slack_fake.messages("C1")) == ["PyTorch:pytorch-2026-10-03"]
        broken = store.fetch_state("Broken")
        assert broken.failures == 1 and broken.next_poll_at is not None
        job = scheduler.get_job("poll:Broken")
        assert job.next_run_time == broken.next_poll_at  # Retry-After 1.5 h, not 15 min
        assert broken.last_polled_at is not None
        assert broken.next_poll_at - broken.last_polled_at == timedelta(seconds=5400)
        fine = store.fetch_state("PyTorch")
        assert scheduler.get_job("poll:PyTorch").next_run_time == fine.next_poll_at
    finally:
        scheduler.shutdown(wait=False)
        await deliverer.aclose()
        await outbox.close()


async def test_revoked_token_pauses_the_jobs(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3)))
    settings = settings_for(("PyTorch", url))
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    store.subscribe(TEAM, "C1", "PyTorch", source="config")
    slack_fake.tokens.clear()
    outbox = slack_outbox(slack_fake)
    deliverer = Deliverer(store, outbox, per_channel_interval=0.0)
    reports: list[RunReport] = []
    scheduler = Clock(
        settings, store, outbox, http, deliverer=deliverer, on_report=reports.append
    ).scheduler
    scheduler.start()
    try:
        for _ in range(200):
            if reports:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.05)
        assert reports and reports[0].fatal
        assert scheduler.get_job("poll:PyTorch").next_run_time is None  # paused
        assert slack_fake.messages("C1") == []
    finally:
        scheduler.shutdown(wait=False)
        await deliverer.aclose()
        await outbox.close()


async def test_run_clock_until_stopped(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url)],
        channels=[{"id": "C0CLOCK01", "shows": ["PyTorch"]}],  # type: ignore[list-item]
        database_url=db_url,
        slack_bot_token=slack_fake.token,
        slack_api_url=slack_fake.api_url,
    )
    stop = asyncio.Event()
    clock = asyncio.create_task(run_clock(settings, stop=stop))
    try:
        for _ in range(200):
            if slack_fake.messages("C0CLOCK01") or clock.done():
                break
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.wait_for(clock, 30)
    assert keys_in(slack_fake.messages("C0CLOCK01")) == ["PyTorch:pytorch-2026-10-03"]
    post = slack_fake.calls_to("chat.postMessage")[0]
    assert post.token == slack_fake.token
    check = Store.open(db_url)
    try:
        subs = check.subscriptions(channel_id="C0CLOCK01")
        assert [(s.team_id, s.source) for s in subs] == [("T0TEST", "config")]
    finally:
        check.close()


async def test_many_shows_starting_together_stay_inside_the_pool(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    """Every job fires at start-up; on PostgreSQL each holds a lock connection while it polls."""
    body = rss(rss_item(3))
    feeds = [(f"Show{n:02d}", feed_server.route(f"/f{n}.xml", body)) for n in range(40)]
    settings = settings_for(*feeds)
    for name, url in feeds:
        store.ensure_show(name, url, "pytorch/pytorch")
        store.subscribe(TEAM, "C1", name, source="config")
    outbox = slack_outbox(slack_fake)
    deliverer = Deliverer(store, outbox, per_channel_interval=0.0)
    reports: list[RunReport] = []
    scheduler = Clock(
        settings, store, outbox, http, deliverer=deliverer, on_report=reports.append
    ).scheduler
    scheduler.start()
    try:
        for _ in range(600):
            if len(reports) == len(feeds):
                break
            await asyncio.sleep(0.05)
        assert len(reports) == len(feeds)
        assert all(not r.errors and r.polls[0].status == "ok" for r in reports)
        assert len(keys_in(slack_fake.messages("C1"))) == len(feeds)
    finally:
        scheduler.shutdown(wait=False)
        await deliverer.aclose()
        await outbox.close()


async def test_stopping_the_clock_lets_a_running_poll_finish(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # The feed answers slowly, so the poll is still running when the clock is stopped.
    url = feed_server.route("/slow.xml", rss(rss_item(3)), delay=0.5)
    settings = settings_for(("PyTorch", url))
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    store.subscribe(TEAM, "C1", "PyTorch", source="config")
    outbox = slack_outbox(slack_fake)
    deliverer = Deliverer(store, outbox, per_channel_interval=0.0)
    reports: list[RunReport] = []
    clock = Clock(
        settings,
        store,
        outbox,
        http,
        deliverer=deliverer,
        on_report=reports.append,
        sweep_seconds=None,
    )
    clock.start()
    try:
        for _ in range(200):
            if clock.running:
                break
            await asyncio.sleep(0.01)
        assert clock.running and not reports
    finally:
        await clock.stop(grace=30)
    try:
        assert len(reports) == 1 and not clock.running
        assert keys_in(slack_fake.messages("C1")) == ["PyTorch:pytorch-2026-10-03"]
    finally:
        await deliverer.aclose()
        await outbox.close()


async def test_a_slack_outage_at_start_up_is_waited_out(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    """The clock keeps trying auth.test instead of exiting."""
    url = feed_server.route("/feed.xml", rss(rss_item(3)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url)],
        channels=[{"id": "C0OUTAGE1", "shows": ["PyTorch"]}],  # type: ignore[list-item]
        database_url=db_url,
        slack_bot_token=slack_fake.token,
        slack_api_url=slack_fake.api_url,
    )
    # Slack answering "service_unavailable" (HTTP 200, so slack_sdk does not retry itself).
    slack_fake.fail_next("auth.test", error="service_unavailable", times=3)
    stop = asyncio.Event()
    clock = asyncio.create_task(run_clock(settings, stop=stop, start_backoff=0.05))
    try:
        for _ in range(600):
            if slack_fake.messages("C0OUTAGE1") or clock.done():
                break
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.wait_for(clock, 30)
    assert len(slack_fake.calls_to("auth.test")) == 4
    assert keys_in(slack_fake.messages("C0OUTAGE1")) == ["PyTorch:pytorch-2026-10-03"]


async def test_a_refused_token_at_start_up_still_ends_the_clock(
    db_url: str, slack_fake: SlackFake
) -> None:
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed="http://127.0.0.1:9/feed.xml")],
        database_url=db_url,
        slack_bot_token=slack_fake.token,
        slack_api_url=slack_fake.api_url,
    )
    slack_fake.fail_next("auth.test", error="invalid_auth")
    with pytest.raises(SlackError):
        await asyncio.wait_for(run_clock(settings, stop=asyncio.Event(), start_backoff=0.05), 30)
    assert len(slack_fake.calls_to("auth.test")) == 1


async def test_stopping_while_slack_is_down_ends_the_clock_quietly(
    db_url: str, slack_fake: SlackFake
) -> None:
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed="http://127.0.0.1:9/feed.xml")],
        database_url=db_url,
        slack_bot_token=slack_fake.token,
        slack_api_url=slack_fake.api_url,
    )
    slack_fake.fail_next("auth.test", error="service_unavailable", times=1000)
    stop = asyncio.Event()
    clock = asyncio.create_task(run_clock(settings, stop=stop, start_backoff=0.05))
    for _ in range(600):
        if len(slack_fake.calls_to("auth.test")) >= 3 or clock.done():
            break
        await asyncio.sleep(0.05)
    assert not clock.done()
    stop.set()
    await asyncio.wait_for(clock, 30)  # returns, no exception


async def test_a_show_another_clock_polled_within_its_interval_is_not_fetched(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3)))
    settings = settings_for(("PyTorch", url))
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    # Another clock's poll ten seconds ago: its next is the show's next.
    theirs = NOW + timedelta(minutes=15) - timedelta(seconds=10)
    store.save_fetch_state(
        "PyTorch",
        replace(store.fetch_state("PyTorch"), last_polled_at=NOW - timedelta(seconds=10),
                next_poll_at=theirs),
    )  # fmt: skip
    now = [NOW]
    reports: list[RunReport] = []
    outbox = slack_outbox(slack_fake)
    clock = Clock(settings, store, outbox, http, now=lambda: now[0], on_report=reports.append)
    try:
        job = clock.scheduler.get_job("poll:PyTorch")
        await job.func()
        assert [p.status for p in reports[-1].polls] == ["not_due"]
        assert feed_server.requests_to("/feed.xml") == []
        assert clock.scheduler.get_job("poll:PyTorch").next_run_time == theirs
        now[0] = theirs
        await job.func()
        assert [p.status for p in reports[-1].polls] == ["ok"]
        assert len(feed_server.requests_to("/feed.xml")) == 1
        assert store.fetch_state("PyTorch").next_poll_at == theirs + timedelta(minutes=15)
    finally:
        await clock.deliverer.aclose()
        await outbox.close()
