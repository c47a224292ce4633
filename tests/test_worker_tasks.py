"""The job queue's tasks in this process (``bot.jobs.tasks``), on PostgreSQL: a worker of
the real procrastinate app run until the queue is empty, the Slack fake and the feed server
real HTTP on 127.0.0.1.

What they prove: dispatch defers one poll per due show and never a second; a poll fans its
digests out as one job per workspace batch whose rows are ``pending`` under that job; any
worker delivers them, each channel once; a job whose worker died is run again by the
recovery, finds its own ``posting`` rows and posts nothing twice; rows a clock left before
the upgrade are delivered once; the daily digests and the weekly recap go through jobs too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from procrastinate import App
from procrastinate.exceptions import AlreadyEnqueued

from bot.delivery.items import Delivery
from bot.jobs import fanout, tasks
from bot.jobs.plan import in_date_order
from bot.jobs.queue import make_app
from bot.jobs.worker import Runtime
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from digests.sources.added_feeds import pretend_public
from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow, NewRow
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item, slack_outbox
from tests.slackfake import SlackFake

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL"
    ),
    pytest.mark.parametrize("db_url", ["postgresql"], indirect=True),
]

KEY = "PyTorch:pytorch-2026-10-03"
TEAMS = ["T0ONE", "T0TWO", "T0THREE"]


def settings_for(db_url: str, feed_url: str, **kw: Any) -> Settings:
    kw.setdefault("schedule", ScheduleConfig(poll_minutes=15, jitter_seconds=0))
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=feed_url, repo="pytorch/pytorch")],
        database_url=db_url,
        slack_post_interval=0,
        team_posts_per_second=0,
        worker_stalled_seconds=4,
        **kw,
    )


class Queue:
    """The app (its periodic schedule left out: each test defers what it runs) and a
    runtime over the test's store, the Slack fake and the feed client."""

    def __init__(self, app: App, rt: Runtime) -> None:
        self.app, self.rt = app, rt

    async def drain(self, queues: list[str] | None = None) -> None:
        """Run workers until no job of ``queues`` is left to do (a job's own deferrals
        included: a worker that caught up stops before it sees them)."""
        for _ in range(20):
            await self.app.run_worker_async(
                wait=False, concurrency=4, install_signal_handlers=False, queues=queues,
                additional_context={"runtime": self.rt}, fetch_job_polling_interval=0.1,
            )  # fmt: skip
            if not any(
                j["status"] == "todo" and (queues is None or j["queue_name"] in queues)
                for j in self.jobs()
            ):
                return
        raise AssertionError(f"jobs left to do: {self.jobs()}")

    def jobs(self, task: str | None = None) -> list[dict[str, Any]]:
        query = (
            "SELECT id, task_name, queue_name, status, lock, queueing_lock, args"
            " FROM procrastinate_jobs"
        )
        with self.rt.store.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(sa.text(query + " ORDER BY id"))]
        return [r for r in rows if task is None or r["task_name"] == task]

    def rows(self, kind: str = "episode") -> list[LedgerRow]:
        return [r for r in Ledger.for_store(self.rt.store).all_rows() if r.kind == kind]


