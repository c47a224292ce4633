"""Daily mode's leftovers: `resume --catch-up` in a daily channel posts what arrived
while paused as one message and leaves no ledger row unposted; `digestbot run --once` sends
the daily digests that are due; the `daily_at` setting is what a bare `daily` means. Signed
slash requests to the real app, real polls of a feed on loopback, the Slack fake, SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from pydantic import ValidationError

from bot import service
from bot.jobs.daily import post_daily
from config.settings import Settings, ShowConfig
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from digests.store.schema import subscriptions
from tests.feedserver import FeedServer
from tests.fixtures.app import CHANNEL, TEAM, assert_valid_message, make_settings
from tests.fixtures.control import Clock, Rig, app_with_clock
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, minute, tzinfo=UTC)


def backdate(store: Store, when: datetime) -> None:
    """The channel's subscriptions as if made at ``when`` (the store stamps the real time)."""
    with store.engine.begin() as conn:
        conn.execute(sa.update(subscriptions).values(created_at=when))


async def daily(rig: Rig, at: datetime) -> None:
    rig.clock.now = at
    await post_daily(rig.settings, rig.store, rig.deliverer, Renderer.of(rig.settings), at)


def unfinished(store: Store) -> list[tuple[str, str]]:
    rows = Ledger.for_store(store).all_rows(TEAM, CHANNEL)
    return [(r.kind, r.key) for r in rows if r.state in ("pending", "posting")]


def headlines(message: dict[str, object]) -> list[int]:
    body = str(message["blocks"])
    return [day for day in range(1, 10) if f"Daily Briefing {day}" in body]


async def test_catch_up_in_a_daily_channel_is_one_message_and_no_row_is_left(rig: Rig) -> None:
    rig.slash("subscribe PyTorch daily 17:00")
    backdate(rig.store, utc(1, 12))
    await rig.poll(utc(1, 14))
    await daily(rig, utc(1, 17))
    assert rig.posted() == ["2026-10-01"]

    rig.clock.now = utc(1, 18)
    rig.slash("pause")
    rig.serve(1, 2)
    await rig.poll(utc(2, 14))
    await daily(rig, utc(2, 17))  # day 2 arrived paused: no digest
    rig.serve(1, 2, 3)
    await rig.poll(utc(3, 10))  # in the window of day 3's digest, but paused
    assert rig.posted() == ["2026-10-01"]

    rig.clock.now = utc(3, 15)
    assert rig.slash("resume --catch-up") == [
        "Resumed *PyTorch*: new episodes are posted here again.",
        "The 2 episodes that arrived while paused are posted shortly, in one message "
        "(this channel gets a daily digest; the next one lists only what comes after).",
    ]
    # The row the resume wrote is the daily job's, which posts it at its next run.
    (kind, key), *more = unfinished(rig.store)
    assert (kind, more) == ("daily", [])
    await daily(rig, utc(3, 15, 1))
    assert unfinished(rig.store) == []
    assert rig.posted() == ["2026-10-01", key]
    caught = rig.fake.messages(CHANNEL)[-1]
    assert_valid_message(caught)
    assert caught["blocks"][0]["text"]["text"] == (
        "PyTorch — while paused, Thu 1 Oct 2026 – Sat 3 Oct 2026"
    )
    assert headlines(caught) == [2, 3]
    await daily(rig, utc(3, 15, 2))  # the job runs every minute: still once
    assert len(rig.fake.messages(CHANNEL)) == 2

    # Day 3's digest has what came after, not the caught-up day 3 again; no episode is ever
    # posted on its own in the daily channel.
    rig.serve(1, 2, 3, 4)
    await rig.poll(utc(3, 16))
    await daily(rig, utc(3, 17))
    assert headlines(rig.fake.messages(CHANNEL)[-1]) == [4]
    await rig.poll(utc(3, 18))
    assert rig.posted() == ["2026-10-01", key, "2026-10-03"]
    assert unfinished(rig.store) == []


