"""A weekly recap and a daily digest survive a worker SIGKILLed while posting them.

Two real ``digestbot worker`` processes on one PostgreSQL schema (ported from the two clocks
these tests ran before the job queue), the Slack fake slow enough that a fan-out to 60
channels takes seconds. The victim starts first and fans out the recap (due two minutes
ago: its start-up check) or the daily digest, and delivers it; the survivor starts once the
victim is frozen at a point, runs its own check (which finds the victim's rows held by a
live job), and then the victim is SIGKILLed. The survivor — not a replacement — runs the
victim's job again once its heartbeat is stale and finishes within a deadline: each
channel gets its message exactly once.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow
from digests.store.schema import subscriptions
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import TEAM_ID, SlackFake
from tests.workerprocs import WorkerProcess, wait_for, worker_env

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL"
    ),
    pytest.mark.parametrize("db_url", ["postgresql"], indirect=True),
]

ROOT = Path(__file__).resolve().parents[1]
WORKER = [sys.executable, "-m", "bot", "-v", "worker"]
CHANNELS = 60
# WORKER_STALLED_SECONDS: longer than the victim is frozen before it is killed, so its jobs
# are run again only once it is dead.
STALLED = 10.0
# The stalled interval and the fan-out left: what meets it was the survivor's retry.
DEADLINE = STALLED + 40.0


def write_config(path: Path, feed_url: str, due: datetime) -> Path:
    path.write_text(
        "\n".join(
            [
                'timezone = "UTC"',
                "backfill = 0",
                "quiet_week = true",  # an empty week still gets its recap
                "thread_replies = false",
                "[[shows]]",
                'name = "PyTorch"',
                f'feed = "{feed_url}"',
                'repo = "pytorch/pytorch"',
                "[schedule]",
                "poll_minutes = 60",
                "jitter_seconds = 0",
                f'recap = "{due.strftime("%a %H:%M").lower()}"',
            ]
        )
        + "\n"
    )
    return path


def env_for(db_url: str, config: Path, fake: SlackFake) -> dict[str, str]:
    return worker_env(
        db_url, config, fake.api_url, fake.token,
        SLACK_POST_INTERVAL="1", WORKER_STALLED_SECONDS=str(STALLED), TEAM_POSTS_PER_SECOND="0",
    )  # fmt: skip


def recent_feed(due: datetime) -> bytes:
    """Two episodes published the day the daily digest is due (older ones are archive)."""
    items = []
    for day in (3, 2):
        published = format_datetime(due - timedelta(hours=day), usegmt=True)
        items.append(
            re.sub(r"<pubDate>[^<]*</pubDate>", f"<pubDate>{published}</pubDate>", rss_item(day))
        )
    return rss(*items)


class World:
    """The schema the workers share, seeded as a team would have it, and what to look at."""

    def __init__(self, db_url: str, fake: SlackFake, kind: str) -> None:
        self.store = Store.open(db_url)  # opened before the workers: reading costs a query
        self.fake = fake
        self.kind = kind
        self.channels = [f"C0{kind[:3].upper()}{n:03d}" for n in range(CHANNELS)]

    def rows(self) -> list[LedgerRow]:
        return [r for r in Ledger.for_store(self.store).all_rows() if r.kind == self.kind]

    def copies(self, channel: str) -> int:
        """Top-level messages of this kind in ``channel``."""
        return sum(
            1
            for m in self.fake.messages(channel)
            if not m.get("thread_ts")
            and (m.get("metadata") or {}).get("event_payload", {}).get("kind") == self.kind
        )

    def open_transactions(self) -> int:
        """Sessions of this schema, other than ours, inside a statement or a transaction."""
        query = sa.text(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = current_setting('application_name')"
            " AND pid <> pg_backend_pid() AND state <> 'idle'"
        )
        with self.store.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def landed(self) -> int:
        return sum(1 for c in self.channels if self.copies(c))


def seed(world: World, feed: bytes, feed_url: str, due: datetime) -> None:
    """The channels, subscribed a day before the message was due; for the daily digest,
    two episodes that arrived in its window."""
    store, now = world.store, datetime.now(UTC)
    store.ensure_show("PyTorch", feed_url, "pytorch/pytorch")
    for channel in world.channels:
        if world.kind == "recap":
            store.subscribe(TEAM_ID, channel, "PyTorch")
        else:
            store.subscribe(
                TEAM_ID, channel, "PyTorch", recap=False, daily_at=due.strftime("%H:%M")
            )
    with store.engine.begin() as conn:
        conn.execute(sa.update(subscriptions).values(created_at=now - timedelta(days=1)))
    if world.kind == "daily":
        episodes = build_episodes(parse_bytes(feed, feed_url), "PyTorch", "pytorch/pytorch")
        store.upsert_episodes(episodes, due - timedelta(hours=1))


def freeze(world: World, victim: WorkerProcess) -> None:
    """SIGSTOP the victim where it holds no transaction open: a frozen one would hold the
    survivor's writes to the same rows up until the kill."""
    for _ in range(1000):
        victim.signal(signal.SIGSTOP)
        if not world.open_transactions():
            time.sleep(0.02)  # a statement sent just before the stop may reach it now
            if not world.open_transactions():
                return
        victim.signal(signal.SIGCONT)
        time.sleep(0.002)
    pytest.fail("the victim never stopped outside a transaction")


