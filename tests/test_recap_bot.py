"""bot.jobs.recap: the recap from the store, delivered once through the ledger, on a cron.

Real parts: the store (SQLite, and PostgreSQL when DIGESTBOT_TEST_POSTGRES_URL is set), the
Deliverer with the Slack Web API fake (a real HTTP server), APScheduler's real scheduler.
Time is passed in (``now``) or read from the trigger; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.delivery.deliverer import Deliverer
from bot.delivery.outbox import SlackOutbox, metadata_for
from bot.jobs.recap import (
    RECAP_JOB_ID,
    covered_week,
    last_fire_time,
    post_recaps,
    recap_deliveries,
    recap_job,
    recap_trigger,
)
from bot.jobs.recap_build import build_recap, week_message
from bot.jobs.sweeper import Sweeper
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import Episode
from digests.recap import week_bounds
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from digests.store.schema import subscriptions
from tests.fixtures.delivery import copies, slack_outbox
from tests.fixtures.ledger import seed_row
from tests.fixtures.recap import episode, pr, sample_week
from tests.fixtures.store import pause_channel
from tests.slackfake import SlackFake

TEAM = "T1"
BERLIN = ZoneInfo("Europe/Berlin")
# Monday 12 Oct 2026, 09:00 in Berlin (CEST): the recap of 2026-W41 is due.
MONDAY_0900 = datetime(2026, 10, 12, 9, 0, tzinfo=BERLIN)


def make_settings(**kw: Any) -> Settings:
    values: dict[str, Any] = {
        "timezone": "Europe/Berlin",
        "shows": [
            ShowConfig(name="PyTorch", feed="pytorch.xml"),
            ShowConfig(name="JAX", feed="jax.xml", repo="jax-ml/jax"),
        ],
        "schedule": ScheduleConfig(recap="mon 09:00"),
        "quiet_week": False,
        "team_id": TEAM,
    }
    values.update(kw)
    return Settings(**values)


def jax_episode(guid: str, when: str, headline: str, *prs: int) -> Episode:
    return episode(
        guid,
        when,
        headline,
        show="JAX",
        summary=f"{headline}.",
        prs=tuple(pr(n, f"PR {n}.", repo="jax-ml/jax") for n in prs),
    )


def fill(store: Store, settings: Settings, episodes: list[Episode]) -> None:
    for show in settings.shows:
        store.ensure_show(show.name, show.feed, show.repo)
    store.upsert_episodes(episodes, datetime(2026, 10, 12, 6, 0, tzinfo=UTC))


def backdate(store: Store, channel: str, when: datetime) -> None:
    """The channel's subscriptions as if made at ``when`` (the store stamps the real time)."""
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(subscriptions)
            .where(subscriptions.c.channel_id == channel)
            .values(created_at=when)
        )


def subscribe_channels(store: Store) -> None:
    store.subscribe(TEAM, "C1", "PyTorch")
    store.subscribe(TEAM, "C2", "PyTorch", keywords=["compiler"])
    store.subscribe(TEAM, "C2", "JAX")
    store.subscribe(TEAM, "C3", "PyTorch", recap=False)
    store.subscribe(TEAM, "C4", "PyTorch")
    pause_channel(store, TEAM, "C4", "is_archived", datetime(2026, 10, 1, tzinfo=UTC))


def week_41() -> list[Episode]:
    return [
        *sample_week(),
        jax_episode("jax-1", "2026-10-06T17:00:00+00:00", "Sharding Rules Tighten", 31001),
        # Sunday 23:30 in Berlin (21:30 UTC): still week 41 there.
        jax_episode("jax-2", "2026-10-11T21:30:00+00:00", "Late Sunday Compiler Notes", 31002),
        # Monday 00:30 in Berlin: week 42.
        jax_episode("jax-3", "2026-10-11T22:30:00+00:00", "Monday Already", 31003),
    ]


@pytest.fixture
def settings() -> Settings:
    return make_settings()


@pytest.fixture
def filled(store: Store, settings: Settings) -> Store:
    fill(store, settings, week_41())
    subscribe_channels(store)
    return store


