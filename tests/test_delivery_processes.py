"""Exactly once across processes: a ``run --once`` killed mid fan-out, and two workers at once
(``digestbot worker``: on PostgreSQL the job queue replaced the two clocks these tests ran).

The processes are real (``subprocess``), the Slack fake and the feed server are real HTTP on
127.0.0.1, the database is the parametrized SQLite file or PostgreSQL schema.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from bot.delivery.outbox import EVENT_TYPE
from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.slackfake import SlackFake
from tests.workerprocs import WorkerProcess, worker_env

ROOT = Path(__file__).resolve().parents[1]
KEY = "PyTorch:pytorch-2026-10-03"

RUN_ONCE = [sys.executable, "-m", "bot", "run", "--once"]

WORKER = [sys.executable, "-m", "bot", "-v", "worker"]
# A killed worker's jobs run again on another once its heartbeat is this old.
STALLED = "4"


def write_config(path: Path, feed_url: str, channels: list[str]) -> Path:
    lines = [
        'timezone = "UTC"',
        "[[shows]]",
        'name = "PyTorch"',
        f'feed = "{feed_url}"',
        'repo = "pytorch/pytorch"',
    ]
    for channel in channels:
        lines += ["[[channels]]", f'id = "{channel}"', 'shows = ["PyTorch"]', "recap = false"]
    lines += ["[schedule]", "poll_minutes = 60", "jitter_seconds = 0"]
    path.write_text("\n".join(lines) + "\n")
    return path


def env_for(db_url: str, config: Path, fake: SlackFake) -> dict[str, str]:
    # Slack's pace (the test run's default is none): a fan-out the tests kill must still be
    # going on when they kill it.
    return worker_env(db_url, config, fake.api_url, fake.token, SLACK_POST_INTERVAL="1")


def spawn(script: str | list[str], env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        script if isinstance(script, list) else [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate: object, timeout: float = 60.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def expected_replies(feed: bytes) -> int:
    """How many thread replies the newest episode of ``feed`` gets, as the bot renders it."""
    episodes = build_episodes(
        parse_bytes(feed, "http://127.0.0.1/feed.xml"), "PyTorch", "pytorch/pytorch"
    )
    return len(Renderer().thread_reply(episodes[0]))


def thread_shape(fake: SlackFake, channel: str, key: str = KEY) -> tuple[int, list[str]]:
    """(top-level messages carrying ``key``, the parts of the replies under them, sorted)."""
    messages = fake.messages(channel)
    parents = [
        m
        for m in messages
        if not m.get("thread_ts")
        and (m.get("metadata") or {}).get("event_payload", {}).get("key") == key
    ]
    under = {p["ts"] for p in parents}
    parts = sorted(
        str(m["metadata"]["event_payload"]["part"])
        for m in messages
        if m.get("thread_ts") in under
        and (m.get("metadata") or {}).get("event_type") == EVENT_TYPE
        and m["metadata"]["event_payload"]["key"] == key
    )
    return len(parents), parts


def episode_rows(db_url: str) -> list[LedgerRow]:
    store = Store.open(db_url)
    try:
        return [r for r in Ledger.for_store(store).all_rows() if r.kind == "episode"]
    finally:
        store.close()


def top_level_posts(fake: SlackFake) -> int:
    return sum(
        1
        for call in fake.calls_to("chat.postMessage")
        if call.ok and not call.params.get("thread_ts")
    )


def test_run_once_killed_mid_fan_out_then_rerun_leaves_one_copy_each(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path
) -> None:
    channels = [f"C0KILL{n:03d}" for n in range(80)]
    feed = rss(rss_item(3), rss_item(2))
    replies = [f"thread:{n}" for n in range(expected_replies(feed))]
    assert replies
    url = feed_server.route("/feed.xml", feed, etag='"v1"')
    env = env_for(db_url, write_config(tmp_path / "digestbot.toml", url, channels), slack_fake)
    slack_fake.latency = 0.1  # 80 channels x 2 calls / 20 at once: about a second of fan-out

    first = spawn(RUN_ONCE, env)
    try:
        assert wait_for(lambda: top_level_posts(slack_fake) >= 15), first.communicate()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    killed_at = top_level_posts(slack_fake)
    assert killed_at < len(channels), "the kill came after the fan-out finished"
    at_kill = {c: thread_shape(slack_fake, c) for c in channels}
    # Posts are paced a second apart per channel, so the kill finds digests whose replies
    # had not gone out yet: the rerun must add those replies, once.
    assert any(n == 1 and parts != replies for n, parts in at_kill.values())
    unfinished = [r for r in episode_rows(db_url) if r.state != "posted"]
    assert unfinished and {r.state for r in unfinished} <= {"pending", "posting"}

    slack_fake.latency = 0.0
    second = spawn(RUN_ONCE, env)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err

    copies = {c: keys_in(slack_fake.messages(c)).count(KEY) for c in channels}
    assert copies == dict.fromkeys(channels, 1)
    # Exactly one parent and exactly one copy of each reply under it, in every channel.
    assert {c: thread_shape(slack_fake, c) for c in channels} == dict.fromkeys(
        channels, (1, replies)
    )
    assert all(len(slack_fake.messages(c)) == 1 + len(replies) for c in channels)
    rows = episode_rows(db_url)
    assert {r.state for r in rows} == {"posted"} and len(rows) == len(channels)
    summary = re.search(r"(\d+) posted, \d+ updated, (\d+) recovered", out)
    assert summary is not None and "1 feed polled (0 failing)" in out, out
    posted, recovered = int(summary[1]), int(summary[2])
    assert recovered >= 1 and posted + recovered == len(unfinished)


def test_run_once_without_a_token_prints_then_prints_nothing_new(
    db_url: str, feed_server: FeedServer, tmp_path: Path
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    env = dict(os.environ)
    for name in ("SLACK_BOT_TOKEN", "SLACK_API_URL", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"):
        env.pop(name, None)
    env.update(
        DATABASE_URL=db_url,
        DIGESTBOT_CONFIG=str(write_config(tmp_path / "d.toml", url, ["C0PRINT01"])),
        PYTHONPATH=str(ROOT),
    )
    first = subprocess.run(RUN_ONCE, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    second = subprocess.run(
        RUN_ONCE, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert first.stdout.count("would post to #C0PRINT01\n") == 1
    assert "Daily Briefing 3" in first.stdout and "Daily Briefing 2" not in first.stdout
    assert "would post" not in second.stdout
    assert "0 posted" in second.stdout


@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_two_workers_on_postgresql_post_each_digest_once(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path
) -> None:
    channels = [f"C0TWO{n:03d}" for n in range(60)]
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"', delay=0.0)
    env = env_for(db_url, write_config(tmp_path / "digestbot.toml", url, channels), slack_fake)
    slack_fake.latency = 0.05

    stalled = {**env, "WORKER_STALLED_SECONDS": STALLED}
    workers = [WorkerProcess(stalled), WorkerProcess(stalled)]
    try:
        assert wait_for(
            lambda: all(keys_in(slack_fake.messages(c)) for c in channels), timeout=90
        ), [p.lines[-10:] for p in workers]
        time.sleep(0.5)  # anything doubled would land now
    finally:
        codes = [w.stop() for w in workers]
    assert codes == [0, 0], [w.lines[-20:] for w in workers]

    copies = {c: keys_in(slack_fake.messages(c)).count(KEY) for c in channels}
    assert copies == dict.fromkeys(channels, 1)
    assert top_level_posts(slack_fake) == len(channels)
    fetches = feed_server.requests_to("/feed.xml")
    assert 1 <= len(fetches) <= 2


@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_when_one_worker_dies_mid_fan_out_the_other_finishes_it(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path
) -> None:
    """Two workers; the one fanning out is SIGKILLed; its job runs again on the survivor."""
    channels = [f"C0DIE{n:03d}" for n in range(120)]
    feed = rss(rss_item(3), rss_item(2))
    replies = [f"thread:{n}" for n in range(expected_replies(feed))]
    url = feed_server.route("/feed.xml", feed, etag='"v1"', delay=1.5)
    env = env_for(db_url, write_config(tmp_path / "digestbot.toml", url, channels), slack_fake)
    slack_fake.latency = 0.2  # 120 channels x 2 calls / 20 at once, paced: seconds of fan-out
    reader = Store.open(db_url)  # migrated before the workers: a read costs a query

    def ledger_now() -> list[LedgerRow]:
        return [r for r in Ledger.for_store(reader).all_rows() if r.kind == "episode"]

    stalled = {**env, "WORKER_STALLED_SECONDS": STALLED}
    workers = {w.pid: w for w in (WorkerProcess(stalled), WorkerProcess(stalled))}
    try:
        if not wait_for(lambda: top_level_posts(slack_fake) >= 20, timeout=60):
            pytest.fail(f"no fan-out: {[w.lines[-20:] for w in workers.values()]}")
        owners = Counter(r.owner for r in ledger_now() if r.owner and r.state != "posted")
        victim = next(w for w in workers.values() if set(owners) & w.jobs())
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        survivor = next(w for w in workers.values() if w is not victim)
        posted_at_kill = top_level_posts(slack_fake)
        unfinished = [r for r in ledger_now() if r.state != "posted"]
        assert posted_at_kill < len(channels) and unfinished, "the kill came too late"
        assert survivor.proc.poll() is None

        assert wait_for(
            lambda: all(thread_shape(slack_fake, c) == (1, replies) for c in channels),
            timeout=80,
        ), {c: thread_shape(slack_fake, c) for c in channels}
        time.sleep(1.0)  # a second attempt or a straggler would double something now
    finally:
        reader.close()
        codes = {pid: w.stop() for pid, w in workers.items()}
    assert codes[survivor.pid] == 0, survivor.lines[-20:]

    assert {c: thread_shape(slack_fake, c) for c in channels} == dict.fromkeys(
        channels, (1, replies)
    )
    assert top_level_posts(slack_fake) == len(channels)
    rows = episode_rows(db_url)
    assert {r.state for r in rows} == {"posted"} and len(rows) == len(channels)
    # What the dead worker left, the survivor finished: those rows' jobs ran on it.
    left = {r.owner for r in rows if r.id in {u.id for u in unfinished}}
    assert left and left <= survivor.jobs(), (left, survivor.jobs())
    assert 1 <= len(feed_server.requests_to("/feed.xml")) <= 2  # one poll each at most


HOLD_OWNER = """
import time
print("held", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_an_owner_is_alive_exactly_as_long_as_its_process(db_url: str) -> None:
    """A process's rows (``run --once``: ``host:pid:tag``) are left alone while it lives
    and recovered once it is gone; a job's (``job:<id>``) while the job is to do or doing."""
    store = Store.open(db_url)
    ledger = Ledger.for_store(store)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OWNER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    owner = f"{socket.gethostname()}:{holder.pid}:abcd"
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert ledger.owner_alive(owner)
        assert not ledger.owner_alive("never-started:1:0000")
        assert not ledger.owner_alive("job:424242")  # no such job
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        assert wait_for(lambda: not ledger.owner_alive(owner), timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
        store.close()