def unposted(world: World) -> set[int]:
    return {r.id for r in world.rows() if r.state != "posted"}


def owners(world: World) -> set[str]:
    return {r.owner for r in world.rows() if r.owner}


@pytest.mark.parametrize("kind", ["recap", "daily"])
@pytest.mark.parametrize("point", ["before-claiming", "mid-fan-out", "after-last-post"])
def test_a_worker_killed_at_any_point_leaves_each_channel_one_message(
    db_url: str,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    tmp_path: Path,
    workers: list[WorkerProcess],
    kind: str,
    point: str,
) -> None:
    """The victim starts alone and is frozen (SIGSTOP) before any job or mid fan-out; the
    survivor starts and runs its own check, which finds the victim's rows held by a live
    job; then the victim is SIGKILLed there, or let go on and SIGKILLed as soon as its
    last post has landed: what is left is for the survivor to find by itself."""
    due = (datetime.now(UTC) - timedelta(minutes=2)).replace(second=0, microsecond=0)
    # The recap's channels get no episode digests beside it: an empty week is enough.
    feed = recent_feed(due) if kind == "daily" else rss()
    url = feed_server.route("/feed.xml", feed, etag='"v1"')
    world = World(db_url, slack_fake, kind)
    try:
        seed(world, feed, url, due)
        env = env_for(db_url, write_config(tmp_path / "digestbot.toml", url, due), slack_fake)
        # 60 channels, 20 calls at once, half a second each: seconds of fan-out.
        slack_fake.latency = 0.5
        victim = WorkerProcess(env)
        workers.append(victim)
        if point == "before-claiming":
            victim.signal(signal.SIGSTOP)  # before it could run any job
        else:
            landed = wait_for(lambda: world.landed() >= 10, timeout=90)
            freeze(world, victim)
            assert landed, victim.lines[-20:]
            assert unposted(world) and world.landed() < CHANNELS, "the fan-out was over"
        assert all(o.startswith("job:") for o in owners(world))  # the victim's jobs'

        survivor = WorkerProcess(env)
        workers.append(survivor)
        # Its own check has run (procrastinate logs the job's end): the victim's rows are
        # held by a live job, so what is left is the stalled-job recovery's.
        reported = f"Job {kind}["
        assert wait_for(
            lambda: any(reported in line and "ended" in line for line in survivor.lines),
            timeout=90,
        ), survivor.lines[-20:]
        if point == "after-last-post":
            victim.signal(signal.SIGCONT)
            assert wait_for(lambda: world.landed() == CHANNELS, timeout=60)
        victim.signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        unfinished = unposted(world)
        killed = time.monotonic()
        assert survivor.proc.poll() is None

        assert wait_for(
            lambda: world.landed() == CHANNELS and {r.state for r in world.rows()} == {"posted"},
            timeout=DEADLINE,
        ), ({c: world.copies(c) for c in world.channels}, Counter(r.state for r in world.rows()))
        assert time.monotonic() - killed < DEADLINE
        time.sleep(1.5)  # a second sweep or a straggler would double something now
        copies = {c: world.copies(c) for c in world.channels}
        rows = world.rows()
        everyone = owners(world)
    finally:
        world.store.close()
    assert copies == dict.fromkeys(world.channels, 1)
    assert len(rows) == CHANNELS and {r.state for r in rows} == {"posted"}
    # What the dead worker left, the survivor finished: those rows' jobs ran on it.
    left = {str(r.owner) for r in rows if r.id in unfinished}
    assert left <= survivor.jobs(), (left, survivor.jobs())
    if point == "before-claiming":
        assert everyone <= survivor.jobs()