class Deliverers(list[Deliverer]):
    """The deliverers a test made (it may close and drop some itself), and every outbox they
    use: each outbox's aiohttp session is closed in the test's loop, never left for the
    garbage collector to report ("Unclosed client session") in whatever test runs then."""

    def __init__(self) -> None:
        super().__init__()
        self.outboxes: list[SlackOutbox] = []


@pytest.fixture
async def deliverers() -> AsyncIterator[Deliverers]:
    made = Deliverers()
    yield made
    for d in made:
        d.close()
    for outbox in made.outboxes:
        await outbox.close()


def deliverer(made: Deliverers, store: Store, fake: SlackFake) -> Deliverer:
    outbox = slack_outbox(fake)
    made.outboxes.append(outbox)
    d = Deliverer(store, outbox, per_channel_interval=0.0, backoff=0.01)
    made.append(d)
    return d


def top_level(fake: SlackFake, channel: str) -> list[dict[str, Any]]:
    return [m for m in fake.messages(channel) if m.get("thread_ts") in (None, m.get("ts"))]


def header(message: Mapping[str, Any]) -> str:
    return str(message["blocks"][0]["text"]["text"])


# -- which week, when -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("recap", "tz", "now", "expected"),
    [
        # At 09:00 on Monday: the week that just ended.
        ("mon 09:00", "Europe/Berlin", MONDAY_0900, (2026, 41)),
        # A catch-up the next morning still covers it (decided from the scheduled time).
        ("mon 09:00", "Europe/Berlin", MONDAY_0900 + timedelta(hours=23), (2026, 41)),
        # A minute early, the latest run was last Monday's.
        ("mon 09:00", "Europe/Berlin", MONDAY_0900 - timedelta(minutes=1), (2026, 40)),
        # Across the year boundary: Monday 4 Jan 2027 recaps 2026-W53.
        ("mon 09:00", "UTC", datetime(2027, 1, 4, 9, 0, tzinfo=UTC), (2026, 53)),
        ("mon 09:00", "UTC", datetime(2026, 1, 5, 9, 30, tzinfo=UTC), (2026, 1)),
        # 08:30 UTC on Monday is 09:30 in Berlin but only 04:30 in New York.
        ("mon 09:00", "America/New_York", datetime(2026, 10, 12, 8, 30, tzinfo=UTC), (2026, 40)),
        # These two changed from the week they are sent in (41, not over yet)
        # to the last complete week.
        ("sun 20:00", "Europe/Berlin", datetime(2026, 10, 11, 20, 0, tzinfo=BERLIN), (2026, 40)),
        ("fri 17:00", "Europe/Berlin", datetime(2026, 10, 9, 18, 0, tzinfo=BERLIN), (2026, 40)),
    ],
)
def test_covered_week(recap: str, tz: str, now: datetime, expected: tuple[int, int]) -> None:
    s = make_settings(timezone=tz, schedule=ScheduleConfig(recap=recap))
    assert covered_week(s, now) == expected


