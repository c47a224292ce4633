"""An unchanged feed costs one read and one write per show at most (bot.jobs.poll_state: in a
cycle, one read for every show and one write for every 304), and skipping
its plan changes nothing a poll posts: each test makes the feed answer 304 until the show's
plan has been found quiet, then moves one thing a plan reads and checks the next 304 poll
posts what planning posts. Both databases; statements counted on the store's engine."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import sqlalchemy as sa

from bot.delivery.deliverer import Deliverer
from bot.jobs.cycle import RunReport
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import Episode
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.fixtures.ledger import crash_all
from tests.fixtures.store import pause_channel, resume_channel
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
SHOWS = 4
DATA = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")


def verbs(seen: list[str]) -> Counter[str]:
    return Counter(statement.lstrip().split(None, 1)[0].upper() for statement in seen)


def settings_for(feed_server: FeedServer, shows: int = 1, **kw: Any) -> Settings:
    for n in range(shows):
        feed_server.route(f"/f{n}.xml", rss(rss_item(3), rss_item(2), rss_item(1)), etag='"v1"')
    return Settings(
        shows=[
            ShowConfig(name=f"Show{n}", feed=feed_server.url(f"/f{n}.xml"), repo="pytorch/pytorch")
            for n in range(shows)
        ],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        thread_replies=False,
        **kw,
    )


def subscribe(store: Store, settings: Settings, channel: str, **kw: Any) -> None:
    for show in settings.shows:
        store.ensure_show(show.name, show.feed, show.repo)
        store.subscribe(TEAM, channel, show.name, source="config", **kw)


@contextmanager
def statements(store: Store, rows: list[int] | None = None) -> Iterator[list[str]]:
    """The data statements run on the store's engine (the ledger shares it); ``rows``, if
    given, gets each one's parameter sets (more than one: an executemany)."""
    seen: list[str] = []

    def count(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper()
        if verb in DATA:
            seen.append(statement)
            if rows is not None:
                rows.append(len(params) if many else 1)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)


async def poll(
    settings: Settings, store: Store, http: httpx.AsyncClient, deliverer: Deliverer, hour: int
) -> RunReport:
    when = NOW + timedelta(hours=hour)
    return await run_once(settings, store, deliverer.outbox, http, when, deliverer=deliverer)


async def until_quiet(
    settings: Settings, store: Store, http: httpx.AsyncClient, deliverer: Deliverer
) -> None:
    """Polls until every show's plan has found nothing due (the feed answering 304)."""
    for hour in range(3):
        report = await poll(settings, store, http, deliverer, hour)
        assert not report.errors
    assert {p.status for p in report.polls} == {"not_modified"}
    assert report.due == 0


async def test_a_304_cycle_costs_one_read_and_one_write_per_show(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server, SHOWS)
    subscribe(store, settings, "C1")
    subscribe(store, settings, "C2", keywords=("nothing-matches",))
    await until_quiet(settings, store, http, deliverer)
    posted = len(slack_fake.calls_to("chat.postMessage"))
    assert posted == SHOWS  # each show's newest, in C1

    rows: list[int] = []
    with statements(store, rows) as seen:
        report = await poll(settings, store, http, deliverer, 5)
    assert {p.status for p in report.polls} == {"not_modified"}
    assert report.due == 0 and len(slack_fake.calls_to("chat.postMessage")) == posted
    # Per cycle: every show's fetch state with its plan inputs (one statement), the shows
    # with ledger rows still owed and the shows added from Slack; then every show's new
    # fetch state, one executemany. Nothing of episodes, subscriptions or the ledger's rows.
    counted = verbs(seen)
    assert set(counted) == {"SELECT", "UPDATE"} and counted["UPDATE"] == 1, seen
    assert counted["SELECT"] <= 3, seen
    assert [n for q, n in zip(seen, rows, strict=True) if q.startswith("UPDATE")] == [SHOWS]
    assert not [q for q in seen if "FROM subscriptions" in q or "deliveries.key" in q], seen


async def test_a_new_subscription_gets_its_backfill_from_an_unchanged_feed(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server)
    subscribe(store, settings, "C1")
    await until_quiet(settings, store, http, deliverer)

    subscribe(store, settings, "C2")
    report = await poll(settings, store, http, deliverer, 5)
    assert report.polls[0].status == "not_modified"
    assert keys_in(slack_fake.messages("C2")) == ["Show0:pytorch-2026-10-03"]
    assert len(keys_in(slack_fake.messages("C1"))) == 1


async def test_a_replaced_filter_is_planned_again(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server)
    subscribe(store, settings, "C1", keywords=("nothing-matches",))
    await until_quiet(settings, store, http, deliverer)
    assert slack_fake.messages("C1") == []

    subscribe(store, settings, "C1", keywords=("day",))
    await poll(settings, store, http, deliverer, 5)
    assert keys_in(slack_fake.messages("C1")) == ["Show0:pytorch-2026-10-03"]


async def test_a_resumed_channel_is_planned_again(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server)
    subscribe(store, settings, "C1")
    pause_channel(store, TEAM, "C1", "channel_not_found", NOW)
    await until_quiet(settings, store, http, deliverer)
    assert slack_fake.messages("C1") == []

    assert resume_channel(store, TEAM, "C1") == 1  # by hand, as an operator would
    await poll(settings, store, http, deliverer, 5)
    assert keys_in(slack_fake.messages("C1")) == ["Show0:pytorch-2026-10-03"]


async def test_a_delivery_left_posting_is_recovered_by_the_next_unchanged_poll(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server)
    subscribe(store, settings, "C1")
    await until_quiet(settings, store, http, deliverer)
    crash_all(store)  # the row as a crash mid-post leaves it: posting, its owner gone

    report = await poll(settings, store, http, deliverer, 5)
    assert report.due == 1 and report.polls[0].status == "not_modified"
    assert len(report.delivery.recovered) == 1  # found in the channel, not posted again
    assert keys_in(slack_fake.messages("C1")) == ["Show0:pytorch-2026-10-03"]


async def test_an_episode_another_process_stored_is_posted_by_the_next_unchanged_poll(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server)
    subscribe(store, settings, "C1")
    await until_quiet(settings, store, http, deliverer)
    stored = store.recent(1, ["Show0"])[0]
    later = stored.published_at + timedelta(days=1)
    newer = Episode(**{**stored.model_dump(), "guid": "pytorch-2026-10-04", "published_at": later})
    store.upsert_episodes([newer], NOW + timedelta(hours=4))

    report = await poll(settings, store, http, deliverer, 5)
    assert report.polls[0].status == "not_modified"
    assert keys_in(slack_fake.messages("C1")) == [
        "Show0:pytorch-2026-10-03",
        "Show0:pytorch-2026-10-04",
    ]


async def test_an_unchanged_200_is_as_quiet_as_a_304(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:  # fmt: skip
    settings = settings_for(feed_server)
    feed_server.route("/f0.xml", rss(rss_item(3), rss_item(2), rss_item(1)))  # no validators
    subscribe(store, settings, "C1")
    for hour in range(3):
        report = await poll(settings, store, http, deliverer, hour)
    assert report.polls[0].status == "ok" and report.polls[0].new == 0

    with statements(store) as seen:
        report = await poll(settings, store, http, deliverer, 5)
    assert report.polls[0].status == "ok" and report.due == 0
    assert verbs(seen)["UPDATE"] == 1, seen  # the fetch state; no plan, no quiet mark again
    assert not [q for q in seen if "FROM subscriptions" in q or "deliveries.key" in q], seen
    assert len(keys_in(slack_fake.messages("C1"))) == 1
