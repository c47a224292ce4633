"""``digestbot worker`` as real processes on one PostgreSQL schema: two workers share a
fan-out to hundreds of channels in several workspaces, one is SIGKILLed mid fan-out, and
what it held runs again on the other within the stalled interval; rows a clock left
pending before the upgrade are delivered once; ``worker`` on SQLite is one line.

The Slack fake and the feed server are real HTTP on 127.0.0.1. Waits poll with deadlines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.slackfake import SlackFake
from tests.workerprocs import WorkerProcess, wait_for, worker_env

ROOT = Path(__file__).resolve().parents[1]
WORKER = [sys.executable, "-m", "bot", "-v", "worker"]
NEWER, OLDER = "PyTorch:pytorch-2026-10-03", "PyTorch:pytorch-2026-10-02"
TEAMS = ["T0ALPHA", "T0BETA", "T0GAMMA"]
STALLED = 4.0  # WORKER_STALLED_SECONDS for these tests: a killed worker's jobs move on

postgres_only = [
    pytest.mark.skipif(
        not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL"
    ),
    pytest.mark.parametrize("db_url", ["postgresql"], indirect=True),
]


def write_config(path: Path, feed_url: str) -> Path:
    lines = [
        'timezone = "UTC"',
        "backfill = 2",  # two digests a channel: their order is checked
        "thread_replies = false",
        "[[shows]]",
        'name = "PyTorch"',
        f'feed = "{feed_url}"',
        'repo = "pytorch/pytorch"',
        "[schedule]",
        "poll_minutes = 60",
        "jitter_seconds = 0",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def env_for(db_url: str, config: Path, fake: SlackFake, **extra: str) -> dict[str, str]:
    return worker_env(
        db_url, config, fake.api_url, fake.token,
        SLACK_POST_INTERVAL="1", WORKER_STALLED_SECONDS=str(STALLED), WORKER_CONCURRENCY="8",
        DELIVERY_CONCURRENCY="20", TEAM_POSTS_PER_SECOND="0", **extra,
    )  # fmt: skip


class World:
    """The schema the workers share, and what to look at."""

    def __init__(self, db_url: str, fake: SlackFake, per_team: int) -> None:
        self.store = Store.open(db_url)  # migrated before the workers start
        self.fake = fake
        self.channels = [(t, f"C{i}{n:04d}") for i, t in enumerate(TEAMS) for n in range(per_team)]

    def seed(self, feed_url: str) -> None:
        self.store.ensure_show("PyTorch", feed_url, "pytorch/pytorch")
        for team, channel in self.channels:
            self.store.subscribe(team, channel, "PyTorch", recap=False)

    def rows(self) -> list[LedgerRow]:
        return [r for r in Ledger.for_store(self.store).all_rows() if r.kind == "episode"]

    def keys(self, channel: str) -> list[str]:
        return keys_in(self.fake.messages(channel))

    def done(self) -> bool:
        return all(len(self.keys(c)) >= 2 for _, c in self.channels)

    def jobs(self) -> list[dict[str, Any]]:
        query = sa.text("SELECT id, task_name, status, worker_id FROM procrastinate_jobs")
        with self.store.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def doing(self) -> set[int]:
        return {
            j["id"] for j in self.jobs() if j["task_name"] == "deliver" and j["status"] == "doing"
        }

    def check_exactly_once_in_order(self) -> None:
        keys = {c: self.keys(c) for _, c in self.channels}
        assert keys == {key: [OLDER, NEWER] for key in keys}
        rows = self.rows()
        assert len(rows) == 2 * len(self.channels) and {r.state for r in rows} == {"posted"}


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
def test_two_workers_deliver_each_channel_once_in_order(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path,
    workers: list[WorkerProcess],
) -> None:  # fmt: skip
    world = World(db_url, slack_fake, per_team=100)
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    try:
        world.seed(url)
        env = env_for(db_url, write_config(tmp_path / "d.toml", url), slack_fake)
        slack_fake.latency = 0.02
        workers += [WorkerProcess(env, "w1"), WorkerProcess(env, "w2")]
        assert wait_for(world.done, timeout=120), (
            Counter(len(world.keys(c)) for _, c in world.channels), workers[0].lines[-20:],
        )  # fmt: skip
        time.sleep(1.0)  # anything doubled would land now
        world.check_exactly_once_in_order()
        deliver_jobs = [j for j in world.jobs() if j["task_name"] == "deliver"]
        assert {j["status"] for j in deliver_jobs} == {"succeeded"}
        assert len(deliver_jobs) == len(TEAMS)
        # Polled once, by one of them.
        assert len(feed_server.requests_to("/feed.xml")) == 1
    finally:
        world.store.close()
    assert [w.stop() for w in workers] == [0, 0], [w.lines[-20:] for w in workers]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
def test_a_worker_killed_mid_fan_out_leaves_each_channel_one_copy(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path,
    workers: list[WorkerProcess],
) -> None:  # fmt: skip
    world = World(db_url, slack_fake, per_team=80)
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    try:
        world.seed(url)
        env = env_for(db_url, write_config(tmp_path / "d.toml", url), slack_fake)
        # 240 channels x 2 posts a second apart, 20 in flight per worker: seconds of fan-out.
        slack_fake.latency = 0.3
        workers += [WorkerProcess(env, "w1"), WorkerProcess(env, "w2")]
        assert wait_for(lambda: sum(len(world.keys(c)) for _, c in world.channels) >= 40, 120)
        doing = world.doing()
        victim = next((w for w in workers if w.delivering() & doing), None)
        assert victim is not None, (doing, [w.delivering() for w in workers])
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        killed = time.monotonic()
        assert not world.done(), "the kill came after the fan-out"
        survivor = next(w for w in workers if w is not victim)
        assert survivor.proc.poll() is None

        # The victim's jobs run again on the survivor once its heartbeat is STALLED old.
        assert wait_for(world.done, timeout=STALLED + 60), Counter(
            len(world.keys(c)) for _, c in world.channels
        )
        finished = time.monotonic() - killed
        time.sleep(1.5)  # a straggler would double something now
        world.check_exactly_once_in_order()
        taken_over = victim.delivering() & survivor.delivering()
        assert taken_over, (victim.delivering(), survivor.delivering())
        assert {j["status"] for j in world.jobs() if j["task_name"] == "deliver"} == {"succeeded"}
    finally:
        world.store.close()
    # Within the stalled interval, plus the fan-out left (seconds at this latency).
    assert finished < STALLED + 45
    assert survivor.stop() == 0, survivor.lines[-20:]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
def test_rows_pending_under_a_clock_are_delivered_once_by_workers(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path,
    workers: list[WorkerProcess],
) -> None:  # fmt: skip
    """The upgrade: a clock of the release before was stopped (or died) mid fan-out; its
    rows are pending or posting under its owner name. Two workers deliver each once."""
    world = World(db_url, slack_fake, per_team=10)
    feed = rss(rss_item(3), rss_item(2))
    url = feed_server.route("/feed.xml", feed, etag='"v1"')
    try:
        world.seed(url)
        env = env_for(db_url, write_config(tmp_path / "d.toml", url), slack_fake)
        # The clock's run: `run --once` on this database, killed mid fan-out (SIGKILL).
        once = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--once"], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        slack_fake.latency = 0.2
        try:
            assert wait_for(lambda: sum(len(world.keys(c)) for _, c in world.channels) >= 5, 60)
        finally:
            once.kill()
            once.wait(timeout=10)
        left = [r for r in world.rows() if r.state != "posted"]
        assert left and all(r.owner and not r.owner.startswith("job:") for r in left)
        slack_fake.latency = 0.0
        workers += [WorkerProcess(env, "w1"), WorkerProcess(env, "w2")]
        assert wait_for(world.done, timeout=90), [w.lines[-10:] for w in workers]
        time.sleep(1.0)
        world.check_exactly_once_in_order()
    finally:
        world.store.close()


def test_worker_on_sqlite_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "SLACK_"))}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'd.sqlite3'}"
    done = subprocess.run(
        [sys.executable, "-m", "bot", "worker"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "worker needs PostgreSQL" in lines[0], done.stderr
    assert not (tmp_path / "d.sqlite3").exists()