@pytest.fixture
async def queue(
    db_url: str, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> AsyncIterator[Queue]:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    settings = settings_for(db_url, url)
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    async with open_queue(settings, store, slack_fake) as q:
        yield q


@contextlib.asynccontextmanager
async def open_queue(
    settings: Settings, store: Store, slack_fake: SlackFake
) -> AsyncIterator[Queue]:
    """The app opened over ``settings`` (its periodic schedule left out) and its runtime."""
    app = make_app(settings)
    app.periodic_registry.periodic_tasks.clear()
    outbox = slack_outbox(slack_fake)
    async with httpx.AsyncClient(timeout=5.0) as http, app.open_async():
        rt = Runtime.of(settings, store, outbox, http)
        yield Queue(app, rt)
        await rt.aclose()
    await outbox.close()


def subscribe(store: Store, per_team: int) -> list[tuple[str, str]]:
    channels = []
    for t, team in enumerate(TEAMS):
        for n in range(per_team):
            channel = f"C{t}{n:04d}"
            store.subscribe(team, channel, "PyTorch", recap=False)
            channels.append((team, channel))
    return channels


async def test_dispatch_defers_one_poll_per_due_show_and_never_a_second(queue: Queue) -> None:
    poll_due = queue.app.tasks["dispatch"]
    await poll_due.defer_async(timestamp=0)
    await poll_due.defer_async(timestamp=1)
    # Only the dispatch jobs run (the polls they defer wait in their own queue).
    await queue.drain(["periodic"])
    polls = queue.jobs("poll")
    assert len(polls) == 1
    assert polls[0]["queueing_lock"] == polls[0]["lock"] == "poll:PyTorch"
    assert polls[0]["args"] == {"show": "PyTorch"} and polls[0]["status"] == "todo"


async def test_dispatch_skips_a_show_whose_poll_runs_and_defers_the_rest_in_batches(
    queue: Queue, feed_server: FeedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poll still running (its show's next poll not yet stored) gets no second one behind
    it; the others go in batches, and a round that large refreshes the queue's statistics."""
    shows = [
        ShowConfig(name=f"Show{n}", feed=feed_server.route(f"/s{n}.xml", rss(rss_item(1))))
        for n in range(5)
    ]
    settings = queue.rt.settings
    queue.rt.settings = settings.model_copy(update={"shows": [*settings.shows, *shows]})
    await poll_job(queue)
    await stall(queue, queue.jobs("poll")[0]["id"])  # PyTorch's poll: running
    monkeypatch.setattr(tasks, "ANALYZE_AFTER", 5)
    monkeypatch.setattr(tasks, "DEFER_BATCH", 2)  # shows read and deferred two at a time
    # ANALYZE sets the row count the planner reads (transactional, unlike pg_stat's).
    table = "oid = 'procrastinate_jobs'::regclass"
    counted = sa.text(f"SELECT reltuples FROM pg_class WHERE {table}")
    with queue.rt.store.engine.begin() as conn:  # as never analysed
        conn.execute(sa.text(f"UPDATE pg_class SET reltuples = -1 WHERE {table}"))
    await queue.app.tasks["dispatch"].defer_async(timestamp=0)
    await queue.drain(["periodic"])
    polls = queue.jobs("poll")
    assert sorted(p["args"]["show"] for p in polls) == ["PyTorch", *(s.name for s in shows)]
    assert [p["status"] for p in polls if p["args"]["show"] == "PyTorch"] == ["doing"]
    assert all(p["lock"] == p["queueing_lock"] == f"poll:{p['args']['show']}" for p in polls)
    with queue.rt.store.engine.connect() as conn:
        assert conn.execute(counted).scalar_one() >= len(shows) + 1


async def test_a_poll_fans_out_per_team_and_each_channel_gets_one_digest(
    queue: Queue, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    channels = subscribe(store, per_team=5)
    await queue.app.tasks["poll"].defer_async(show="PyTorch")
    await queue.drain()

    copies = {c: keys_in(slack_fake.messages(c)).count(KEY) for _, c in channels}
    assert copies == dict.fromkeys([c for _, c in channels], 1)
    delivers = queue.jobs("deliver")
    # One job per workspace, each under the workspace's lock, all done.
    assert sorted(j["args"]["team"] for j in delivers) == sorted(TEAMS)
    assert {j["lock"] for j in delivers} == {f"team:{t}" for t in TEAMS}
    assert {j["status"] for j in delivers} == {"succeeded"}
    rows = queue.rows()
    assert {r.state for r in rows} == {"posted"} and len(rows) == len(channels)
    # Each row was delivered by the job of its own team.
    job_of = {j["args"]["team"]: f"job:{j['id']}" for j in delivers}
    assert all(r.owner == job_of[r.team_id] for r in rows)
    assert len(feed_server.requests_to("/feed.xml")) == 1


async def test_a_show_added_from_slack_is_polled_by_its_job_and_a_removed_one_is_not(
    queue: Queue, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    """A poll job names its show; one added from Slack (not in the config file) is read
    from the store, fetched under the added-feed guard, and posted to its channel."""
    url = feed_server.route("/jax.xml", rss(rss_item(5)), etag='"j1"')
    now = datetime.now(UTC)
    store.add_show(TEAMS[0], "JAX", url, "jax-ml/jax", added_by="U1", now=now, limit=5)
    store.subscribe(TEAMS[0], "C0JAX", "JAX", recap=False)
    with pretend_public("127.0.0.1", feed_server.port):
        await queue.app.tasks["poll"].defer_async(show="JAX")
        await queue.app.tasks["poll"].defer_async(show="Gone")  # removed meanwhile
        await queue.drain()
    assert len(feed_server.requests_to("/jax.xml")) == 1
    assert [k.split(":")[0] for k in keys_in(slack_fake.messages("C0JAX"))] == ["JAX"]
    polls = {j["args"]["show"]: j["status"] for j in queue.jobs("poll")}
    assert polls == {"JAX": "succeeded", "Gone": "succeeded"}
    assert not feed_server.requests_to("/feed.xml")  # PyTorch was not polled


async def test_a_polls_news_is_planned_by_one_job_per_workspace(
    queue: Queue, store: Store, slack_fake: SlackFake
) -> None:
    """The poll leaves the plan to the workspaces' jobs: they exist before any ledger row,
    each names the poll's news, and a workspace with no channel left gets none."""
    subscribe(store, per_team=2)
    store.unsubscribe(TEAMS[2], "C20000", "PyTorch")
    store.unsubscribe(TEAMS[2], "C20001", "PyTorch")
    await queue.app.tasks["poll"].defer_async(show="PyTorch")
    await queue.drain(["poll"])
    delivers = queue.jobs("deliver")
    assert sorted(j["args"]["team"] for j in delivers) == sorted(TEAMS[:2])
    assert all("keys" not in j["args"] and j["status"] == "todo" for j in delivers)
    assert {g for j in delivers for g in j["args"]["guids"]} == {
        "pytorch-2026-10-03", "pytorch-2026-10-02"
    }  # fmt: skip
    assert queue.rows() == []
    await queue.drain()
    rows = queue.rows()
    assert len(rows) == 2 * 2 and {r.state for r in rows} == {"posted"}
    # Each channel got the newest episode (a first poll's backfill: one).
    assert keys_in(slack_fake.messages("C00001")) == [KEY]
    assert not slack_fake.messages("C20000")


# More episodes than a plan reads (the newest 25), then one dated before all of them.
ARCHIVE_DAYS = list(range(30, 2, -1))
LATE = "PyTorch:pytorch-2026-10-01"


@contextlib.asynccontextmanager
async def polled_archive(
    db_url: str, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> AsyncIterator[Queue]:
    """A queue over a feed of ``ARCHIVE_DAYS`` episodes, polled and posted to C0LATE."""
    url = feed_server.route("/feed.xml", rss(*(rss_item(d) for d in ARCHIVE_DAYS)), etag='"v1"')
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    store.subscribe(TEAMS[0], "C0LATE", "PyTorch", recap=False)
    async with open_queue(settings_for(db_url, url), store, slack_fake) as queue:
        await queue.app.tasks["poll"].defer_async(show="PyTorch")
        await queue.drain()
        yield queue


async def a_late_episode_arrives(queue: Queue, feed_server: FeedServer) -> None:
    """The feed gains an episode dated before every other (``LATE``); its poll deferred."""
    feed = rss(*(rss_item(d) for d in [*ARCHIVE_DAYS, 1]))
    feed_server.route("/feed.xml", feed, etag='"v2"')
    store = queue.rt.store
    state = store.poll_state("PyTorch")[0]
    store.save_fetch_state("PyTorch", dataclasses.replace(state, next_poll_at=None))
    await queue.app.tasks["poll"].defer_async(show="PyTorch")


async def test_a_late_backdated_episode_is_planned_by_the_workspaces_jobs(
    db_url: str, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    """An episode that arrives dated before the newest a plan reads is still news: the
    poll hands its guid to the jobs, which plan over it (as `run` does)."""
    async with polled_archive(db_url, store, slack_fake, feed_server) as queue:
        before = keys_in(slack_fake.messages("C0LATE"))
        await a_late_episode_arrives(queue, feed_server)
        await queue.drain()
    assert keys_in(slack_fake.messages("C0LATE")) == [*before, LATE]


async def test_a_late_episode_whose_job_failed_for_good_is_recovered_not_passed_over(
    db_url: str, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    """The late episode's workspace job recorded its row and then failed on every try (Slack
    down for the channel): the recovery hands the row to a job naming it, which plans over
    it whatever its date, and posts it once (it was passed over: its rebuild read the
    newest episodes only)."""
    async with polled_archive(db_url, store, slack_fake, feed_server) as queue:
        before = keys_in(slack_fake.messages("C0LATE"))
        await a_late_episode_arrives(queue, feed_server)
        await queue.drain(["poll"])
        (job,) = [j for j in queue.jobs("deliver") if j["status"] == "todo"]
        # As the job leaves it after its last try: its row pending, the job failed.
        ledger = queue.rt.deliverer.ledger
        row = NewRow(TEAMS[0], "C0LATE", "episode", LATE, "old-hash", "PyTorch")
        owner = f"job:{job['id']}"
        ledger.run(lambda c: ledger.ensure(c, [row], datetime.now(UTC), owner))
        with store.engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = :i"),
                {"i": job["id"]},
            )
        await queue.app.tasks["recover"].defer_async(timestamp=0)
        await queue.drain()
        rows = [r for r in queue.rows() if r.key == LATE]
    assert keys_in(slack_fake.messages("C0LATE")) == [*before, LATE]
    assert [(r.state, bool(r.ts)) for r in rows] == [("posted", True)]


async def test_why_says_on_its_way_while_the_workspaces_job_waits(
    queue: Queue, store: Store, slack_fake: SlackFake
) -> None:
    """Between the poll and its workspace's job (queued behind the workspace's other jobs)
    a new episode has no ledger row yet: `why` says it is on its way, not passed over."""
    from tests.fixtures.app import CHANNEL, TEAM, make_settings
    from tests.fixtures.control import Clock, app_with_clock, reply_lines

    store.subscribe(TEAM, CHANNEL, "PyTorch", recap=False)
    await queue.app.tasks["poll"].defer_async(show="PyTorch")
    await queue.drain(["poll"])  # the workspace's job waits
    settings = make_settings(
        slack_fake.api_url, slack_fake.token, shows=queue.rt.settings.shows,
        database_url=queue.rt.settings.database_url,
    )  # fmt: skip
    link = "why <https://example.test/pytorch/2026-10-03>"
    with app_with_clock(settings, store, slack_fake, Clock(datetime.now(UTC))) as sender:
        waiting = reply_lines(sender.slash(link).json())[0].split("\n")[-1]
        await queue.drain()
        done = reply_lines(sender.slash(link).json())[0].split("\n")[-1]
    assert waiting == "Planned for this channel and being posted; it should appear within minutes."
    assert done.startswith("Posted here.")
    assert keys_in(slack_fake.messages(CHANNEL)) == [KEY]


async def fanned_out(queue: Queue) -> list[Delivery]:
    """The poll's episodes stored, and their digests fanned out as every plan but a poll's
    news hands them over (an unchanged poll's, an edit's, the recovery's): ``deliver`` jobs
    naming their items. The poll's own jobs, each planning its workspace, are cancelled."""
    await queue.app.tasks["poll"].defer_async(show="PyTorch")
    await queue.drain(["poll"])
    for job in queue.jobs("deliver"):
        await queue.app.job_manager.cancel_job_by_id_async(job["id"])
    planned = (tasks.planned(queue.rt, team, "PyTorch", ()) for team in TEAMS)
    items = in_date_order(i for team_items in planned for i in team_items)
    await fanout.fan_out(queue.app, queue.rt, items)
    return items


def keyed(queue: Queue) -> list[dict[str, Any]]:
    return [j for j in queue.jobs("deliver") if "keys" in j["args"]]


async def test_fan_out_records_pending_rows_under_the_job_and_defers_nothing_twice(
    queue: Queue, store: Store
) -> None:
    channels = subscribe(store, per_team=3)
    await fanned_out(queue)
    delivers = keyed(queue)
    assert len(delivers) == len(TEAMS) and {j["status"] for j in delivers} == {"todo"}
    rows = queue.rows()
    assert len(rows) == len(channels) and {r.state for r in rows} == {"pending"}
    job_of = {j["args"]["team"]: f"job:{j['id']}" for j in delivers}
    assert all(r.owner == job_of[r.team_id] for r in rows)
    # The same items again (a plan run once more): their rows are held by live jobs.
    items = tasks.rebuild(
        queue.rt, TEAMS[0], "episode", "PyTorch", {r.ident for r in rows if r.team_id == TEAMS[0]}
    )
    assert len(items) == 3
    await fanout.fan_out(queue.app, queue.rt, items)
    assert len(keyed(queue)) == len(TEAMS)


async def stall(queue: Queue, job_id: int) -> None:
    """The job as a SIGKILLed worker leaves it: doing, its worker gone."""
    with queue.rt.store.engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE procrastinate_jobs SET status = 'doing', worker_id = NULL WHERE id = :i"
            ),
            {"i": job_id},
        )


async def test_a_stalled_job_runs_again_and_recovers_its_own_posting_rows(
    queue: Queue, store: Store, slack_fake: SlackFake
) -> None:
    channels = subscribe(store, per_team=4)
    await queue.app.tasks["poll"].defer_async(show="PyTorch")
    await queue.drain()
    first = {c: keys_in(slack_fake.messages(c)).count(KEY) for _, c in channels}
    assert set(first.values()) == {1}
    # The worker died after its posts landed and before it recorded them: rows posting.
    job = next(j for j in queue.jobs("deliver") if j["args"]["team"] == TEAMS[1])
    with store.engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE deliveries SET state = 'posting', ts = NULL, thread_ts = NULL"
                " WHERE team_id = :t"
            ),
            {"t": TEAMS[1]},
        )
    await stall(queue, job["id"])
    await queue.app.tasks["recover"].defer_async(timestamp=0)
    await queue.drain()

    assert {c: keys_in(slack_fake.messages(c)).count(KEY) for _, c in channels} == first
    after = {j["id"]: j["status"] for j in queue.jobs("deliver")}
    assert after[job["id"]] == "succeeded"
    rows = queue.rows()
    assert {r.state for r in rows} == {"posted"}
    assert all(r.ts for r in rows if r.team_id == TEAMS[1])


async def test_rows_a_clock_left_before_the_upgrade_are_delivered_once(
    queue: Queue, store: Store, slack_fake: SlackFake
) -> None:
    """The upgrade: a clock (owner ``host:pid:tag``, gone) left rows pending and one posting
    whose post had landed; the workers' recovery delivers each channel once."""
    channels = subscribe(store, per_team=2)
    await fanned_out(queue)
    # As the clock left them: its own rows, no deliver job.
    with store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM procrastinate_jobs WHERE task_name = 'deliver'"))
        conn.execute(sa.text("UPDATE deliveries SET owner = 'gone-host:1:dead'"))
    landed = queue.rows()[0]
    items = tasks.rebuild(queue.rt, landed.team_id, "episode", "PyTorch", {landed.ident})
    clock = queue.rt.deliverer.acting_as("gone-host:1:dead")
    await clock.deliver(items)
    with store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE deliveries SET state = 'posting', ts = NULL WHERE id = :i"),
            {"i": landed.id},
        )
    assert keys_in(slack_fake.messages(landed.channel_id)).count(KEY) == 1

    await queue.app.tasks["recover"].defer_async(timestamp=0)
    await queue.drain()
    copies = {c: keys_in(slack_fake.messages(c)).count(KEY) for _, c in channels}
    assert copies == dict.fromkeys([c for _, c in channels], 1)
    assert {r.state for r in queue.rows()} == {"posted"}


async def test_rows_no_longer_wanted_are_passed_over_not_recovered_for_ever(
    queue: Queue, store: Store, slack_fake: SlackFake
) -> None:
    subscribe(store, per_team=1)
    await fanned_out(queue)
    store.unsubscribe(TEAMS[0], "C00000", "PyTorch")
    await queue.drain()
    rows = [r for r in queue.rows() if r.team_id == TEAMS[0]]
    assert len(rows) == 1
    assert all(r.state == "pending" and str(r.owner).startswith("passed:") for r in rows)
    assert not slack_fake.messages("C00000")
    before = len(queue.jobs("deliver"))
    await queue.app.tasks["recover"].defer_async(timestamp=0)
    await queue.drain()
    assert len(queue.jobs("deliver")) == before
    # Subscribed again: the next plan offers the rows, and they are delivered once.
    store.subscribe(TEAMS[0], "C00000", "PyTorch", recap=False)
    items = tasks.rebuild(queue.rt, TEAMS[0], "episode", "PyTorch", {r.ident for r in rows})
    await fanout.fan_out(queue.app, queue.rt, items)
    await queue.drain()
    assert keys_in(slack_fake.messages("C00000")) == [KEY]


async def test_daily_digests_go_out_through_jobs_once(
    queue: Queue, store: Store, slack_fake: SlackFake
) -> None:
    now = datetime.now(UTC)
    due = (now - timedelta(minutes=2)).strftime("%H:%M")
    for team in TEAMS:
        store.subscribe(team, f"C{team}D", "PyTorch", recap=False, daily_at=due)
    with store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE subscriptions SET created_at = :t"), {"t": now - timedelta(days=1)}
        )
    published = format_datetime(now - timedelta(hours=3), usegmt=True)
    feed = rss(re.sub(r"<pubDate>[^<]*</pubDate>", f"<pubDate>{published}</pubDate>", rss_item(3)))
    store.upsert_episodes(
        build_episodes(parse_bytes(feed, "http://x/feed.xml"), "PyTorch", "pytorch/pytorch"),
        now - timedelta(hours=1),
    )
    await queue.app.tasks["daily"].defer_async(timestamp=0)
    await queue.drain()
    await queue.app.tasks["daily"].defer_async(timestamp=1)
    await queue.drain()
    rows = queue.rows("daily")
    assert len(rows) == len(TEAMS) and {r.state for r in rows} == {"posted"}
    assert Counter(len(slack_fake.messages(f"C{t}D")) for t in TEAMS) == {1: len(TEAMS)}
    assert len(queue.jobs("deliver")) == len(TEAMS)


async def test_the_weekly_recap_goes_out_through_jobs_once(
    db_url: str, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    due = (datetime.now(UTC) - timedelta(minutes=2)).replace(second=0, microsecond=0)
    url = feed_server.route("/feed.xml", rss(), etag='"v1"')
    settings = settings_for(
        db_url, url, quiet_week=True,
        schedule=ScheduleConfig(poll_minutes=15, jitter_seconds=0,
                                recap=due.strftime("%a %H:%M").lower()),
    )  # fmt: skip
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    for team in TEAMS:
        store.subscribe(team, f"C{team}R", "PyTorch")
    with store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE subscriptions SET created_at = :t"), {"t": due - timedelta(days=1)}
        )
    async with open_queue(settings, store, slack_fake) as q:
        for stamp in (0, 1):
            await q.app.tasks["recap"].defer_async(timestamp=stamp)
            await q.drain()
        q.rt.recapped.clear()  # another worker, which has not fanned this week out
        await q.app.tasks["recap"].defer_async(timestamp=2)
        await q.drain()
    rows = q.rows("recap")
    assert len(rows) == len(TEAMS) and {r.state for r in rows} == {"posted"}
    assert [len(slack_fake.messages(f"C{t}R")) for t in TEAMS] == [1] * len(TEAMS)


def test_owners_of_jobs_are_alive_while_the_job_is_to_do_or_doing(store: Store) -> None:
    ledger = Ledger.for_store(store)
    with store.engine.begin() as conn:
        ids = [
            conn.execute(
                sa.text(
                    "INSERT INTO procrastinate_jobs (queue_name, task_name, status)"
                    " VALUES ('deliver', 'deliver', CAST(:s AS procrastinate_job_status))"
                    " RETURNING id"
                ),
                {"s": status},
            ).scalar_one()
            for status in ("todo", "doing", "succeeded", "failed")
        ]
    owners = [f"job:{i}" for i in ids]
    assert ledger.alive([*owners, "job:999999", None]) == set(owners[:2])
    now = datetime.now(UTC)
    ledger.run(
        lambda conn: ledger.ensure(
            conn, [NewRow("T1", "C1", "episode", "k", "h", "S")], now, owners[2]
        )
    )
    assert [r.owner for r in ledger.orphans("", lambda ident: False)] == [owners[2]]


def test_config_channels_are_synced_only_when_the_file_changed(store: Store) -> None:
    from bot.runtime import sync_config_channels_once
    from config.settings import ChannelConfig

    shows = [ShowConfig(name="PyTorch", feed="file:///f.xml", repo="pytorch/pytorch")]
    first = Settings(shows=shows, channels=[ChannelConfig(id="C0A1"), ChannelConfig(id="C0A2")])
    assert sync_config_channels_once(first, store, "T1") == 2
    store.unsubscribe("T1", "C0A1", "PyTorch")  # a tombstone, as /episodes unsubscribe leaves
    assert sync_config_channels_once(first, store, "T1") is None  # same file: no work
    more = first.model_copy(update={"channels": [*first.channels, ChannelConfig(id="C0A3")]})
    assert sync_config_channels_once(more, store, "T1") == 1
    assert sorted(s.channel_id for s in store.subscriptions()) == ["C0A2", "C0A3"]
    assert sync_config_channels_once(more, store, "T2") == 3  # another team: another sync


async def test_the_queue_is_seen_in_digestbot_jobs_and_the_metrics(
    queue: Queue, store: Store, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from bot.ops.queue_metrics import QueueCollector
    from bot.service import print_jobs

    subscribe(store, per_team=2)
    await queue.app.tasks["poll"].defer_async(show="PyTorch")
    await queue.drain(["poll"])  # the deliver jobs wait
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in QueueCollector(store.engine).collect()
        for s in family.samples
    }
    assert samples[("digestbot_queue_jobs", (("queue", "deliver"), ("status", "todo")))] == 3
    assert samples[("digestbot_queue_oldest_job_seconds", (("queue", "deliver"),))] >= 0
    assert samples[("digestbot_queue_workers", ())] == 0

    out = io.StringIO()
    assert print_jobs(queue.rt.settings, out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:4] == ["queue", "todo", "doing", "failed"]
    deliver = next(line.split() for line in lines if line.startswith("deliver"))
    assert deliver[1:4] == ["3", "0", "0"]
    assert lines[-1].startswith("workers: 0; polls due now: 0")


async def test_github_details_come_as_a_job_per_repository_and_edit_the_digests(
    db_url: str, store: Store, slack_fake: SlackFake, feed_server: FeedServer,
    github_fake: Any,
) -> None:  # fmt: skip
    """A poll of a show with a repository defers ``enrich`` (one waiting per repository);
    its PR titles edit the digests posted without them, in place, once per channel."""
    url = feed_server.route("/feed.xml", rss(rss_item(3)), etag='"v1"')
    settings = settings_for(db_url, url, github_api_url=github_fake.api_url)
    for number in (199603, 199703):
        github_fake.add_pr("pytorch/pytorch", number, title=f"Title of {number}")
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    channels = subscribe(store, per_team=2)
    async with open_queue(settings, store, slack_fake) as q:
        app = q.app
        await app.tasks["poll"].defer_async(show="PyTorch")
        await q.drain(["poll", "deliver"])  # the digests, posted without GitHub's titles
        enrich = q.jobs("enrich")
        assert [(j["queueing_lock"], j["status"]) for j in enrich] == [
            ("enrich:pytorch/pytorch", "todo")
        ]
        with pytest.raises(AlreadyEnqueued):  # a second poll's refresh waits in the first
            await (
                app.tasks["enrich"]
                .configure(queueing_lock="enrich:pytorch/pytorch")
                .defer_async(repo="pytorch/pytorch")
            )
        assert not slack_fake.calls_to("chat.update")
        await q.drain()
    assert github_fake.calls
    updated = Counter(c.params["channel"] for c in slack_fake.calls_to("chat.update") if c.ok)
    # Each message of each channel (the digest and its thread reply) edited once.
    assert updated == Counter({c: len(slack_fake.messages(c)) for _, c in channels})
    assert all(len(slack_fake.messages(c)) == 2 for _, c in channels)
    assert {c: keys_in(slack_fake.messages(c)).count(KEY) for _, c in channels} == dict.fromkeys(
        [c for _, c in channels], 1
    )
    assert "Title of 199603" in str(slack_fake.messages(channels[0][1]))


async def poll_job(queue: Queue) -> None:
    """A poll as dispatch defers it (at most one waiting per show)."""
    job = queue.app.tasks["poll"].configure(queueing_lock="poll:PyTorch", lock="poll:PyTorch")
    await job.defer_async(show="PyTorch")


async def test_a_poll_whose_worker_died_is_polled_again_by_the_recovery(
    queue: Queue, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    channels = subscribe(store, per_team=1)
    await poll_job(queue)
    await stall(queue, queue.jobs("poll")[0]["id"])  # its worker was SIGKILLed
    await queue.app.tasks["recover"].defer_async(timestamp=0)
    await queue.drain()
    assert [j["status"] for j in queue.jobs("poll")] == ["succeeded"]
    assert len(feed_server.requests_to("/feed.xml")) == 1
    assert all(keys_in(slack_fake.messages(c)) == [KEY] for _, c in channels)


async def test_a_dead_poll_with_its_next_run_queued_already_ends_as_failed(
    queue: Queue, store: Store, slack_fake: SlackFake, feed_server: FeedServer
) -> None:
    """Dispatch queued the show's next poll while the dead one still looked like running:
    the retry would be a second poll waiting, so the dead one ends and the queued one runs."""
    channels = subscribe(store, per_team=1)
    await poll_job(queue)
    first = queue.jobs("poll")[0]["id"]
    await stall(queue, first)
    await poll_job(queue)  # the next one, waiting behind the lock
    await queue.app.tasks["recover"].defer_async(timestamp=0)
    await queue.drain()
    assert {j["id"]: j["status"] for j in queue.jobs("poll")}[first] == "failed"
    assert sorted(j["status"] for j in queue.jobs("poll")) == ["failed", "succeeded"]
    assert len(feed_server.requests_to("/feed.xml")) == 1
    assert all(keys_in(slack_fake.messages(c)) == [KEY] for _, c in channels)