@pytest.mark.parametrize("day", ["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
@pytest.mark.parametrize("at", ["00:00", "09:00", "23:59"])
def test_a_recap_covers_the_last_complete_week_whatever_its_weekday(day: str, at: str) -> None:
    s = make_settings(schedule=ScheduleConfig(recap=f"{day} {at}"))
    # Any moment of week 42 (12–18 Oct 2026, Berlin) after that week's recap time: W41,
    # the last week that was over when the recap was due — never the half-gone W42.
    days = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
    hour, minute = (int(x) for x in at.split(":"))
    due = datetime(2026, 10, 12 + days.index(day), hour, minute, tzinfo=BERLIN)
    for later in (timedelta(0), timedelta(hours=3), timedelta(days=6, hours=23, minutes=59)):
        now = due + later
        assert last_fire_time(s, now) == due
        assert covered_week(s, now) == (2026, 41)
        # The week it covers is over by the time it is due, and it is the latest such.
        _, end = week_bounds(2026, 41, BERLIN)
        assert end <= due < end + timedelta(days=7)


@pytest.mark.parametrize(
    ("after", "fires"),
    [
        # Berlin leaves summer time on Sunday 25 Oct 2026: 09:00 is 07:00 UTC before, 08:00 after.
        (
            datetime(2026, 10, 14, 12, 0, tzinfo=UTC),
            ["2026-10-19T07:00", "2026-10-26T08:00", "2026-11-02T08:00"],
        ),
        # And back to summer time on 29 Mar 2026.
        (
            datetime(2026, 3, 20, 0, 0, tzinfo=UTC),
            ["2026-03-23T08:00", "2026-03-30T07:00"],
        ),
        # Exactly at a fire time, that fire time is the next one (it is due now).
        (datetime(2026, 10, 12, 7, 0, tzinfo=UTC), ["2026-10-12T07:00", "2026-10-19T07:00"]),
    ],
)
def test_trigger_fires_at_09_00_local_through_dst(after: datetime, fires: list[str]) -> None:
    trigger = recap_trigger(make_settings())
    got: list[str] = []
    previous = None
    now = after
    for _ in fires:
        fire = trigger.get_next_fire_time(previous, now)
        local = fire.astimezone(BERLIN)
        assert (local.weekday(), local.hour, local.minute) == (0, 9, 0)
        got.append(fire.astimezone(UTC).strftime("%Y-%m-%dT%H:%M"))
        previous, now = fire, fire + timedelta(seconds=1)
    assert got == fires


def test_trigger_follows_the_configured_day_time_and_zone() -> None:
    s = make_settings(timezone="Asia/Tokyo", schedule=ScheduleConfig(recap="fri 17:30"))
    fire = recap_trigger(s).get_next_fire_time(None, datetime(2026, 10, 12, tzinfo=UTC))
    assert fire.astimezone(UTC) == datetime(2026, 10, 16, 8, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (MONDAY_0900, MONDAY_0900),
        (MONDAY_0900 + timedelta(days=6, hours=23), MONDAY_0900),
        (MONDAY_0900 - timedelta(seconds=1), MONDAY_0900 - timedelta(days=7)),
        # The Monday after the DST change: 09:00 CET, 08:00 UTC.
        (
            datetime(2026, 10, 26, 8, 0, tzinfo=UTC),
            datetime(2026, 10, 26, 9, 0, tzinfo=BERLIN),
        ),
    ],
)
def test_last_fire_time(now: datetime, expected: datetime) -> None:
    assert last_fire_time(make_settings(), now) == expected


# -- building ---------------------------------------------------------------------------------


def test_build_recap_reads_the_local_week_from_the_store(filled: Store, settings: Settings) -> None:
    rendered = build_recap(
        settings, filled, Renderer(tz=settings.tz), year=2026, week=41, shows=["pytorch", "jax"]
    )
    assert rendered is not None
    post, replies = rendered
    # 14 PRs: the top 10 in the post, 4 in one thread reply.
    assert len(replies) == 1
    assert replies[0]["blocks"][0]["text"]["text"] == "*More pull requests* (11–14 of 14)"
    assert header(post) == "PyTorch, JAX — week 41, 5 Oct – 11 Oct 2026"
    text = str(post["blocks"])
    assert "Late Sunday Compiler Notes" in text  # Sunday 23:30 local
    assert "Monday Already" not in text  # Monday 00:30 local
    assert post["blocks"][1]["text"]["text"].startswith("*7 episodes · ")


def test_build_recap_keywords_and_empty_weeks(filled: Store, settings: Settings) -> None:
    r = Renderer(tz=settings.tz)
    rendered = build_recap(
        settings, filled, r, year=2026, week=41, shows=["PyTorch"], keywords=["compiler"]
    )
    assert rendered is not None
    assert "*2 episodes · " in rendered[0]["blocks"][1]["text"]["text"]
    assert "matching compiler" in rendered[0]["blocks"][1]["text"]["text"]
    assert build_recap(settings, filled, r, year=2026, week=40, shows=[]) is None
    quiet = make_settings(quiet_week=True)
    rendered = build_recap(quiet, filled, r, year=2026, week=40, shows=[])
    assert rendered is not None
    assert "quiet week" in rendered[0]["text"]


def test_week_message_for_the_slash_command(filled: Store, settings: Settings) -> None:
    r = Renderer(tz=settings.tz)
    message = week_message(settings, filled, r, date(2026, 10, 8), ["PyTorch"])
    assert header(message) == "PyTorch — week 41, 5 Oct – 11 Oct 2026"
    assert message["blocks"][1]["text"]["text"].startswith("*5 episodes · ")
    empty = week_message(settings, filled, r, date(2026, 9, 1), ["PyTorch"])
    assert header(empty) == "PyTorch — week 36, 31 Aug – 6 Sep 2026"
    assert empty["blocks"][1]["text"]["text"] == "_A quiet week: no new episodes._"


def test_each_channel_gets_its_own_recap(filled: Store, settings: Settings) -> None:
    items = recap_deliveries(settings, filled, Renderer(tz=settings.tz), year=2026, week=41)
    by_channel = {d.channel_id: d for d in items}
    # C3 asked for no recap; C4 is paused.
    assert sorted(by_channel) == ["C1", "C2"]
    assert {(d.kind, d.key, d.team_id) for d in items} == {("recap", "2026-W41", TEAM)}
    assert header(by_channel["C1"].message) == "PyTorch — week 41, 5 Oct – 11 Oct 2026"
    c2 = by_channel["C2"].message
    assert header(c2) == "JAX, PyTorch — week 41, 5 Oct – 11 Oct 2026"
    # C2 follows PyTorch only for "compiler": 2 of its 5 episodes, and both JAX ones.
    assert c2["blocks"][1]["text"]["text"].startswith("*4 episodes · ")


# -- delivering -------------------------------------------------------------------------------


async def test_post_recaps_posts_once_across_restarts_and_catch_ups(
    db_url: str, settings: Settings, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    first_store = Store.open(db_url)
    fill(first_store, settings, week_41())
    subscribe_channels(first_store)
    renderer = Renderer(tz=settings.tz)
    report = await post_recaps(
        settings, first_store, deliverer(deliverers, first_store, slack_fake), renderer, MONDAY_0900
    )
    assert sorted(i[1] for i in report.posted) == ["C1", "C2"]
    for d in deliverers:
        d.close()
    deliverers.clear()
    first_store.close()

    # A restarted process (new store, new deliverer, new owner) catching up an hour later,
    # then again the next morning: the ledger already has the week.
    for later in (timedelta(hours=1), timedelta(hours=23)):
        store = Store.open(db_url)
        again = await post_recaps(
            settings, store, deliverer(deliverers, store, slack_fake), renderer, MONDAY_0900 + later
        )
        assert again.posted == [] and sorted(i[1] for i in again.unchanged) == ["C1", "C2"]
        deliverers.pop().close()
        store.close()

    for channel in ("C1", "C2"):
        assert copies(slack_fake, channel, "2026-W41") == 1
    assert top_level(slack_fake, "C3") == [] and top_level(slack_fake, "C4") == []
    posted = top_level(slack_fake, "C1")[0]
    assert header(posted) == "PyTorch — week 41, 5 Oct – 11 Oct 2026"
    assert posted["metadata"]["event_payload"]["key"] == "2026-W41"


async def test_the_next_week_is_a_new_recap(
    filled: Store, settings: Settings, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    d = deliverer(deliverers, filled, slack_fake)
    r = Renderer(tz=settings.tz)
    await post_recaps(settings, filled, d, r, MONDAY_0900)
    # W42 has one JAX episode (Monday 00:30 local): C2 gets a recap, C1 (PyTorch) does not.
    report = await post_recaps(settings, filled, d, r, MONDAY_0900 + timedelta(days=7))
    assert [i[1:] for i in report.posted] == [("C2", "recap", "2026-W42")]
    assert [header(m) for m in top_level(slack_fake, "C2")] == [
        "JAX, PyTorch — week 41, 5 Oct – 11 Oct 2026",
        "JAX, PyTorch — week 42, 12 Oct – 18 Oct 2026",
    ]
    assert len(top_level(slack_fake, "C1")) == 1


async def test_a_show_paused_in_a_channel_is_left_out_of_its_recap(
    filled: Store, settings: Settings, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    # `/episodes pause PyTorch` in C2 (PyTorch and JAX), and every show in C1 (PyTorch):
    # the recap used to list PyTorch in both anyway.
    paused = datetime(2026, 10, 9, 12, 0, tzinfo=UTC)
    filled.hold(TEAM, "C2", "PyTorch", paused)
    filled.hold(TEAM, "C1", None, paused, until=MONDAY_0900 + timedelta(days=1))
    d = deliverer(deliverers, filled, slack_fake)
    r = Renderer(tz=settings.tz)
    report = await post_recaps(settings, filled, d, r, MONDAY_0900)
    assert [i[1] for i in report.posted] == ["C2"]
    posted = top_level(slack_fake, "C2")
    assert [header(m) for m in posted] == ["JAX — week 41, 5 Oct – 11 Oct 2026"]
    assert posted[0]["blocks"][1]["text"]["text"].startswith("*2 episodes · ")
    assert top_level(slack_fake, "C1") == []
    # C1's pause is over the next week: its recap of week 42 comes again (nothing of
    # PyTorch that week, so nothing to post); C2's PyTorch stays out while it is paused.
    filled.release(TEAM, "C2", "PyTorch", MONDAY_0900 + timedelta(days=6))
    again = await post_recaps(settings, filled, d, r, MONDAY_0900 + timedelta(days=7))
    assert [header(m) for m in top_level(slack_fake, "C2")][-1] == (
        "JAX, PyTorch — week 42, 12 Oct – 18 Oct 2026"
    )
    assert [i[1] for i in again.posted] == ["C2"]


async def test_two_clocks_at_once_post_one_recap(
    db_url: str, settings: Settings, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    setup = Store.open(db_url)
    fill(setup, settings, week_41())
    subscribe_channels(setup)
    setup.close()
    stores = [Store.open(db_url), Store.open(db_url)]
    try:
        r = Renderer(tz=settings.tz)
        slack_fake.latency = 0.05  # both clocks are mid-post at the same time
        reports = await asyncio.gather(
            *(
                post_recaps(settings, s, deliverer(deliverers, s, slack_fake), r, MONDAY_0900)
                for s in stores
            )
        )
    finally:
        for d in deliverers:
            d.close()
        deliverers.clear()
        for s in stores:
            s.close()
    assert sorted(i[1] for rep in reports for i in rep.posted) == ["C1", "C2"]
    for channel in ("C1", "C2"):
        assert copies(slack_fake, channel, "2026-W41") == 1


async def test_a_huge_week_is_accepted_by_slack_with_the_overflow_threaded(
    store: Store, settings: Settings, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    eps = []
    numbers = iter(range(100_000, 100_300))
    for day in range(7):
        for slot in range(7):
            count = 12 if (day, slot) == (0, 0) else 6  # 300 distinct PRs in all
            prs = [pr(next(numbers), "A sentence about it. " * 8) for _ in range(count)]
            # A few come back later in the week (the ones that go first).
            prs += [pr(n, "Named again.") for n in range(100_000, 100_000 + day)]
            eps.append(
                episode(
                    f"g{day}-{slot}",
                    datetime(2026, 10, 5, 6, tzinfo=UTC) + timedelta(days=day, hours=slot * 2),
                    f"Busy day {day} slot {slot}: a fairly long headline about compilers",
                    prs=tuple({p.number: p for p in prs}.values()),
                )
            )
    fill(store, settings, eps)
    store.subscribe(TEAM, "C9", "PyTorch")
    report = await post_recaps(
        settings, store, deliverer(deliverers, store, slack_fake), Renderer(), MONDAY_0900
    )
    assert report.failed == {} and len(report.posted) == 1
    refused = [c for c in slack_fake.calls_to("chat.postMessage") if c.status != 200]
    assert refused == []
    messages = slack_fake.messages("C9")
    parent, replies = messages[0], messages[1:]
    assert replies and all(m["thread_ts"] == parent["ts"] for m in replies)
    text = " ".join(str(m["blocks"]) for m in messages)
    named = {int(n) for n in re.findall(r"/pull/(\d+)\|#", text)}
    assert named == set(range(100_000, 100_300))
    assert len(re.findall(r"<https://example\.invalid/pytorch/g\d-\d\|", text)) == 49


# -- the scheduled job ------------------------------------------------------------------------


def _recap_at(moment: datetime) -> ScheduleConfig:
    days = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
    return ScheduleConfig(recap=f"{days[moment.weekday()]} {moment:%H:%M}")


async def _run_scheduler(
    settings: Settings, store: Store, d: Deliverer, event_mask: int
) -> tuple[AsyncIOScheduler, JobExecutionEvent]:
    loop = asyncio.get_running_loop()
    seen: asyncio.Future[JobExecutionEvent] = loop.create_future()

    def listener(event: JobExecutionEvent) -> None:
        if event.job_id == RECAP_JOB_ID and not seen.done():
            loop.call_soon_threadsafe(seen.set_result, event)

    scheduler = AsyncIOScheduler(timezone=settings.tz)
    scheduler.add_listener(listener, event_mask)
    recap_job(settings, store, d, Renderer(tz=settings.tz))(scheduler)
    scheduler.start()
    event = await asyncio.wait_for(seen, timeout=30)
    return scheduler, event


async def test_a_clock_down_at_recap_time_posts_when_it_comes_back(
    store: Store, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    # The scheduler runs on the real clock: schedule the recap one hour ago, as if this
    # process had been down at that time and just started.
    real_now = datetime.now(UTC)
    s = make_settings(
        timezone="UTC", schedule=_recap_at(real_now - timedelta(hours=1)), quiet_week=True
    )
    fill(store, s, [])
    store.subscribe(TEAM, "C1", "PyTorch")
    # C1 was there when the recap was due (later ones wait a week).
    backdate(store, "C1", real_now - timedelta(days=3))
    d = deliverer(deliverers, store, slack_fake)
    scheduler, event = await _run_scheduler(s, store, d, EVENT_JOB_EXECUTED | EVENT_JOB_MISSED)
    try:
        assert event.code == EVENT_JOB_EXECUTED and event.exception is None
        year, week = covered_week(s, real_now)
        assert copies(slack_fake, "C1", f"{year}-W{week:02d}") == 1
        job = scheduler.get_job(RECAP_JOB_ID)
        assert job.next_run_time == last_fire_time(s, real_now) + timedelta(days=7)
    finally:
        scheduler.shutdown(wait=False)


async def test_a_clock_back_after_recap_time_skips_channels_subscribed_since(
    store: Store, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    real_now = datetime.now(UTC)
    s = make_settings(
        timezone="UTC", schedule=_recap_at(real_now - timedelta(hours=1)), quiet_week=True
    )
    fill(store, s, [])
    due = last_fire_time(s, real_now)
    for channel in ("C1", "C2", "C3"):
        store.subscribe(TEAM, channel, "PyTorch")
    backdate(store, "C1", due - timedelta(days=2))
    backdate(store, "C2", due)  # at the very time it was due: it was there
    # C3 subscribed while this clock was down, after the recap was due.
    backdate(store, "C3", due + timedelta(minutes=30))
    d = deliverer(deliverers, store, slack_fake)
    scheduler, event = await _run_scheduler(s, store, d, EVENT_JOB_EXECUTED | EVENT_JOB_MISSED)
    try:
        assert event.code == EVENT_JOB_EXECUTED and event.exception is None
        year, week = covered_week(s, real_now)
        key = f"{year}-W{week:02d}"
        assert copies(slack_fake, "C1", key) == 1
        assert copies(slack_fake, "C2", key) == 1
        assert slack_fake.messages("C3") == []
    finally:
        scheduler.shutdown(wait=False)
    # A later run of the same week (another clock, a retry) leaves C3 alone too.
    report = await post_recaps(s, store, d, Renderer(tz=s.tz), real_now, subscribed_by=due)
    assert report.posted == [] and slack_fake.messages("C3") == []


async def test_a_recap_missed_by_more_than_the_grace_waits_for_next_week(
    store: Store,
    slack_fake: SlackFake,
    deliverers: Deliverers,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real_now = datetime.now(UTC)
    s = make_settings(
        timezone="UTC", schedule=_recap_at(real_now - timedelta(days=2)), quiet_week=True
    )
    fill(store, s, [])
    store.subscribe(TEAM, "C1", "PyTorch")
    d = deliverer(deliverers, store, slack_fake)
    scheduler = AsyncIOScheduler(timezone=s.tz)
    missed: list[JobExecutionEvent] = []
    scheduler.add_listener(missed.append, EVENT_JOB_MISSED)
    with caplog.at_level(logging.INFO):
        recap_job(s, store, d, Renderer(tz=s.tz))(scheduler)
        scheduler.start()
        try:
            job = scheduler.get_job(RECAP_JOB_ID)
            # Next week's run, not a misfire APScheduler would warn about at every start.
            assert job.next_run_time == last_fire_time(s, real_now) + timedelta(days=7)
            assert job.misfire_grace_time == 24 * 3600
            await asyncio.sleep(0.05)  # let the scheduler process its jobs once
        finally:
            scheduler.shutdown(wait=False)
    assert missed == []
    assert slack_fake.messages("C1") == []
    notes = [r for r in caplog.records if r.name == "bot.jobs.recap" and "missed" in r.getMessage()]
    assert [r.levelno for r in notes] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_recap_job_adds_one_cron_job_in_the_configured_zone() -> None:
    s = make_settings()
    scheduler = AsyncIOScheduler(timezone=UTC)
    now = MONDAY_0900 + timedelta(hours=3)

    add = recap_job(s, None, None, None, clock=lambda: now)  # type: ignore[arg-type]
    add(scheduler)
    add(scheduler)  # twice (a reload): still one job
    scheduler.start(paused=True)  # paused: jobs are added, nothing runs
    try:
        jobs = scheduler.get_jobs()
        assert [j.id for j in jobs] == [RECAP_JOB_ID]
        job = jobs[0]
        # Due at the run this process missed three hours ago (within the grace).
        assert job.next_run_time == MONDAY_0900
        assert str(job.trigger.timezone) == "Europe/Berlin"
        assert (job.coalesce, job.max_instances) == (True, 1)
    finally:
        scheduler.shutdown(wait=False)


async def test_the_sweep_finishes_the_recaps_a_dead_clock_left(
    filled: Store, settings: Settings, slack_fake: SlackFake, deliverers: Deliverers
) -> None:
    """A recap job runs once at its time: what a clock killed mid fan-out left (a row it
    planned, one it claimed whose post landed) is the recovery sweep's, once; a past week's
    orphan is not posted late."""
    for channel in ("C1", "C2"):
        backdate(filled, channel, datetime(2026, 10, 1, tzinfo=UTC))
    seed_row(filled, "C1", key="2026-W41", team=TEAM, kind="recap", state="pending")
    seed_row(filled, "C2", key="2026-W41", team=TEAM, kind="recap")
    seed_row(filled, "C2", key="2026-W40", team=TEAM, kind="recap", state="pending")
    outbox = slack_outbox(slack_fake)
    deliverers.outboxes.append(outbox)
    await outbox.post("C2", {"text": "W41"}, metadata=metadata_for("2026-W41", "recap", "digest"))
    d = deliverer(deliverers, filled, slack_fake)
    sweeper = Sweeper(
        settings,
        filled,
        d,
        Renderer(tz=settings.tz),
        clock=lambda: MONDAY_0900 + timedelta(minutes=5),
    )

    report = await sweeper.sweep()

    assert [i[1:] for i in report.posted] == [("C1", "recap", "2026-W41")]
    assert [i[1:] for i in report.recovered] == [("C2", "recap", "2026-W41")]
    calls = len(slack_fake.calls)
    assert (await sweeper.sweep()).posted == [] and len(slack_fake.calls) == calls
    for channel in ("C1", "C2"):
        assert copies(slack_fake, channel, "2026-W41") == 1
    assert copies(slack_fake, "C2", "2026-W40") == 0
    rows = {(r.channel_id, r.key): r.state for r in Ledger.for_store(filled).all_rows()}
    assert rows == {
        ("C1", "2026-W41"): "posted",
        ("C2", "2026-W41"): "posted",
        ("C2", "2026-W40"): "pending",
    }