async def test_why_names_the_catch_up_message_of_a_daily_channel(rig: Rig) -> None:
    """An episode `resume --catch-up` posted in the daily channel's catch-up message is
    posted, not "arrived while paused" (its own row is the catch-up's, kind daily)."""
    rig.slash("subscribe PyTorch daily 17:00")
    backdate(rig.store, utc(1, 12))
    await rig.poll(utc(1, 14))
    rig.clock.now = utc(1, 18)
    rig.slash("pause")
    rig.serve(1, 2)
    await rig.poll(utc(2, 14))
    rig.clock.now = utc(2, 15)
    held = rig.slash("why daily briefing 2")[0].split("\n")[-1]
    assert held.startswith("Not posted: it arrived while *PyTorch* was paused here")

    rig.slash("resume --catch-up")
    rig.clock.now = utc(2, 15, 1)
    assert rig.slash("why daily briefing 2")[0].split("\n")[-1] == (
        "Planned for this channel and being posted; it should appear within minutes."
    )
    await daily(rig, utc(2, 15, 2))
    caught = rig.fake.messages(CHANNEL)[-1]
    assert headlines(caught) == [2]
    link = f"https://fake.slack.test/archives/{CHANNEL}/p{caught['ts'].replace('.', '')}"
    assert rig.slash("why daily briefing 2")[0].split("\n")[-1] == (
        "Posted here after the pause, in one message with the rest of what came "
        f"meanwhile. <{link}|See it in the channel.>"
    )


async def test_catch_up_per_episode_keeps_its_reply_and_rows(rig: Rig) -> None:
    """The per-episode path is as before: a row an episode, posted by the next poll."""
    rig.slash("subscribe PyTorch")
    await rig.poll(utc(1, 14))
    rig.clock.now = utc(1, 15)
    rig.slash("pause")
    rig.serve(1, 2)
    await rig.poll(utc(2, 14))
    rig.clock.now = utc(2, 15)
    assert rig.slash("resume --catch-up")[1] == (
        "The episode that arrived while paused is posted shortly."
    )
    assert [k for k, _ in unfinished(rig.store)] == ["episode"]
    await rig.poll(utc(2, 16))
    assert unfinished(rig.store) == []


def test_run_once_sends_the_daily_digests_that_are_due(
    feed_server: FeedServer,
    slack_fake: SlackFake,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(4), rss_item(5)))
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        database_url=db_url,
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        thread_replies=False,
    )
    store = Store.open(db_url)
    try:
        store.subscribe(TEAM, CHANNEL, "PyTorch", daily_at="17:00")
        backdate(store, utc(4, 9))
    finally:
        store.close()
    clock = Clock(utc(5, 14))
    monkeypatch.setattr(service, "utcnow", clock)
    out = io.StringIO()
    asyncio.run(service.run_once(settings, out))  # polls at 14:00: no digest is due yet
    assert slack_fake.messages(CHANNEL) == []
    clock.now = utc(5, 17, 5)
    asyncio.run(service.run_once(settings, out))
    (posted,) = slack_fake.messages(CHANNEL)
    assert_valid_message(posted)
    assert posted["blocks"][0]["text"]["text"] == "PyTorch — daily digest, Mon 5 Oct 2026"
    assert headlines(posted) == [4, 5]
    assert "1 posted" in out.getvalue().splitlines()[-1]
    clock.now = utc(5, 18)
    asyncio.run(service.run_once(settings, out))  # once a channel and day
    assert len(slack_fake.messages(CHANNEL)) == 1


def test_daily_at_is_what_a_bare_daily_means(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(1)))
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        daily_at="8:30am",
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
    )
    assert settings.daily_at == "08:30"
    with app_with_clock(settings, store, slack_fake, Clock(utc(1, 12))) as sender:
        body = sender.slash("subscribe PyTorch daily").json()
    assert body["blocks"][1]["text"]["text"].endswith("· daily at 08:30 (UTC)")
    (sub,) = store.subscriptions()
    assert sub.daily_at == "08:30"


@pytest.mark.parametrize("value", ["25:00", "noon", "17", ""])
def test_a_daily_at_that_is_no_time_of_day_is_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="daily_at"):
        Settings(daily_at=value)


def test_daily_at_comes_from_the_environment_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAILY_AT", "6pm")
    assert Settings().daily_at == "18:00"
